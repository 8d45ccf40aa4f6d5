// Parse: CEL's grammar (cel-spec's langdef.md) into the syntax tree of ast.h, with the macros
// DRA selectors use recognised: has(), all, exists, exists_one, map, filter and cel.bind.
// Everything else of the language parses too (conditionals, list and map literals, all
// operators, every literal form); what the evaluator does not support is refused by the
// checker, not here.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cel/ast.h"

namespace devmgr::cel {

// The longest expression accepted (Kubernetes' limit for a selector, 10 Ki).
inline constexpr size_t kMaxExpressionLength = 10 * 1024;

// Parse: InvalidArgument for text that is not a CEL expression, or that is longer than
// kMaxExpressionLength, nests more than 100 parentheses or calls deep, or makes a tree more than
// 250 levels deep (a long chain of operators); its message is the error as cel-go displays it
// (error_display.h): "ERROR: <input>:1:5: Syntax error: ..." for what CEL's grammar refuses,
// cel-go's own text for what its parser refuses once the grammar accepted it ("invalid int
// literal", "reserved identifier: if", a macro's arguments). As cel-go's, the parse goes on past
// the latter, and every error is listed, sorted by place (error_display.h DisplayErrors); it
// stops at the first syntax error, where cel-go's parser recovers and may list more.
absl::StatusOr<ExprPtr> Parse(absl::string_view text);

}  // namespace devmgr::cel
