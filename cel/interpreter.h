// Evaluate: a checked expression's value (checker.h), with CEL's semantics: errors are values
// that flow on, except that `false && e` is false and `true || e` is true whatever e is;
// all() is false once one element is false and exists() true once one is true, even when
// another element's predicate failed; exists_one() and the other macros fail with their first
// error. Each step counts in the context's cost; once the limit is passed, or the evaluation is
// interrupted, it stops with the context's StopReason(), which nothing absorbs.
#pragma once

#include "cel/ast.h"
#include "cel/functions.h"
#include "cel/value.h"

namespace devmgr::cel {

// Evaluate with `device` as the variable `device`. Runs on the caller's thread.
Value Evaluate(const Expr& root, const Value& device, EvalContext& context);

}  // namespace devmgr::cel
