#include "cel/types.h"

#include "absl/strings/str_cat.h"

namespace devmgr::cel {

bool Type::Accepts(const Type& other) const {
  if (is_dyn() || other.is_dyn()) return true;
  if (kind != other.kind) return false;
  for (size_t i = 0; i < params.size() && i < other.params.size(); ++i) {
    if (!params[i].Accepts(other.params[i])) return false;
  }
  return true;
}

std::string Type::ToString() const {
  switch (kind) {
    case Kind::kDyn:
      return "dyn";
    case Kind::kAny:
      return "any";
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
      return absl::StrCat("list(", params[0].ToString(), ")");
    case Kind::kMap:
      return absl::StrCat("map(", params[0].ToString(), ", ", params[1].ToString(), ")");
    case Kind::kSemver:
      return "kubernetes.Semver";
    case Kind::kQuantity:
      return "kubernetes.Quantity";
    case Kind::kOptional:
      return absl::StrCat("optional_type(", params[0].ToString(), ")");
    case Kind::kDevice:
      return "kubernetes.DRADevice";
  }
  return "dyn";
}

}  // namespace devmgr::cel
