// The syntax tree of a CEL expression, as the parser (parser.h) builds it and the checker and
// the interpreter read it. Macros are nodes of their own (kind kMacro), not expanded into
// comprehensions: the interpreter gives each its CEL meaning directly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cel/types.h"
#include "cel/value.h"

namespace devmgr::cel {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kConst,      // constant
    kIdent,      // name
    kSelect,     // operand.name; test_only for has(operand.name); optional for operand.?name
    kIndex,      // operand[args[0]]; optional for operand[?args[0]]
    kCall,       // name(args) or operand.name(args) when operand is set
    kList,       // [args]
    kMap,        // {args[0]: args[1], args[2]: args[3], ...}
    kMacro,      // name is a macro of parser.cc (all, map, sortBy, cel.bind, ...): see below
    kCondition,  // args[0] ? args[1] : args[2]
  };

  Kind kind = Kind::kConst;
  // Where the expression is in the text (0-based), for error messages: where it starts, or for
  // a call, where its arguments open, as cel-go places calls.
  size_t position = 0;
  Value constant;
  std::string name;
  ExprPtr operand;
  std::vector<ExprPtr> args;
  bool test_only = false;
  bool optional = false;
  // kIdent, and kCall without an operand: written with a leading dot (`.device`, `.size(x)`), so
  // naming a global alone, never a comprehension's variable, nor a macro (cel-go keeps the dot
  // in the name, and its errors show it).
  bool root = false;
  // kMacro: `variable` is the iteration variable (or cel.bind's name), operand the range (or
  // cel.bind's value), args the predicate / transform / sort key (map, transformList,
  // transformMap and transformMapEntry with two: filter, then transform). `variable2` is the
  // second variable of a two-variable comprehension (a list's item after its index, a map's
  // value after its key), empty in the others.
  std::string variable;
  std::string variable2;
  // kCall, set by the checker: the indexes in Overloads() of the overloads the arguments' static
  // types allow; the interpreter picks the first that fits the values.
  std::vector<size_t> overloads;
  // Set by the checker: the expression's static type, any free type variable as dyn (what the
  // cost estimate, cost_estimate.h, reads).
  Type type;
};

// GivesValuePerItem: a macro that gives a value for each item (after a filter, when it has two
// arguments): map, sortBy's key, transformList, transformMap, transformMapEntry.
inline bool GivesValuePerItem(const Expr& macro) {
  return macro.name == "map" || macro.name == "sortBy" || macro.name == "transformList" ||
         macro.name == "transformMap" || macro.name == "transformMapEntry";
}

// WrittenName: the name of an identifier or global call as written, its leading dot included.
inline std::string WrittenName(const Expr& e) { return e.root ? "." + e.name : e.name; }

}  // namespace devmgr::cel
