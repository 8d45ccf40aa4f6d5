#include "cel/checker.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "cel/error_display.h"
#include "cel/functions.h"
#include "cel/string_format.h"

namespace devmgr::cel {
namespace {

using TK = Type::Kind;

// The `device` variable's fields and their types. An attribute's value is dyn where it may be
// a list (DRAListTypeAttributes), else any, as in upstream's environments.
Type DeviceField(absl::string_view field, const CheckOptions& options) {
  if (field == "driver") return Type::Of(TK::kString);
  if (field == "attributes") {
    const Type value =
        options.new_expressions && !options.list_type_attributes ? Type::Of(TK::kAny) : Type::Dyn();
    return Type::MapOf(Type::Of(TK::kString), Type::MapOf(Type::Of(TK::kString), value));
  }
  if (field == "capacity") {
    return Type::MapOf(Type::Of(TK::kString),
                       Type::MapOf(Type::Of(TK::kString), Type::Of(TK::kQuantity)));
  }
  if (field == "allowMultipleAllocations") return Type::Of(TK::kBool);
  return Type::Dyn();
}

Type TypeOf(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNull:
      return Type::Of(TK::kNull);
    case Value::Kind::kBool:
      return Type::Of(TK::kBool);
    case Value::Kind::kInt:
      return Type::Of(TK::kInt);
    case Value::Kind::kUint:
      return Type::Of(TK::kUint);
    case Value::Kind::kDouble:
      return Type::Of(TK::kDouble);
    case Value::Kind::kString:
      return Type::Of(TK::kString);
    case Value::Kind::kBytes:
      return Type::Of(TK::kBytes);
    case Value::Kind::kType:
      return Type::Of(TK::kType);
    default:
      return Type::Dyn();
  }
}

// Common: the type of values that are `a` or `b` (dyn when they differ).
Type Common(const Type& a, const Type& b) { return a == b ? a : Type::Dyn(); }

// Nullable: null may stand for a value of this type (cel-go's objects and opaque types).
bool Nullable(const Type& type) {
  switch (type.kind) {
    case TK::kNull:
    case TK::kSemver:
    case TK::kQuantity:
    case TK::kIP:
    case TK::kCIDR:
    case TK::kURL:
    case TK::kFormat:
    case TK::kOptional:
    case TK::kDevice:
      return true;
    default:
      return false;
  }
}

// Assignable: a value of type `from` may stand where one of type `to` is expected, as cel-go's
// checker decides where a type parameter is bound: dyn either way, null only for a nullable
// type, else the same type with assignable parameters. So 1 == 1u and "a" == null are refused
// (cel-go's heterogeneous equality is for dyn values only).
bool Assignable(const Type& from, const Type& to) {
  if (from.is_dyn() || to.is_dyn()) return true;
  if (from.kind == TK::kNull) return Nullable(to);
  if (to.kind == TK::kNull) return Nullable(from);
  if (from.kind != to.kind || from.params.size() != to.params.size()) return false;
  for (size_t i = 0; i < from.params.size(); ++i) {
    if (!Assignable(from.params[i], to.params[i])) return false;
  }
  return true;
}

// Bind: `arg` in the place of `param`, the type parameter's type so far in `bound` (the first
// argument in its place sets it; each other must be assignable to it).
bool Bind(const Type& param, const Type& arg, std::optional<Type>& bound) {
  if (param.kind == TK::kParam) {
    if (!bound.has_value()) {
      bound = arg;
      return true;
    }
    return Assignable(arg, *bound);
  }
  if (param.kind != arg.kind) return true;  // dyn: nothing to bind
  for (size_t i = 0; i < param.params.size() && i < arg.params.size(); ++i) {
    if (!Bind(param.params[i], arg.params[i], bound)) return false;
  }
  return true;
}

// Unify: the type of values that are `a` and `b`, two items of one list or map literal
// (elements, keys or values), or nothing when they differ, as cel-go's HomogeneousAggregateLiterals
// validator asks. An empty literal's element type is a free type variable (a type parameter here)
// until an item binds it, as in cel-go's checker: `[[1], []]` and `[[[1]], [[]]]` are alike,
// `[[], [1], ['a']]` is not. Here it stays free through literals, conditions, indexes, filter(),
// optional.of() and value(), list + list, orValue(), and the list functions that keep their
// list's type (`[true ? [] : [1], [2]]`, `[optional.none().value(), 1]`, `[[[]][0], [1]]`);
// cel-go's carries it through every call whose result names a type parameter, where this
// checker's becomes dyn past those (map() and the other macros' results among them).
std::optional<Type> Unify(const Type& a, const Type& b) {
  if (a.kind == TK::kParam) return b;
  if (b.kind == TK::kParam) return a;
  // An error joins anything, the later item's type kept unless the earlier's is dyn (cel-go's
  // mostGeneral): [x, 1] is a list(int), [1, x] a list(!error!).
  if (a.kind == TK::kError || b.kind == TK::kError) {
    return a.kind == TK::kDyn || a.kind == TK::kAny ? a : b;
  }
  if (a.kind != b.kind || a.params.size() != b.params.size()) return std::nullopt;
  Type unified{a.kind, {}};
  for (size_t i = 0; i < a.params.size(); ++i) {
    std::optional<Type> param = Unify(a.params[i], b.params[i]);
    if (!param.has_value()) return std::nullopt;
    unified.params.push_back(*std::move(param));
  }
  return unified;
}

// Settle: `type` with each type variable no item bound as dyn, as cel-go leaves them.
Type Settle(Type type) {
  if (type.kind == TK::kParam) return Type::Dyn();
  for (Type& param : type.params) param = Settle(std::move(param));
  return type;
}

// ContainsError: `type` is, or has as a parameter, the type of an expression refused.
bool ContainsError(const Type& type) {
  return type.kind == TK::kError ||
         std::any_of(type.params.begin(), type.params.end(), ContainsError);
}

// EqualOrLessSpecific: `a` says no more than `b` (cel-go's isEqualOrLessSpecific): dyn or a free
// type variable where `b` is neither, else the same kind with parameters that say no more.
bool EqualOrLessSpecific(const Type& a, const Type& b) {
  const auto open = [](const Type& t) {
    return t.kind == TK::kDyn || t.kind == TK::kAny || t.kind == TK::kParam;
  };
  if (open(a)) return true;
  if (open(b) || a.kind != b.kind || a.params.size() != b.params.size()) return false;
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (!EqualOrLessSpecific(a.params[i], b.params[i])) return false;
  }
  return true;
}

// Bound: the type a type parameter bound to `first` has once `later`, where either is or holds
// an error, stands in its place too: the more general of the two, `first` when neither is
// (cel-go's mostGeneral(later, first)); nothing when neither holds an error or `later` may not
// stand there.
std::optional<Type> Bound(const Type& first, const Type& later) {
  if ((!ContainsError(first) && !ContainsError(later)) || !Assignable(later, first)) {
    return std::nullopt;
  }
  return EqualOrLessSpecific(later, first) ? later : first;
}

// Joined: the type of values that are `a` or `b`, two arguments in the places of one type
// parameter (Bound, when one holds an error), where each may bind the other's free type variables
// (Unify), else their common type once settled (dyn when they differ).
Type Joined(const Type& a, const Type& b) {
  if (std::optional<Type> bound = Bound(a, b); bound.has_value()) return *std::move(bound);
  if (std::optional<Type> unified = Unify(a, b); unified.has_value()) return *std::move(unified);
  return Common(Settle(a), Settle(b));
}

class Checker {
 public:
  explicit Checker(const CheckOptions& options) : options_(options) {}

  // Check: the type of `e`, with any type variable still free as dyn.
  Type Check(Expr& e) { return Settle(Typed(e)); }

  // Typed: the type of `e`, where the element type of an empty literal and the value type of
  // optional.none() stay free (type parameters) through the expressions Unify names, for a
  // literal around them to bind, as cel-go's type variables do.
  Type Typed(Expr& e) {
    Type type = TypedAs(e);
    e.type = Settle(type);
    return type;
  }

  // Refusals: what the check refused, in the order found: cel-go's checker goes on past each
  // error (the expression refused is of the error type, taken as dyn where it is used), so that
  // every mistake is reported once.
  const std::vector<PlacedError>& refusals() const { return refusals_; }

  // Invalid: what cel-go's validators, which run once its checker accepted the expression,
  // refuse: in each list literal its first item whose type differs from the items' before it, in
  // each map literal every key and every value whose type differs (outside format()); a
  // matches() whose first argument is a string written out that is not a regular expression; a
  // format() of a format and a list written out that do not agree; in the order Kubernetes'
  // environment runs its validators (of two refusals at one place, the literal's first).
  std::vector<PlacedError> Invalid() const {
    std::vector<PlacedError> invalid = literal_refusals_;
    invalid.insert(invalid.end(), regex_refusals_.begin(), regex_refusals_.end());
    invalid.insert(invalid.end(), format_refusals_.begin(), format_refusals_.end());
    return invalid;
  }

 private:
  // TypedAs: what Typed gives, before it is noted on `e`.
  Type TypedAs(Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kConst:
        return TypeOf(e.constant);
      case Expr::Kind::kIdent:
        return Ident(e);
      case Expr::Kind::kSelect:
        return Select(e);
      case Expr::Kind::kIndex:
        return Index(e);
      case Expr::Kind::kCall:
        return Call(e);
      case Expr::Kind::kList:
      case Expr::Kind::kMap:
        return Literal(e);
      case Expr::Kind::kMacro:
        return Macro(e);
      case Expr::Kind::kCondition:
        return Condition(e);
    }
    return Type::Dyn();
  }

  // Refuse notes `what` about `e` and gives the type of what is refused.
  Type Refuse(const Expr& e, std::string what) {
    refusals_.push_back({e.position, std::move(what)});
    return Type::Error();
  }

  // Mismatch: cel-go's text for a value of type `found` where one of `expected` is wanted.
  static std::string Mismatch(const Type& expected, const Type& found) {
    return absl::StrCat("expected type '", expected.ToString(), "' but found '", found.ToString(),
                        "'");
  }

  // NoOverload refuses a call of `function` on arguments of `types` (the target first when
  // `member`).
  Type NoOverload(const Expr& e, absl::string_view function, const std::vector<Type>& types,
                  bool member) {
    std::vector<std::string> names;
    for (const Type& type : types) names.push_back(type.ToString());
    std::string applied;
    if (member && !names.empty()) {
      applied = absl::StrCat(names[0], ".(",
                             absl::StrJoin(absl::MakeConstSpan(names).subspan(1), ", "), ")");
    } else {
      applied = absl::StrCat("(", absl::StrJoin(names, ", "), ")");
    }
    return Refuse(e, absl::StrCat("found no matching overload for '", function, "' applied to '",
                                  applied, "'"));
  }

  // Condition: _?_:_, (bool, A, A) -> A in cel-go: the branches' types must agree.
  Type Condition(Expr& e) {
    const Type condition = Check(*e.args[0]);
    const Type then = Typed(*e.args[1]);
    const Type otherwise = Typed(*e.args[2]);
    if (!Type::Of(TK::kBool).Accepts(condition)) {
      return NoOverload(e, "_?_:_", {condition, Settle(then), Settle(otherwise)}, false);
    }
    if (std::optional<Type> bound = Bound(then, otherwise); bound.has_value()) {
      return *std::move(bound);
    }
    if (std::optional<Type> unified = Unify(then, otherwise); unified.has_value()) {
      return *std::move(unified);
    }
    const Type then_type = Settle(then);
    const Type otherwise_type = Settle(otherwise);
    if (!Assignable(otherwise_type, then_type)) {
      return NoOverload(e, "_?_:_", {condition, then_type, otherwise_type}, false);
    }
    return Common(then_type, otherwise_type);
  }

  Type Ident(Expr& e) {
    for (auto it = scope_.rbegin(); it != scope_.rend() && !e.root; ++it) {
      if (it->first == e.name) return it->second;
    }
    if (e.name == "device") return Type::Of(TK::kDevice);
    if (const char* type = TypeDenotation(e.name); type != nullptr) return TypeConstant(e, type);
    return Refuse(e,
                  absl::StrCat("undeclared reference to '", WrittenName(e), "' (in container '')"));
  }

  // TypeConstant: `e`, a type's name written out, becomes the type value it denotes.
  static Type TypeConstant(Expr& e, const char* type) {
    e.kind = Expr::Kind::kConst;
    e.constant = Value::TypeOf(type);
    e.operand = nullptr;
    return Type::Of(TK::kType);
  }

  bool InScope(const std::string& name) const {
    return std::any_of(scope_.begin(), scope_.end(),
                       [&name](const auto& variable) { return variable.first == name; });
  }

  Type Select(Expr& e) {
    // A qualified type name (net.IP) where its first part is no variable.
    if (e.operand->kind == Expr::Kind::kIdent && !e.test_only && !e.optional &&
        (e.operand->root || !InScope(e.operand->name)) && e.operand->name != "device") {
      const char* type = TypeDenotation(absl::StrCat(e.operand->name, ".", e.name));
      if (type != nullptr) return TypeConstant(e, type);
    }
    Type target = Check(*e.operand);
    const bool optional_operand = target.kind == TK::kOptional;
    if (optional_operand) target = target.params[0];
    Type field;
    switch (target.kind) {
      case TK::kDevice: {
        const bool known = e.name == "driver" || e.name == "attributes" || e.name == "capacity" ||
                           (e.name == "allowMultipleAllocations" &&
                            (!options_.new_expressions || options_.consumable_capacity));
        field = known ? DeviceField(e.name, options_)
                      : Refuse(e, absl::StrCat("undefined field '", e.name, "'"));
        break;
      }
      case TK::kMap:  // of any key type: its value type, as in cel-go
        field = target.params[1];
        break;
      case TK::kDyn:
      case TK::kAny:
      case TK::kError:
        field = Type::Dyn();
        break;
      default:  // refused, and dyn thereafter, as in cel-go
        Refuse(e, absl::StrCat("type '", target.ToString(), "' does not support field selection"));
        field = Type::Dyn();
    }
    if (e.test_only) return Type::Of(TK::kBool);
    if (e.optional || optional_operand) return Type::OptionalOf(field);
    return field;
  }

  // Index: the element keeps its free type variable ([[]][0] is a list whose element type an
  // item beside it may bind), as cel-go's _[_] : (list(A), int) -> A does.
  Type Index(Expr& e) {
    const Type typed = Typed(*e.operand);
    const Type key = Check(*e.args[0]);
    const Type operand = Settle(typed);
    Type target = operand;
    Type typed_target = typed;
    const bool optional_operand = target.kind == TK::kOptional;
    if (optional_operand) {
      target = target.params[0];
      typed_target = typed_target.params[0];
    }
    Type element;
    if (target.is_dyn()) {
      element = Type::Dyn();
    } else if (target.kind == TK::kList &&
               (key.is_dyn() || key.kind == TK::kInt || key.kind == TK::kUint)) {
      element = typed_target.params[0];
    } else if (target.kind == TK::kMap && target.params[0].Accepts(key)) {
      element = typed_target.params[1];
    } else {
      return NoOverload(e, "_[_]", {operand, key}, false);
    }
    if (e.optional || optional_operand) return Type::OptionalOf(element);
    return element;
  }

  Type Call(Expr& e) {
    // A function of a namespace ("optional.of", "ip.isCanonical") is a global function with a
    // qualified name, looked up before the target as a variable, as cel-go's checker does.
    if (e.operand != nullptr && e.operand->kind == Expr::Kind::kIdent) {
      const std::string qualified = absl::StrCat(e.operand->name, ".", e.name);
      const std::vector<Overload>& overloads = Overloads();
      if (std::any_of(overloads.begin(), overloads.end(), [&qualified](const Overload& o) {
            return !o.member && o.name == qualified;
          })) {
        e.name = qualified;
        e.operand = nullptr;
      }
    }
    // The target's and the arguments' types as overloads are chosen by (`types`), and with their
    // free type variables (`typed`), for the result to keep those (Result).
    std::vector<Type> types;
    std::vector<Type> typed;
    // Literals anywhere within a format() call may mix types (its arguments are a list of
    // values of any types): cel-go's literal validator leaves them to the format validator.
    const bool format = e.name == "format";
    in_format_ += format ? 1 : 0;
    std::vector<Expr*> operands;
    if (e.operand != nullptr) operands.push_back(e.operand.get());
    for (ExprPtr& arg : e.args) operands.push_back(arg.get());
    const bool member = e.operand != nullptr;
    // The logical operators are not functions of the table: they are not strict. As in cel-go
    // 0.26, each operand that is not bool is refused where it stands.
    const bool logical = !member && (e.name == "_&&_" || e.name == "_||_");
    bool refused = false;
    for (Expr* operand : operands) {
      Type type = Typed(*operand);
      typed.push_back(type);
      types.push_back(Settle(std::move(type)));
      if (logical && !Type::Of(TK::kBool).Accepts(types.back())) {
        Refuse(*operand, Mismatch(Type::Of(TK::kBool), types.back()));
        refused = true;
      }
    }
    in_format_ -= format ? 1 : 0;
    if (logical) return refused ? Type::Error() : Type::Of(TK::kBool);
    const std::vector<Overload>& overloads = Overloads();
    bool named = false;
    for (size_t i = 0; i < overloads.size(); ++i) {
      const Overload& overload = overloads[i];
      if (overload.name != e.name) continue;
      if (overload.feature == Feature::kListTypeAttributes && options_.new_expressions &&
          !options_.list_type_attributes) {
        continue;
      }
      // A function of the other call style is declared, though no overload of it is called
      // (cel-go: startsWith(s, p) finds no matching overload).
      named = true;
      if (overload.member != member) continue;
      if (overload.params.size() != types.size()) continue;
      bool fits = true;
      std::optional<Type> bound;  // the overload's type parameter, once an argument sets it
      for (size_t p = 0; p < types.size() && fits; ++p) {
        // null stands for a value of a nullable type (a Semver, a Quantity, ...), as cel-go's
        // checker lets it; no overload takes it at evaluation ("no such overload").
        const bool null_for_nullable = types[p].kind == TK::kNull && Nullable(overload.params[p]);
        fits = (overload.params[p].Accepts(types[p]) || null_for_nullable) &&
               Bind(overload.params[p], types[p], bound);
      }
      if (fits) e.overloads.push_back(i);
    }
    if (!named) {
      return Refuse(
          e, absl::StrCat("undeclared reference to '", WrittenName(e), "' (in container '')"));
    }
    if (e.overloads.empty()) return NoOverload(e, e.name, types, member);
    if (e.name == "matches") ValidateRegex(*e.args[0]);
    if (format && member) ValidateFormat(e);
    return Result(e, types, typed);
  }

  // Result: the call's type, from its overloads (dyn when they disagree), sharpened where the
  // target and the arguments say more, with their free type variables (`typed`): optional.of(x)
  // holds x's type, optional.none()'s is free and value() gives it; list + list and orValue()
  // join their two types as a literal's items.
  Type Result(const Expr& e, const std::vector<Type>& types, const std::vector<Type>& typed) {
    const std::vector<Overload>& overloads = Overloads();
    Type result = overloads[e.overloads[0]].result;
    for (size_t index : e.overloads) result = Common(result, overloads[index].result);
    if ((e.name == "optional.of" || e.name == "optional.ofNonZeroValue") && typed.size() == 1) {
      return Type::OptionalOf(typed[0]);
    }
    if (e.name == "optional.none") return Type::OptionalOf(Type::Param());
    if (e.name == "value" && types[0].kind == TK::kOptional) return typed[0].params[0];
    if (e.name == "orValue" && types[0].kind == TK::kOptional) {
      return Joined(typed[0].params[0], typed[1]);
    }
    if (e.name == "_+_" && types[0].kind == TK::kList && types[1].kind == TK::kList) {
      return Type::ListOf(Joined(typed[0].params[0], typed[1].params[0]));
    }
    // A list and an error: the list's type, which binds list + list's parameter alone.
    if (e.name == "_+_" && types[0].kind != types[1].kind) {
      for (size_t i : {0, 1}) {
        if (types[i].kind == TK::kList && types[1 - i].kind == TK::kError) return typed[i];
      }
    }
    // reverse(), slice(), distinct() and sort() keep the list's type, flatten() takes a level off
    // a list of lists.
    if ((e.name == "reverse" || e.name == "slice" || e.name == "distinct" || e.name == "sort") &&
        types[0].kind == TK::kList) {
      return typed[0];
    }
    if (e.name == "flatten" && types.size() == 1 && types[0].kind == TK::kList &&
        types[0].params[0].kind == TK::kList) {
      return typed[0].params[0];
    }
    if (e.name == "dyn") return Type::Dyn();
    return result;
  }

  Type Macro(Expr& e) {
    // filter() gives a list of the range's elements, their free type variable kept.
    const Type typed_range = Typed(*e.operand);
    const Type range = Settle(typed_range);
    if (e.name == "cel.bind") {
      scope_.emplace_back(e.variable, range);
      Type body = Check(*e.args[0]);
      scope_.pop_back();
      return body;
    }
    Type element;
    switch (range.kind) {
      case TK::kList:
        element = range.params[0];
        break;
      case TK::kMap:
        element = range.params[0];
        break;
      case TK::kDyn:
      case TK::kError:
        element = Type::Dyn();
        break;
      default:  // any included, as cel-go's checker refuses it (sortBy's range at the call,
                // where cel-go places the variable its expansion ranges over); the variables
                // are then of the error type, and the rest is checked
        element = Refuse(e.name == "sortBy" ? e : *e.operand,
                         absl::StrCat("expression of type '", range.ToString(),
                                      "' cannot be range of a comprehension (must be list, map, "
                                      "or dynamic)"));
    }
    // A two-variable comprehension's first variable is a list's index or a map's key, its second
    // the item or the value.
    const bool two = !e.variable2.empty();
    Type first = element;
    Type second = element;
    if (two && range.kind == TK::kList) {
      first = Type::Of(TK::kInt);
      second = range.params[0];
    } else if (two && range.kind == TK::kMap) {
      second = range.params[1];
    }
    scope_.emplace_back(e.variable, first);
    if (two) scope_.emplace_back(e.variable2, second);
    std::vector<Type> results;
    for (ExprPtr& arg : e.args) results.push_back(Check(*arg));
    scope_.resize(scope_.size() - (two ? 2 : 1));
    // The macro's type, and for those that build a value the type of the accumulator's next
    // value (an error where the entry a transformMapEntry() gives is no map; the macro's type is
    // then its accumulator's, as cel-go's).
    Type result = Type::Of(TK::kBool);
    std::optional<Type> next;
    if (e.name == "map" || e.name == "transformList") {
      result = Type::ListOf(results.back());
    } else if (e.name == "transformMap") {
      result = Type::MapOf(first, results.back());
    } else if (e.name == "transformMapEntry") {
      if (results.back().kind == TK::kMap) {
        result = results.back();
      } else if (results.back().is_dyn()) {
        result = Type::MapOf(Type::Dyn(), Type::Dyn());
      } else {
        result = Type::MapOf(Type::Dyn(), Type::Dyn());
        next = NoOverload(e, "cel.@mapInsert", {result, results.back()}, false);
      }
    } else if (e.name == "filter") {
      result = typed_range.kind == TK::kList ? typed_range : Type::ListOf(element);
    } else if (e.name == "sortBy") {
      result = SortBy(e, range, results[0]);
    }
    // Predicates (all, exists, existsOne, filter, and the filter of map and the transforms) are
    // bool, refused as in cel-go's expansions of the macros: all() and exists() are an _&&_ or
    // _||_ of the predicate (refused where it stands), the others a `predicate ? next :
    // accumulator` (refused where the call opens), of a count for exists_one(), else of the
    // macro's type. The macro keeps its type.
    const bool has_predicate = !GivesValuePerItem(e) || e.args.size() == 2;
    if (has_predicate && !Type::Of(TK::kBool).Accepts(results[0])) {
      if (e.name == "all" || e.name == "exists") {
        Refuse(*e.args[0], Mismatch(Type::Of(TK::kBool), results[0]));
      } else if (e.name == "exists_one" || e.name == "existsOne") {
        NoOverload(e, "_?_:_", {results[0], Type::Of(TK::kInt), Type::Of(TK::kInt)}, false);
      } else {
        const Type accumulator = Settle(result);
        NoOverload(e, "_?_:_", {results[0], next.value_or(accumulator), accumulator}, false);
      }
    }
    return result;
  }

  // SortBy: the type of `range`.sortBy(x, key) with keys of type `key`: cel-go expands the macro
  // into range.@sortByAssociatedKeys(range.map(x, key)), declared for a list and keys of a type
  // sort() is declared for.
  Type SortBy(const Expr& e, const Type& range, const Type& key) {
    const std::vector<Overload>& overloads = Overloads();
    const bool ordered =
        key.is_dyn() || std::any_of(overloads.begin(), overloads.end(), [&key](const Overload& o) {
          return o.name == std::string_view("sort") && o.params[0] == Type::ListOf(key);
        });
    if (!ordered || (range.kind != TK::kList && !range.is_dyn())) {
      return NoOverload(e, "@sortByAssociatedKeys", {range, Type::ListOf(key)}, true);
    }
    if (range.kind == TK::kList) return range;
    // Of a range not known to be a list, each overload (one per key type) is of its own free
    // element type: dyn when keys of dyn fit several, as cel-go's resolution joins them.
    return key.is_dyn() ? Type::Dyn() : Type::ListOf(Type::Dyn());
  }

  // Literal: the type of a list or map literal, its items typed with their free type variables
  // (Typed), which its items bind (Unify); an empty one's element type is free.
  Type Literal(Expr& e) {
    const bool map = e.kind == Expr::Kind::kMap;
    Items keys;
    Items values;
    for (size_t i = 0; i < e.args.size(); i += map ? 2 : 1) {
      if (map) {
        const Expr& key = *e.args[i];
        Type type = Typed(*e.args[i]);
        if (!type.is_dyn() && type.kind != TK::kString && type.kind != TK::kInt &&
            type.kind != TK::kUint && type.kind != TK::kBool) {
          type = Refuse(key, absl::StrCat("unsupported map key type: ", Settle(type).ToString()));
        }
        Add(keys, key, type, /*each=*/true);
      }
      Expr& item = *e.args[map ? i + 1 : i];
      Add(values, item, Typed(item), /*each=*/map);
    }
    return map ? Type::MapOf(keys.type, values.type) : Type::ListOf(values.type);
  }

  // Items: one part of a literal (a list's elements, a map's keys, its values) as far as it has
  // been read: its type (dyn once two items differ), and the type cel-go's literal validator
  // compares the next item with (the first item's, as the items after it bound its free type
  // variables until one differed).
  struct Items {
    Type type = Type::Param();
    Type basis = Type::Param();
    bool differed = false;
  };

  // Add takes `item` of type `type` into `items`, noting for the validators an item whose type
  // differs from the basis, as cel-go's text: of a list its first such item, of a map each
  // (`each`); none within a format() call.
  void Add(Items& items, const Expr& item, const Type& type, bool each) {
    Record(item, type);
    // Once two items differed, the literal's type is dyn and binds no item's free type variable.
    const Type item_type = items.differed ? Settle(type) : type;
    if (std::optional<Type> unified = Unify(items.basis, item_type); unified.has_value()) {
      if (!items.differed) items.type = *unified;
      items.basis = *std::move(unified);
      return;
    }
    if (in_format_ == 0 && (each || !items.differed)) {
      literal_refusals_.push_back({item.position, Mismatch(Settle(items.basis), Settle(type))});
    }
    items.basis = Settle(std::move(items.basis));
    items.type = Type::Dyn();
    items.differed = true;
  }

  // ValidateRegex notes a string constant that is not a regular expression, for Invalid(). It is
  // cel-go's first argument of the call: the pattern of x.matches(p), but the text of the
  // global matches(x, p), whose pattern is looked at only when the program is built.
  void ValidateRegex(const Expr& arg) {
    if (arg.kind != Expr::Kind::kConst || arg.constant.kind() != Value::Kind::kString ||
        CompileRegex(arg.constant.string_value()).ok()) {
      return;
    }
    regex_refusals_.push_back({arg.position, "invalid matches argument"});
  }

  // Record keeps the type of a literal's item within a format() call, for ValidateFormat.
  void Record(const Expr& item, const Type& type) {
    if (in_format_ > 0) item_types_[&item] = Settle(type);
  }

  // ValidateFormat notes, for Invalid(), what cel-go's format validator refuses in a format()
  // whose format is a string and whose arguments a list, both written out: a malformed clause,
  // a clause without its argument, an argument whose static type the clause does not take (for
  // %s, nor an item of a list or map written out, at any depth), an argument no clause takes.
  void ValidateFormat(const Expr& e) {
    if (e.operand->kind != Expr::Kind::kConst ||
        e.operand->constant.kind() != Value::Kind::kString || e.args.size() != 1 ||
        e.args[0]->kind != Expr::Kind::kList) {
      return;
    }
    const std::vector<ExprPtr>& arguments = e.args[0]->args;
    const Expr* culprit = &e;
    size_t taken = 0;
    const absl::Status walked = WalkFormat(
        e.operand->constant.string_value(), arguments.size(), /*checking=*/true,
        [](absl::string_view) {},
        [&](size_t index, FormatVerb verb, std::optional<int64_t>) {
          ++taken;
          const Expr& argument = *arguments[index];
          const Expr* refused = nullptr;
          if (verb == FormatVerb::kString) {
            refused = NotFormattable(argument);
          } else if (!FormatTakes(verb, ItemType(argument).kind)) {
            refused = &argument;
          }
          if (refused == nullptr) return absl::OkStatus();
          culprit = refused;
          return absl::InvalidArgumentError(
              FormatClauseError(verb, RuntimeTypeName(ItemType(*refused))));
        });
    if (!walked.ok()) {
      format_refusals_.push_back({culprit->position, std::string(walked.message())});
    } else if (arguments.size() > taken) {
      format_refusals_.push_back(
          {e.position, absl::StrCat("too many arguments supplied to string.format (expected ",
                                    taken, ", got ", arguments.size(), ")")});
    }
  }

  // NotFormattable: the first of `e` and the items of the literals it is made of whose static
  // type %s does not take, or null.
  const Expr* NotFormattable(const Expr& e) const {
    if (!FormatTakes(FormatVerb::kString, ItemType(e).kind)) return &e;
    if (e.kind != Expr::Kind::kList && e.kind != Expr::Kind::kMap) return nullptr;
    for (const ExprPtr& item : e.args) {
      if (const Expr* refused = NotFormattable(*item); refused != nullptr) return refused;
    }
    return nullptr;
  }

  Type ItemType(const Expr& item) const {
    const auto found = item_types_.find(&item);
    return found == item_types_.end() ? Type::Dyn() : found->second;
  }

  // RuntimeTypeName: a static type's name as cel-go's Type.TypeName() gives it: a list, a map or
  // an optional without its parameters.
  static std::string RuntimeTypeName(const Type& type) {
    switch (type.kind) {
      case TK::kList:
        return "list";
      case TK::kMap:
        return "map";
      case TK::kOptional:
        return "optional_type";
      case TK::kAny:
        return "google.protobuf.Any";
      default:
        return type.DeclaredName();
    }
  }

  const CheckOptions& options_;
  std::vector<std::pair<std::string, Type>> scope_;
  std::vector<PlacedError> refusals_;
  // The validators', each in turn.
  std::vector<PlacedError> literal_refusals_;
  std::vector<PlacedError> regex_refusals_;
  std::vector<PlacedError> format_refusals_;
  int in_format_ = 0;  // how many format() calls the expression checked is within
  // The static types of literals' items within format() calls.
  std::map<const Expr*, Type> item_types_;
};

}  // namespace

absl::Status Check(Expr& root, absl::string_view source, const CheckOptions& options) {
  Checker checker(options);
  const Type type = checker.Check(root);
  // The validators' refusals only once the checker has refused nothing, as in cel-go.
  if (!checker.refusals().empty()) {
    return absl::InvalidArgumentError(DisplayErrors(source, checker.refusals()));
  }
  if (std::vector<PlacedError> invalid = checker.Invalid(); !invalid.empty()) {
    return absl::InvalidArgumentError(DisplayErrors(source, std::move(invalid)));
  }
  if (type.kind != TK::kBool && !type.is_dyn()) {
    return absl::InvalidArgumentError(
        absl::StrCat("must evaluate to bool or the unknown type, not ", type.DeclaredName()));
  }
  return absl::OkStatus();
}

}  // namespace devmgr::cel
