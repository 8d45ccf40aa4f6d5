#include "node/manifest_fields.h"

#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/field_errors.h"

namespace devmgr::node {

absl::Status FieldError(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

absl::StatusOr<std::string> ReadString(const YAML::Node& node, absl::string_view field) {
  if (!IsPresent(node)) return std::string();
  if (!node.IsScalar()) return FieldError(field, "must be a string");
  return node.Scalar();
}

absl::Status NameError(absl::string_view field, absl::string_view name,
                       const std::vector<std::string>& messages) {
  FieldErrors errors;
  errors.EachInvalid(field, name, messages);
  return errors.Result();
}

std::string NewUid() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  const uint64_t high = (rng() & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  const uint64_t low = (rng() & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", high >> 32, (high >> 16) & 0xFFFF,
                         high & 0xFFFF, low >> 48, low & 0xFFFFFFFFFFFFULL);
}

}  // namespace devmgr::node
