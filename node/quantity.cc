#include "node/quantity.h"

#include "absl/strings/str_cat.h"
#include "kubeapi/quantity.h"

namespace devmgr::node {

absl::StatusOr<int64_t> ParseDeviceCount(absl::string_view quantity) {
  absl::StatusOr<kubeapi::Quantity> parsed = kubeapi::Quantity::Parse(quantity);
  if (!parsed.ok()) return parsed.status();
  const auto refused = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("quantity \"", quantity, "\" ", why));
  };
  if (!parsed->IsWhole()) return refused("is not a whole number of devices");
  if (parsed->Sign() < 0) return refused("is negative");
  absl::StatusOr<int64_t> count = parsed->AsInteger();
  if (!count.ok()) return refused("is too large");
  return *count;
}

}  // namespace devmgr::node
