#include "cel/interpreter.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace devmgr::cel {
namespace {

using Kind = Value::Kind;

Value Err(std::string message) { return Value::ErrorOf(std::move(message)); }

// KeyText: a map key as cel-go's errors print it (Go's %v: a string without quotes).
std::string KeyText(const Value& key) {
  switch (key.kind()) {
    case Kind::kString:
      return key.string_value();
    case Kind::kInt:
      return absl::StrCat(key.int_value());
    case Kind::kUint:
      return absl::StrCat(key.uint_value());
    case Kind::kBool:
      return key.bool_value() ? "true" : "false";
    default:
      return key.TypeName();
  }
}

class Interpreter {
 public:
  Interpreter(const Value& device, EvalContext& context) : device_(device), context_(context) {}

  Value Eval(const Expr& e) {
    if (e.kind == Expr::Kind::kConst) return e.constant;
    if (!context_.AddCost(1)) return Err(context_.StopReason());
    switch (e.kind) {
      case Expr::Kind::kIdent:
        return Ident(e);
      case Expr::Kind::kSelect:
        return Select(e);
      case Expr::Kind::kIndex:
        return Index(e);
      case Expr::Kind::kCall:
        return Call(e);
      case Expr::Kind::kList: {
        List items;
        for (const ExprPtr& arg : e.args) {
          Value item = Eval(*arg);
          if (item.is_error()) return item;
          items.push_back(std::move(item));
        }
        return Value::ListOf(std::move(items));
      }
      case Expr::Kind::kMap: {
        Map map;
        for (size_t i = 0; i < e.args.size(); i += 2) {
          Value key = Eval(*e.args[i]);
          if (key.is_error()) return key;
          Value value = Eval(*e.args[i + 1]);
          if (value.is_error()) return value;
          if (Find(map, key) != nullptr) {
            return Err(absl::StrCat("Failed with repeated key: ", KeyText(key)));
          }
          map.entries.emplace_back(std::move(key), std::move(value));
        }
        return Value::MapOf(std::move(map));
      }
      case Expr::Kind::kMacro:
        return Macro(e);
      case Expr::Kind::kCondition: {
        Value condition = Eval(*e.args[0]);
        if (condition.is_error()) return condition;
        if (condition.kind() != Kind::kBool) {
          return Err(absl::StrCat("no such overload: ", condition.TypeName(), " ? _ : _"));
        }
        return Eval(*e.args[condition.bool_value() ? 1 : 2]);
      }
      case Expr::Kind::kConst:
        break;
    }
    return e.constant;
  }

 private:
  Value Ident(const Expr& e) {
    for (auto it = scope_.rbegin(); it != scope_.rend() && !e.root; ++it) {
      if (it->first == e.name) return it->second;
    }
    return device_;  // the checker let no other name through
  }

  // Field: `name` of map `target`, plain (error when missing) or as an optional. A map whose
  // missing keys read as an empty map (device.attributes, device.capacity) has every key, for
  // optional access and has() too, as upstream's mapper answers cel-go's Find.
  static Value Field(const Value& target, const Value& key, bool optional) {
    const Value* found = Lookup(target.map(), key);
    if (optional) {
      return Value::OptionalOf(found != nullptr ? std::optional<Value>(*found) : std::nullopt);
    }
    if (found == nullptr) return Err(absl::StrCat("no such key: ", KeyText(key)));
    return *found;
  }

  Value Select(const Expr& e) {
    Value operand = Eval(*e.operand);
    if (operand.is_error()) return operand;
    bool optional = e.optional;
    if (operand.kind() == Kind::kOptional) {
      // None stays none, and has none of the fields has() asks about.
      if (operand.optional_value() == nullptr) return e.test_only ? Value::Bool(false) : operand;
      operand = Value(*operand.optional_value());  // a copy: assigning frees the optional
      optional = true;
    }
    const Value key = Value::String(e.name);
    // A value that is not a map has no fields: has() is false and a selection fails, as in
    // cel-go's attribute resolution (refQualify).
    if (operand.kind() != Kind::kMap) {
      if (e.test_only) return Value::Bool(false);
      return Err(absl::StrCat("no such key: ", e.name));
    }
    if (e.test_only) return Value::Bool(Lookup(operand.map(), key) != nullptr);
    return Field(operand, key, optional);
  }

  Value Index(const Expr& e) {
    Value operand = Eval(*e.operand);
    if (operand.is_error()) return operand;
    Value key = Eval(*e.args[0]);
    if (key.is_error()) return key;
    bool optional = e.optional;
    if (operand.kind() == Kind::kOptional) {
      if (operand.optional_value() == nullptr) return operand;
      operand = Value(*operand.optional_value());
      optional = true;
    }
    if (operand.kind() == Kind::kMap) return Field(operand, key, optional);
    if (operand.kind() != Kind::kList) {
      return Err(absl::StrCat("no such overload: ", operand.TypeName(), "[", key.TypeName(), "]"));
    }
    int64_t index = 0;
    if (key.kind() == Kind::kInt) {
      index = key.int_value();
    } else if (key.kind() == Kind::kUint && key.uint_value() <= INT64_MAX) {
      index = static_cast<int64_t>(key.uint_value());
    } else if (key.kind() == Kind::kDouble &&
               std::trunc(key.double_value()) == key.double_value() &&
               std::abs(key.double_value()) < 9.2e18) {
      index = static_cast<int64_t>(key.double_value());
    } else {
      return Err(absl::StrCat("unsupported index type '", key.TypeName(), "' in list"));
    }
    const List& list = operand.list();
    if (index < 0 || index >= static_cast<int64_t>(list.size())) {
      if (optional) return Value::OptionalOf(std::nullopt);
      return Err(absl::StrCat("index out of range: ", index));
    }
    const Value& item = list[static_cast<size_t>(index)];
    return optional ? Value::OptionalOf(item) : item;
  }

  Value Call(const Expr& e) {
    if (e.operand == nullptr && (e.name == "_&&_" || e.name == "_||_")) {
      return Logical(e, e.name == "_&&_");
    }
    std::vector<Value> args;
    args.reserve(e.args.size() + 1);
    if (e.operand != nullptr) args.push_back(Eval(*e.operand));
    for (const ExprPtr& arg : e.args) args.push_back(Eval(*arg));
    for (const Value& arg : args) {
      if (arg.is_error()) return arg;
    }
    const std::vector<Overload>& overloads = Overloads();
    for (size_t index : e.overloads) {
      const Overload& overload = overloads[index];
      bool fits = true;
      for (size_t i = 0; i < args.size() && fits; ++i) fits = Fits(overload.params[i], args[i]);
      if (fits) {
        Value result = overload.impl(args, context_);
        if (context_.stopped()) return Err(context_.StopReason());
        return result;
      }
    }
    std::vector<std::string> types;
    for (const Value& arg : args) types.push_back(arg.TypeName());
    return Err(absl::StrCat("no such overload: ", e.name, "(", absl::StrJoin(types, ", "), ")"));
  }

  // Logical: && and ||, commutative over errors as CEL's are.
  Value Logical(const Expr& e, bool conjunction) {
    const auto decides = [conjunction](const Value& v) {
      return v.kind() == Kind::kBool && v.bool_value() != conjunction;
    };
    Value left = Eval(*e.args[0]);
    if (context_.stopped()) return Err(context_.StopReason());
    if (decides(left)) return left;
    Value right = Eval(*e.args[1]);
    if (context_.stopped()) return Err(context_.StopReason());
    if (decides(right)) return right;
    for (const Value* side : {&left, &right}) {
      if (side->is_error()) return *side;
      if (side->kind() != Kind::kBool) {
        return Err(absl::StrCat("no such overload: ", e.name, "(", left.TypeName(), ", ",
                                right.TypeName(), ")"));
      }
    }
    return Value::Bool(conjunction);
  }

  Value Macro(const Expr& e) {
    Value range = Eval(*e.operand);
    if (range.is_error()) return range;
    if (e.name == "cel.bind") {
      scope_.emplace_back(e.variable, std::move(range));
      Value body = Eval(*e.args[0]);
      scope_.pop_back();
      return body;
    }
    // The first variable's values (a list's items, a map's keys; a list's indexes with two
    // variables) and the second's (a list's items, a map's values).
    const bool two = !e.variable2.empty();
    std::vector<Value> items;
    std::vector<Value> seconds;
    if (e.name == "sortBy" && range.kind() != Kind::kList) return Err("no such overload");
    if (range.kind() == Kind::kList) {
      if (two) {
        seconds = range.list();
        for (size_t i = 0; i < seconds.size(); ++i) {
          items.push_back(Value::Int(static_cast<int64_t>(i)));
        }
      } else {
        items = range.list();
      }
    } else if (range.kind() == Kind::kMap) {
      for (const auto& [key, value] : range.map().entries) {
        items.push_back(key);
        if (two) seconds.push_back(value);
      }
    } else {
      return Err(absl::StrCat("got '", GoTypeName(range), "', expected iterable type"));
    }
    const bool all = e.name == "all";
    const bool exists = e.name == "exists";
    const bool transforms = GivesValuePerItem(e);
    std::optional<Value> first_error;
    int64_t count = 0;
    List mapped;
    List mapped_from;  // transformMap: the first variable of each value in `mapped`
    for (size_t k = 0; k < items.size(); ++k) {
      const Value& item = items[k];
      if (!context_.AddCost(1)) return Err(context_.StopReason());
      scope_.emplace_back(e.variable, item);
      if (two) scope_.emplace_back(e.variable2, seconds[k]);
      Value verdict = Eval(*e.args[0]);
      std::optional<Value> transformed;
      if (transforms && e.args.size() == 2 && verdict.kind() == Kind::kBool &&
          verdict.bool_value()) {
        transformed = Eval(*e.args[1]);
      }
      scope_.resize(scope_.size() - (two ? 2 : 1));
      if (context_.stopped()) return Err(context_.StopReason());
      if (transforms && e.args.size() == 1) {
        if (verdict.is_error()) return verdict;
        mapped_from.push_back(item);
        mapped.push_back(std::move(verdict));
        continue;
      }
      if (verdict.kind() != Kind::kBool) {
        Value error = verdict.is_error()
                          ? verdict
                          : Err(absl::StrCat("no such overload: ", e.name, " predicate of type ",
                                             verdict.TypeName()));
        // all() and exists() look on for an element that decides; the others stop here.
        if (!all && !exists) return error;
        if (!first_error.has_value()) first_error = std::move(error);
        continue;
      }
      const bool holds = verdict.bool_value();
      if (all && !holds) return Value::Bool(false);
      if (exists && holds) return Value::Bool(true);
      if (holds) ++count;
      if (e.name == "filter" && holds) mapped.push_back(item);
      if (transformed.has_value()) {
        if (transformed->is_error()) return *transformed;
        mapped_from.push_back(item);
        mapped.push_back(*std::move(transformed));
      }
    }
    if (all || exists) {
      if (first_error.has_value()) return *first_error;
      return Value::Bool(all);
    }
    if (e.name == "exists_one" || e.name == "existsOne") return Value::Bool(count == 1);
    if (e.name == "sortBy") return SortByKeys(range, Value::ListOf(std::move(mapped)), context_);
    if (e.name == "transformMap") {
      Map map;
      for (size_t i = 0; i < mapped.size(); ++i) {
        map.entries.emplace_back(mapped_from[i], mapped[i]);
      }
      return Value::MapOf(std::move(map));
    }
    if (e.name == "transformMapEntry") return MergeEntries(mapped);
    return Value::ListOf(std::move(mapped));
  }

  // MergeEntries: the entries of `maps` in one map, as transformMapEntry inserts each transform's
  // entries in turn; a key twice is an error. Each insertion pays for the keys it looks through.
  Value MergeEntries(const List& maps) {
    Map merged;
    for (const Value& entries : maps) {
      if (entries.kind() != Kind::kMap) return Err("no such overload");
      for (const auto& [key, value] : entries.map().entries) {
        if (!context_.AddCost(merged.entries.size())) return Err(context_.StopReason());
        if (Find(merged, key) != nullptr) {
          return Err(absl::StrCat("insert failed: key ", KeyText(key), " already exists"));
        }
        merged.entries.emplace_back(key, value);
      }
    }
    return Value::MapOf(std::move(merged));
  }

  const Value& device_;
  EvalContext& context_;
  std::vector<std::pair<std::string, Value>> scope_;
};

}  // namespace

Value Evaluate(const Expr& root, const Value& device, EvalContext& context) {
  Interpreter interpreter(device, context);
  Value result = interpreter.Eval(root);
  if (context.stopped()) return Err(context.StopReason());
  return result;
}

}  // namespace devmgr::cel
