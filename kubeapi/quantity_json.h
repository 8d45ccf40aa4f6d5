// A Quantity in an object's JSON, read as upstream's Quantity.UnmarshalJSON reads it: a string
// ("1Gi", ASCII spaces around it allowed), null (zero) or, as some clients write one, a plain
// number. Go parses a number's text; nlohmann keeps its value, so a number is parsed as nlohmann
// prints it: an integer exactly, one with a fraction or an exponent as the shortest text of its
// double (1e3 reads as 1k, not 1e3: the same value in another format; digits past a double's
// precision are lost).
#pragma once

#include "absl/status/statusor.h"
#include "kubeapi/quantity.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

// QuantityFromJson: InvalidArgument "must be a quantity string" for a value that is not a
// string, a number or null, Quantity::Parse's error for text that is not a quantity.
absl::StatusOr<Quantity> QuantityFromJson(const nlohmann::json& value);

}  // namespace devmgr::kubeapi
