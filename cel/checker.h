// Check: the checker of the CEL subset. It resolves every name (the `device` variable and its
// fields, macro variables, functions of functions.h), infers static types where they are known
// (`dyn` where a device attribute's value is only known at evaluation), records on each call the
// overloads its arguments allow, and refuses, with cel-go's texts, what cannot run: an unknown
// name or field ("undeclared reference to 'f'", "undefined field 'x'"), arguments no overload
// takes ("found no matching overload for 'f' applied to '(int, string)'"), and a result that is
// neither bool nor dynamic ("must evaluate to bool or the unknown type, not int").
#pragma once

#include "absl/status/status.h"
#include "cel/ast.h"

namespace devmgr::cel {

struct CheckOptions {
  // Upstream's environment.NewExpressions: only what the enabled features add is allowed.
  // False (StoredExpressions, upstream's default): everything of the current version is.
  bool new_expressions = false;
  // DRAListTypeAttributes: includes().
  bool list_type_attributes = false;
  // DRAConsumableCapacity: device.allowMultipleAllocations.
  bool consumable_capacity = false;
};

// Check annotates `root` (Expr::overloads) or says what is wrong (InvalidArgument).
absl::Status Check(Expr& root, const CheckOptions& options);

}  // namespace devmgr::cel
