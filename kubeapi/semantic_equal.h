// SemanticEqual: upstream's apiequality.Semantic.DeepEqual for the parts of API objects that
// devmgr keeps as JSON (a node selector, a device's attributes and capacity, counters).
//
// Two values are the same when they differ only in ways the API server's round trip makes them
// differ, so that a controller comparing what it wants with what the server stored does not write
// again for nothing:
//   - a field that is absent, null, an empty list or an empty object is one value (Go's nil and
//     empty slices and maps are equal there, and omitempty leaves them out);
//   - a quantity equals one of the same value however it is written ("1Gi", "1024Mi",
//     1073741824): the server stores its canonical form. Which fields are quantities is given by
//     patterns of keys from the compared value down, "*" for any key of a map and "[]" for any
//     item of a list; text that does not parse as a quantity compares as text.
// Everything else compares exactly.
#pragma once

#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

using QuantityField = std::vector<std::string_view>;

bool SemanticEqual(const nlohmann::json& a, const nlohmann::json& b,
                   absl::Span<const QuantityField> quantities = {});

// The quantity fields of a device's fields kept as JSON (its capacity and request policies), and
// of a counters map (counter name -> {value}).
absl::Span<const QuantityField> DeviceQuantityFields();
absl::Span<const QuantityField> CounterQuantityFields();

}  // namespace devmgr::kubeapi
