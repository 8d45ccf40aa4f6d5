#include "kubeapi/semantic_equal.h"

#include <optional>

#include "absl/container/inlined_vector.h"
#include "kubeapi/quantity.h"
#include "kubeapi/quantity_json.h"

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;
// The quantity fields still possible at the current depth.
using Candidates = absl::InlinedVector<const QuantityField*, 4>;

bool IsEmpty(const Json& value) {
  return value.is_null() || ((value.is_array() || value.is_object()) && value.empty());
}

// The candidates whose key at `depth` is `key` (or "*" for a map's key, which an object's key
// stands for too: the patterns do not tell maps from structures).
Candidates Descend(const Candidates& candidates, size_t depth, std::string_view key) {
  Candidates next;
  for (const QuantityField* field : candidates) {
    if (field->size() > depth && ((*field)[depth] == key || (*field)[depth] == "*")) {
      next.push_back(field);
    }
  }
  return next;
}

bool EndsHere(const Candidates& candidates, size_t depth) {
  for (const QuantityField* field : candidates) {
    if (field->size() == depth) return true;
  }
  return false;
}

std::optional<Quantity> AsQuantity(const Json& value) {
  absl::StatusOr<Quantity> quantity = QuantityFromJson(value);
  if (!quantity.ok()) return std::nullopt;
  return *quantity;
}

bool Equal(const Json& a, const Json& b, const Candidates& candidates, size_t depth) {
  if (IsEmpty(a) && IsEmpty(b)) return true;
  if (EndsHere(candidates, depth) && a != b) {
    const std::optional<Quantity> qa = AsQuantity(a);
    const std::optional<Quantity> qb = AsQuantity(b);
    return qa.has_value() && qb.has_value() && *qa == *qb;
  }
  if (a.is_object() && b.is_object()) {
    static const Json kAbsent;
    for (const auto& [key, value] : a.items()) {
      auto other = b.find(key);
      if (!Equal(value, other == b.end() ? kAbsent : *other, Descend(candidates, depth, key),
                 depth + 1)) {
        return false;
      }
    }
    for (const auto& [key, value] : b.items()) {
      if (!a.contains(key) && !IsEmpty(value)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    const Candidates items = Descend(candidates, depth, "[]");
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Equal(a[i], b[i], items, depth + 1)) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace

bool SemanticEqual(const Json& a, const Json& b, absl::Span<const QuantityField> quantities) {
  Candidates candidates;
  for (const QuantityField& field : quantities) candidates.push_back(&field);
  return Equal(a, b, candidates, 0);
}

absl::Span<const QuantityField> DeviceQuantityFields() {
  static const std::vector<QuantityField> kFields = {
      {"capacity", "*", "value"},
      {"capacity", "*", "requestPolicy", "default"},
      {"capacity", "*", "requestPolicy", "validValues", "[]"},
      {"capacity", "*", "requestPolicy", "validRange", "min"},
      {"capacity", "*", "requestPolicy", "validRange", "max"},
      {"capacity", "*", "requestPolicy", "validRange", "step"},
  };
  return kFields;
}

absl::Span<const QuantityField> CounterQuantityFields() {
  static const std::vector<QuantityField> kFields = {{"*", "value"}};
  return kFields;
}

}  // namespace devmgr::kubeapi
