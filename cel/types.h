// Type: the static types the checker (checker.h) infers for the CEL subset, with `dyn` for what
// is only known at evaluation (a device attribute's value). Names print as cel-go prints them in
// its errors ("int", "list(string)", "map(string, dyn)", "kubernetes.Semver").
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::cel {

struct Type {
  enum class Kind {
    kDyn,
    // google.protobuf.Any: a device attribute's value in an environment without list-type
    // attributes. Used as dyn, except that it cannot be the range of a macro.
    kAny,
    kNull,
    kBool,
    kInt,
    kUint,
    kDouble,
    kString,
    kBytes,
    kList,  // params: element
    kMap,   // params: key, value
    kSemver,
    kQuantity,
    kIP,        // net.IP, Kubernetes' IP library
    kCIDR,      // net.CIDR, Kubernetes' CIDR library
    kURL,       // kubernetes.URL, Kubernetes' URL library
    kFormat,    // kubernetes.NamedFormat, Kubernetes' format library
    kOptional,  // params: value
    kDevice,    // kubernetes.DRADevice, the `device` variable
    kType,      // a type value: type(x), or a type's name written out (int, net.IP)
    // What an expression the checker refused has (cel-go's error type, printed "!error!"): taken
    // as dyn wherever it is used, so that one mistake is reported once and the check goes on.
    kError,
    // A type parameter of an overload (functions.h): the arguments in its places must have one
    // type, as in cel-go's declarations (`_==_(A, A)`, `@in(A, list(A))`). Only in parameters.
    kParam,
  };

  Kind kind = Kind::kDyn;
  std::vector<Type> params;

  static Type Of(Kind kind) { return Type{kind, {}}; }
  static Type Dyn() { return Of(Kind::kDyn); }
  static Type ListOf(Type element) { return Type{Kind::kList, {std::move(element)}}; }
  static Type MapOf(Type key, Type value) {
    return Type{Kind::kMap, {std::move(key), std::move(value)}};
  }
  static Type OptionalOf(Type value) { return Type{Kind::kOptional, {std::move(value)}}; }
  static Type Param() { return Of(Kind::kParam); }

  static Type Error() { return Of(Kind::kError); }

  // is_dyn: dyn, any or an error, which cel-go's checker assigns anything to and from.
  bool is_dyn() const { return kind == Kind::kDyn || kind == Kind::kAny || kind == Kind::kError; }
  // Accepts: a value of `other` may be passed where this type is expected (dyn accepts and is
  // accepted by everything, a type parameter accepts everything; containers compare their
  // parameters).
  bool Accepts(const Type& other) const;
  // ToString: the name as cel-go's checker errors print it (null is "null").
  std::string ToString() const;
  // DeclaredName: the name as cel-go's Type.String() prints it, which differs for null
  // ("null_type"); Kubernetes' "must evaluate to bool" error uses it.
  std::string DeclaredName() const;

  bool operator==(const Type&) const = default;
};

// TypeDenotation: the type `name` denotes as a value (int, list, null_type, net.IP, ...: every
// type of the subset's values, as Value::TypeName() names it), or null when it denotes none. `dyn`
// is not one, as in cel-go.
const char* TypeDenotation(absl::string_view name);

}  // namespace devmgr::cel
