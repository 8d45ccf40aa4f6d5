#include "structured/node_selector.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::structured {
namespace {

using Json = nlohmann::json;

struct Requirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
};

absl::StatusOr<Requirement> ReadRequirement(const Json& object, const std::string& path) {
  if (!object.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": must be an object"));
  Requirement requirement;
  const Json key = object.value("key", Json());
  const Json op = object.value("operator", Json());
  if (!key.is_string()) return absl::InvalidArgumentError(absl::StrCat(path, ".key: must be a string"));
  if (!op.is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".operator: must be a string"));
  }
  requirement.key = key.get<std::string>();
  requirement.op = op.get<std::string>();
  const Json values = object.value("values", Json::array());
  if (!values.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".values: must be a list"));
  }
  for (const Json& value : values) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".values: must be strings"));
    }
    requirement.values.push_back(value.get<std::string>());
  }
  return requirement;
}

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  for (const std::string& item : values) {
    if (item == value) return true;
  }
  return false;
}

// A label requirement (matchExpressions[]).
absl::StatusOr<bool> LabelMatches(const Requirement& requirement, const std::string& path,
                                  const Node& node) {
  auto label = node.labels.find(requirement.key);
  const bool has = label != node.labels.end();
  const std::string& op = requirement.op;
  if (op == "In" || op == "NotIn") {
    if (requirement.values.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".values: Required value: must be specified when `operator` is '",
                       op, "'"));
    }
    const bool in = has && Contains(requirement.values, label->second);
    return op == "In" ? in : !in;
  }
  if (op == "Exists" || op == "DoesNotExist") {
    if (!requirement.values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".values: Forbidden: may not be specified when `operator` is '", op, "'"));
    }
    return op == "Exists" ? has : !has;
  }
  if (op == "Gt" || op == "Lt") {
    int64_t bound = 0;
    if (requirement.values.size() != 1 || !absl::SimpleAtoi(requirement.values[0], &bound)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".values: Invalid value: for 'Gt', 'Lt' operators, exactly one integer value "
                "must be specified"));
    }
    int64_t value = 0;
    if (!has || !absl::SimpleAtoi(label->second, &value)) return false;
    return op == "Gt" ? value > bound : value < bound;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ".operator: Invalid value: \"", op, "\": not a valid selector operator"));
}

// A field requirement (matchFields[]): only metadata.name, with In or NotIn and one value.
absl::StatusOr<bool> FieldMatches(const Requirement& requirement, const std::string& path,
                                  const Node& node) {
  if (requirement.key != "metadata.name") {
    return absl::InvalidArgumentError(absl::StrCat(path, ".key: Invalid value: \"",
                                                   requirement.key, "\": not a valid field selector key"));
  }
  if (requirement.op != "In" && requirement.op != "NotIn") {
    return absl::InvalidArgumentError(absl::StrCat(path, ".operator: Invalid value: \"",
                                                   requirement.op, "\": not a valid selector operator"));
  }
  if (requirement.values.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".values: Required value: must be only one value when `operator` is '",
                     requirement.op, "' for node field selector"));
  }
  const bool in = node.name == requirement.values[0];
  return requirement.op == "In" ? in : !in;
}

}  // namespace

absl::StatusOr<bool> NodeSelectorMatches(const Json& selector, const Node& node) {
  if (!selector.is_object()) return absl::InvalidArgumentError("node selector: must be an object");
  const Json terms = selector.value("nodeSelectorTerms", Json::array());
  if (!terms.is_array()) {
    return absl::InvalidArgumentError("nodeSelectorTerms: must be a list");
  }
  // Every term is checked, so that a selector that does not parse is an error whatever the node.
  bool matched = false;
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string term_path = absl::StrCat("nodeSelectorTerms[", t, "]");
    const Json& term = terms[t];
    if (!term.is_object()) return absl::InvalidArgumentError(absl::StrCat(term_path, ": must be an object"));
    bool term_matches = true;
    size_t requirements = 0;
    for (const char* list : {"matchExpressions", "matchFields"}) {
      const Json items = term.value(list, Json::array());
      if (!items.is_array()) {
        return absl::InvalidArgumentError(absl::StrCat(term_path, ".", list, ": must be a list"));
      }
      for (size_t i = 0; i < items.size(); ++i) {
        const std::string path = absl::StrCat(term_path, ".", list, "[", i, "]");
        absl::StatusOr<Requirement> requirement = ReadRequirement(items[i], path);
        if (!requirement.ok()) return requirement.status();
        absl::StatusOr<bool> ok = std::string(list) == "matchFields"
                                      ? FieldMatches(*requirement, path, node)
                                      : LabelMatches(*requirement, path, node);
        if (!ok.ok()) return ok.status();
        term_matches = term_matches && *ok;
        ++requirements;
      }
    }
    if (requirements > 0 && term_matches) matched = true;
  }
  return matched;
}

absl::StatusOr<bool> NodeMatches(const Node& node, const std::string& node_name, bool all_nodes,
                                 const Json* selector) {
  if (!node_name.empty()) return node.name == node_name;
  if (all_nodes) return true;
  if (selector != nullptr) return NodeSelectorMatches(*selector, node);
  return false;
}

}  // namespace devmgr::structured
