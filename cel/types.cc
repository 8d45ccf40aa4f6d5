#include "cel/types.h"

#include "absl/strings/str_cat.h"

namespace devmgr::cel {
namespace {

// Format: the type's name, with `null_name` for null.
std::string Format(const Type& type, const char* null_name) {
  using Kind = Type::Kind;
  const auto param = [null_name](const Type& p) { return Format(p, null_name); };
  switch (type.kind) {
    case Kind::kDyn:
      return "dyn";
    case Kind::kAny:
      return "any";
    case Kind::kNull:
      return null_name;
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
      return absl::StrCat("list(", param(type.params[0]), ")");
    case Kind::kMap:
      return absl::StrCat("map(", param(type.params[0]), ", ", param(type.params[1]), ")");
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
      return absl::StrCat("optional_type(", param(type.params[0]), ")");
    case Kind::kDevice:
      return "kubernetes.DRADevice";
    case Kind::kType:
      return "type";
    case Kind::kError:
      return "!error!";
    case Kind::kParam:
      return "A";
  }
  return "dyn";
}

}  // namespace

bool Type::Accepts(const Type& other) const {
  if (is_dyn() || other.is_dyn() || kind == Kind::kParam) return true;
  if (kind != other.kind) return false;
  for (size_t i = 0; i < params.size() && i < other.params.size(); ++i) {
    if (!params[i].Accepts(other.params[i])) return false;
  }
  return true;
}

std::string Type::ToString() const { return Format(*this, "null"); }

std::string Type::DeclaredName() const { return Format(*this, "null_type"); }

const char* TypeDenotation(absl::string_view name) {
  static constexpr const char* kNames[] = {
      "bool",
      "bytes",
      "double",
      "int",
      "uint",
      "string",
      "list",
      "map",
      "null_type",
      "type",
      "optional_type",
      "kubernetes.Semver",
      "kubernetes.Quantity",
      "net.IP",
      "net.CIDR",
      "kubernetes.URL",
      "kubernetes.NamedFormat",
  };
  for (const char* known : kNames) {
    if (name == known) return known;
  }
  return nullptr;
}

}  // namespace devmgr::cel
