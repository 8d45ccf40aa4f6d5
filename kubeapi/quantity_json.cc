#include "kubeapi/quantity_json.h"

#include <string>

#include "absl/strings/ascii.h"

namespace devmgr::kubeapi {

absl::StatusOr<Quantity> QuantityFromJson(const nlohmann::json& value) {
  if (value.is_null()) return Quantity();
  if (value.is_number()) return Quantity::Parse(value.dump());
  if (!value.is_string()) return absl::InvalidArgumentError("must be a quantity string");
  return Quantity::Parse(absl::StripAsciiWhitespace(value.get_ref<const std::string&>()));
}

}  // namespace devmgr::kubeapi
