#include "cel/value.h"

#include <cmath>

#include "absl/strings/string_view.h"

namespace devmgr::cel {
namespace {

// Numbers compare by value across int, uint and double, as CEL's heterogeneous equality does.
std::optional<bool> NumbersEqual(const Value& a, const Value& b) {
  using Kind = Value::Kind;
  const auto is_number = [](Kind kind) {
    return kind == Kind::kInt || kind == Kind::kUint || kind == Kind::kDouble;
  };
  if (!is_number(a.kind()) || !is_number(b.kind())) return std::nullopt;
  if (a.kind() == Kind::kDouble || b.kind() == Kind::kDouble) {
    const auto as_double = [](const Value& v) {
      switch (v.kind()) {
        case Kind::kInt:
          return static_cast<double>(v.int_value());
        case Kind::kUint:
          return static_cast<double>(v.uint_value());
        default:
          return v.double_value();
      }
    };
    return as_double(a) == as_double(b);
  }
  if (a.kind() == b.kind()) {
    return a.kind() == Kind::kInt ? a.int_value() == b.int_value()
                                  : a.uint_value() == b.uint_value();
  }
  const Value& signed_one = a.kind() == Kind::kInt ? a : b;
  const Value& unsigned_one = a.kind() == Kind::kInt ? b : a;
  return signed_one.int_value() >= 0 &&
         static_cast<uint64_t>(signed_one.int_value()) == unsigned_one.uint_value();
}

}  // namespace

Value Value::OptionalOf(std::optional<Value> value) {
  Optional optional;
  if (value.has_value()) optional.value = std::make_shared<const Value>(*std::move(value));
  return Value(std::move(optional));
}

const char* Value::TypeName() const {
  switch (kind()) {
    case Kind::kNull:
      return "null_type";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kUint:
      return "uint";
    case Kind::kDouble:
      return "double";
    case Kind::kString:
      return "string";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kMap:
      return "map";
    case Kind::kSemver:
      return "kubernetes.Semver";
    case Kind::kQuantity:
      return "kubernetes.Quantity";
    case Kind::kIP:
      return "net.IP";
    case Kind::kCIDR:
      return "net.CIDR";
    case Kind::kURL:
      return "kubernetes.URL";
    case Kind::kFormat:
      return "kubernetes.NamedFormat";
    case Kind::kOptional:
      return "optional_type";
    case Kind::kType:
      return "type";
    case Kind::kError:
      return "error";
  }
  return "unknown";
}

Value Equals(const Value& a, const Value& b) {
  return Equals(a, b, [] { return true; });
}

Value Equals(const Value& a, const Value& b, absl::FunctionRef<bool()> visit) {
  using Kind = Value::Kind;
  if (!visit()) return Value::Bool(false);
  if (a.is_error()) return a;
  if (b.is_error()) return b;
  if (std::optional<bool> numbers = NumbersEqual(a, b); numbers.has_value()) {
    return Value::Bool(*numbers);
  }
  if (a.kind() != b.kind()) return Value::Bool(false);
  switch (a.kind()) {
    case Kind::kNull:
      return Value::Bool(true);
    case Kind::kBool:
      return Value::Bool(a.bool_value() == b.bool_value());
    case Kind::kString:
      return Value::Bool(a.string_value() == b.string_value());
    case Kind::kBytes:
      return Value::Bool(a.bytes_value() == b.bytes_value());
    case Kind::kSemver:
      return Value::Bool(a.semver() == b.semver());
    case Kind::kQuantity:
      return Value::Bool(a.quantity() == b.quantity());
    case Kind::kIP:
      return Value::Bool(a.ip() == b.ip());
    case Kind::kCIDR:
      return Value::Bool(a.cidr() == b.cidr());
    case Kind::kURL:  // as Kubernetes compares them: by the text each prints
      return Value::Bool(a.url().String() == b.url().String());
    case Kind::kFormat:
      return Value::Bool(&a.format() == &b.format());
    case Kind::kType:
      return Value::Bool(absl::string_view(a.type_value()) == b.type_value());
    case Kind::kList: {
      if (a.list().size() != b.list().size()) return Value::Bool(false);
      for (size_t i = 0; i < a.list().size(); ++i) {
        Value equal = Equals(a.list()[i], b.list()[i], visit);
        if (equal.is_error() || !equal.bool_value()) return equal;
      }
      return Value::Bool(true);
    }
    case Kind::kMap: {
      if (a.map().entries.size() != b.map().entries.size()) return Value::Bool(false);
      for (const auto& [key, value] : a.map().entries) {
        const Value* other = Find(b.map(), key);
        if (other == nullptr) return Value::Bool(false);
        Value equal = Equals(value, *other, visit);
        if (equal.is_error() || !equal.bool_value()) return equal;
      }
      return Value::Bool(true);
    }
    case Kind::kOptional: {
      const Value* x = a.optional_value();
      const Value* y = b.optional_value();
      if (x == nullptr || y == nullptr) return Value::Bool(x == y);
      return Equals(*x, *y, visit);
    }
    default:
      return Value::Bool(false);
  }
}

const Value* Find(const Map& map, const Value& key) {
  for (const auto& [k, v] : map.entries) {
    const Value equal = Equals(k, key);
    if (!equal.is_error() && equal.bool_value()) return &v;
  }
  return nullptr;
}

const Value* Lookup(const Map& map, const Value& key) {
  if (const Value* found = Find(map, key); found != nullptr) return found;
  if (!map.default_empty_map) return nullptr;
  static const Value kEmpty = Value::MapOf(Map{});
  return &kEmpty;
}

}  // namespace devmgr::cel
