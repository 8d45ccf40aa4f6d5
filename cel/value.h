// Value: a CEL value of the subset devmgr evaluates: null, bool, int, uint, double, string,
// bytes, list, map, the Kubernetes types Semver, Quantity, IP, CIDR, URL and NamedFormat,
// optional values, type values, and errors.
// Errors are values, as in CEL: an operation on an error gives that error, except where CEL
// says otherwise (`false && error` is false, `true || error` is true).
//
// Values are cheap to copy: lists, maps and optionals share their contents, which never change.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "cel/named_formats.h"
#include "common/go_netip.h"
#include "common/go_url.h"
#include "kubeapi/quantity.h"
#include "kubeapi/semver.h"

namespace devmgr::cel {

class Value;

struct Null {
  bool operator==(const Null&) const = default;
};
// Bytes: shared, as a string's text is (see Value).
struct Bytes {
  std::shared_ptr<const std::string> data;
};
// Error: what went wrong, as the message CEL's evaluation error carries.
struct Error {
  std::string message;
};
using List = std::vector<Value>;
// A map's entries in insertion order; keys are unique. `default_empty_map`: a key that is not
// there reads as an empty map, not as an error (DRA's device.attributes and device.capacity:
// an unknown domain has no attributes); `in` and has() still see it as absent.
struct Map {
  std::vector<std::pair<Value, Value>> entries;
  bool default_empty_map = false;
};
// TypeValue: a value of CEL's type `type` (type(1), int): the type's name as
// Value::TypeName() gives it, a string of the program's lifetime.
struct TypeValue {
  const char* name;
};
// Optional: a value that may be absent (CEL's optional_type).
struct Optional {
  std::shared_ptr<const Value> value;  // null: none
};

class Value {
 public:
  enum class Kind {
    kNull,
    kBool,
    kInt,
    kUint,
    kDouble,
    kString,
    kBytes,
    kList,
    kMap,
    kSemver,
    kQuantity,
    kIP,
    kCIDR,
    kURL,
    kFormat,
    kOptional,
    kType,
    kError,
  };

  Value() : data_(Null{}) {}
  static Value Bool(bool value) { return Value(value); }
  static Value Int(int64_t value) { return Value(value); }
  static Value Uint(uint64_t value) { return Value(value); }
  static Value Double(double value) { return Value(value); }
  static Value String(std::string value) {
    return Value(std::make_shared<const std::string>(std::move(value)));
  }
  static Value BytesOf(std::string value) {
    return Value(Bytes{std::make_shared<const std::string>(std::move(value))});
  }
  static Value ListOf(List items) { return Value(std::make_shared<const List>(std::move(items))); }
  static Value MapOf(Map map) { return Value(std::make_shared<const Map>(std::move(map))); }
  static Value SemverOf(kubeapi::Semver value) { return Value(std::move(value)); }
  static Value QuantityOf(kubeapi::Quantity value) { return Value(value); }
  static Value IPOf(GoAddr value) { return Value(std::move(value)); }
  static Value CIDROf(GoPrefix value) { return Value(std::move(value)); }
  static Value URLOf(GoURL value) { return Value(std::make_shared<const GoURL>(std::move(value))); }
  static Value FormatOf(const NamedFormat& format) { return Value(&format); }
  static Value OptionalOf(std::optional<Value> value);
  static Value TypeOf(const char* name) { return Value(TypeValue{name}); }
  static Value ErrorOf(std::string message) { return Value(Error{std::move(message)}); }

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_error() const { return kind() == Kind::kError; }

  bool bool_value() const { return std::get<bool>(data_); }
  int64_t int_value() const { return std::get<int64_t>(data_); }
  uint64_t uint_value() const { return std::get<uint64_t>(data_); }
  double double_value() const { return std::get<double>(data_); }
  const std::string& string_value() const {
    return *std::get<std::shared_ptr<const std::string>>(data_);
  }
  const std::string& bytes_value() const { return *std::get<Bytes>(data_).data; }
  const List& list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Map& map() const { return *std::get<std::shared_ptr<const Map>>(data_); }
  const kubeapi::Semver& semver() const { return std::get<kubeapi::Semver>(data_); }
  const kubeapi::Quantity& quantity() const { return std::get<kubeapi::Quantity>(data_); }
  const GoAddr& ip() const { return std::get<GoAddr>(data_); }
  const GoPrefix& cidr() const { return std::get<GoPrefix>(data_); }
  const GoURL& url() const { return *std::get<std::shared_ptr<const GoURL>>(data_); }
  const NamedFormat& format() const { return *std::get<const NamedFormat*>(data_); }
  // The optional's value, or null when it has none.
  const Value* optional_value() const { return std::get<Optional>(data_).value.get(); }
  const char* type_value() const { return std::get<TypeValue>(data_).name; }
  const std::string& error() const { return std::get<Error>(data_).message; }

  // The CEL type's name: "int", "string", "list", "map", "kubernetes.Semver", ...
  const char* TypeName() const;

 private:
  // A string's text is shared between copies, as lists and maps are: reading a variable that
  // holds a long string copies no text, so memory stays bounded by what the cost limit lets
  // an expression build.
  using Data =
      std::variant<Null, bool, int64_t, uint64_t, double, std::shared_ptr<const std::string>, Bytes,
                   std::shared_ptr<const List>, std::shared_ptr<const Map>, kubeapi::Semver,
                   kubeapi::Quantity, GoAddr, GoPrefix, std::shared_ptr<const GoURL>,
                   const NamedFormat*, Optional, TypeValue, Error>;
  template <typename T>
  explicit Value(T value) : data_(std::move(value)) {}

  Data data_;
};

// Equals: CEL's ==. Numbers compare across int, uint and double by value; lists and maps
// element by element; values of different types are not equal. An error compared is that error.
// `visit` is told of every value compared, nested ones too, and ends the comparison by answering
// false (the answer is then false): lists of lists shared many times over are cheap to build
// and can hold more values than any evaluation could compare, so the caller pays for each.
Value Equals(const Value& a, const Value& b, absl::FunctionRef<bool()> visit);
// Equals of scalars (map keys), which compares one value.
Value Equals(const Value& a, const Value& b);

// Find: the value of `key` in `map`, or null when it is not there.
const Value* Find(const Map& map, const Value& key);
// Lookup: as Find, but a map with default_empty_map answers an empty map for a missing key.
const Value* Lookup(const Map& map, const Value& key);

}  // namespace devmgr::cel
