// A Quantity in an object's JSON, read as upstream's Quantity.UnmarshalJSON reads it: a string
// ("1Gi", spaces around it allowed) or, as some clients write one, a plain number (its text is
// parsed: 1.5, 18446744073709551615 and 1e3 are the quantities they read as).
#pragma once

#include "absl/status/statusor.h"
#include "kubeapi/quantity.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

// QuantityFromJson: InvalidArgument "must be a quantity string" for a value that is neither a
// string nor a number, Quantity::Parse's error for text that is not a quantity.
absl::StatusOr<Quantity> QuantityFromJson(const nlohmann::json& value);

}  // namespace devmgr::kubeapi
