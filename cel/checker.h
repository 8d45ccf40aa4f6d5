// Check: the checker of the CEL subset. It resolves every name (the `device` variable and its
// fields, macro variables, functions of functions.h), infers static types where they are known
// (`dyn` where a device attribute's value is only known at evaluation), records on each call the
// overloads its arguments allow, and refuses, with cel-go's texts, what cannot run: an unknown
// name or field ("undeclared reference to 'f'", "undefined field 'x'"), arguments no overload
// takes ("found no matching overload for 'f' applied to '(int, string)'"; arguments in the places
// of one type parameter must agree: 1 == 1u is refused), and a result that is neither bool nor
// dynamic ("must evaluate to bool or the unknown type, not int"). Before the last, what the
// validators of Kubernetes' environment refuse once cel-go's checker has accepted it: a list or
// map literal whose items differ in type ("expected type 'int' but found 'string'"; within a
// format() call they may), a pattern written out that is not a regular expression ("invalid
// matches argument"), and a format() whose format and arguments, written out, disagree
// (string_format.h).
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
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

// Check annotates `root` (Expr::overloads) or says what is wrong (InvalidArgument): every error
// the checker finds, else every refusal of the validators, sorted by place and displayed against
// `source`, the text `root` was parsed from, as cel-go lists them (error_display.h DisplayErrors).
absl::Status Check(Expr& root, absl::string_view source, const CheckOptions& options);

}  // namespace devmgr::cel
