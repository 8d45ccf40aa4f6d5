#include "kubeapi/resource_validation.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/field_errors.h"
#include "common/go_json.h"
#include "common/go_quote.h"
#include "common/k8s_names.h"
#include "common/node_operations.h"

namespace devmgr::kubeapi {
namespace {

// resource.k8s.io's limits.
constexpr size_t kDeviceRequestsMaxSize = kAllocationResultsMaxSize;
constexpr size_t kFirstAvailableDeviceRequestMaxSize = 8;
constexpr size_t kDeviceSelectorsMaxSize = 32;
constexpr size_t kDeviceConstraintsMaxSize = 32;
constexpr size_t kDeviceConfigMaxSize = 32;
constexpr size_t kCelSelectorExpressionMaxLength = 10 * 1024;
constexpr uint64_t kCelSelectorExpressionMaxCost = 1'000'000;
constexpr size_t kOpaqueParametersMaxLength = 10 * 1024;
constexpr size_t kDeviceMaxIdLength = 32;
constexpr size_t kPoolNameMaxLength = 253;
constexpr size_t kSliceMaxDevices = 128;
// Upstream's ResourceSliceMaxDevicesWithAdvancedFeatures: taints, counters, list attributes.
constexpr size_t kSliceMaxDevicesWithAdvancedFeatures = 64;

constexpr absl::string_view kRequestRefMessage =
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'";

std::string Index(absl::string_view path, size_t i) { return absl::StrCat(path, "[", i, "]"); }

// The names a constraint or a configuration may refer to: each request, and for a request with
// subrequests, "request/subrequest".
class RequestNames {
 public:
  explicit RequestNames(const DeviceClaim& claim) {
    for (const DeviceRequest& request : claim.requests) {
      std::set<std::string>& subs = names_[request.name];
      for (const DeviceSubRequest& sub : request.first_available) subs.insert(sub.name);
    }
  }

  bool Has(absl::string_view reference) const {
    std::vector<absl::string_view> segments = absl::StrSplit(reference, '/');
    if (segments.size() > 2) return false;
    auto request = names_.find(std::string(segments[0]));
    if (request == names_.end()) return false;
    return segments.size() == 1 || request->second.contains(std::string(segments[1]));
  }

 private:
  std::map<std::string, std::set<std::string>> names_;
};

// Upstream's validateSet and validateSlice: a list over its limit is one error and nothing
// more is checked in it; otherwise each item, then (for a set) each repeat of a key.
template <typename T, typename Check>
bool CheckSize(FieldErrors& errors, const std::vector<T>& items, size_t max,
               const std::string& path, Check check) {
  if (items.size() > max) {
    errors.TooMany(path, items.size(), max);
    return false;
  }
  for (size_t i = 0; i < items.size(); ++i) check(items[i], Index(path, i));
  return true;
}

// A repeat is reported at the item, or at its field `key_field` when the key is one.
template <typename T, typename Check, typename Key>
void CheckSet(FieldErrors& errors, const std::vector<T>& items, size_t max, const std::string& path,
              Check check, Key key, absl::string_view key_field = "") {
  if (!CheckSize(errors, items, max, path, check)) return;
  std::set<absl::string_view> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    if (seen.insert(key(items[i])).second) continue;
    errors.Duplicate(
        key_field.empty() ? Index(path, i) : absl::StrCat(Index(path, i), ".", key_field),
        key(items[i]));
  }
}

void CheckRequestName(FieldErrors& errors, absl::string_view name, const std::string& path) {
  errors.EachInvalid(path, name, Dns1123LabelErrors(name));
}

// An object's own name, or the generateName it is to be named from, as ValidateObjectMeta
// checks a name that must be a DNS-1123 subdomain (the API server names an object from its
// generateName before it validates it; a file read here may hold the generateName alone).
void CheckObjectName(FieldErrors& errors, const ObjectMeta& meta) {
  if (!meta.generate_name.empty()) {
    errors.EachInvalid("metadata.generateName", meta.generate_name,
                       Dns1123SubdomainPrefixErrors(meta.generate_name));
  }
  if (!meta.name.empty()) {
    errors.EachInvalid("metadata.name", meta.name, Dns1123SubdomainErrors(meta.name));
  } else if (meta.generate_name.empty()) {
    errors.Required("metadata.name", "name or generateName is required");
  }
}

void CheckDeviceClassName(FieldErrors& errors, absl::string_view name, const std::string& path) {
  if (name.empty()) {
    errors.Required(path);
  } else {
    errors.EachInvalid(path, name, Dns1123SubdomainErrors(name));
  }
}

void CheckSelectors(FieldErrors& errors, const std::vector<DeviceSelector>& selectors,
                    const std::string& path, SelectorCost cost) {
  CheckSize(errors, selectors, kDeviceSelectorsMaxSize, path,
            [&](const DeviceSelector& selector, const std::string& at) {
              if (!selector.cel_expression.has_value()) {
                errors.Required(at + ".cel");
              } else if (selector.cel_expression->size() > kCelSelectorExpressionMaxLength) {
                errors.TooLong(at + ".cel.expression", kCelSelectorExpressionMaxLength);
              } else if (const absl::StatusOr<uint64_t> most = cost(*selector.cel_expression);
                         !most.ok()) {
                errors.InvalidString(at + ".cel.expression", *selector.cel_expression,
                                     most.status().message());
              } else if (*most > kCelSelectorExpressionMaxCost) {
                errors.Forbidden(at + ".cel.expression", "too complex, exceeds cost limit");
              }
            });
}

void CheckAllocationMode(FieldErrors& errors, const ExactDeviceRequest& request,
                         const std::string& path) {
  if (request.allocation_mode == kAllocationModeAll) {
    if (request.count != 0) {
      errors.Invalid(path + ".count", absl::StrCat(request.count),
                     "must not be specified when allocationMode is 'All'");
    }
  } else if (request.allocation_mode == kAllocationModeExactCount) {
    if (request.count <= 0) {
      errors.Invalid(path + ".count", absl::StrCat(request.count), "must be greater than zero");
    }
  } else {
    errors.NotSupported(path + ".allocationMode", request.allocation_mode,
                        {kAllocationModeAll, kAllocationModeExactCount});
  }
}

void CheckToleration(FieldErrors& errors, const DeviceToleration& toleration,
                     const std::string& path) {
  if (!toleration.key.empty()) {
    errors.EachInvalid(path + ".key", toleration.key, QualifiedNameErrors(toleration.key));
  }
  if (toleration.op == "Exists") {
    if (!toleration.value.empty()) {
      errors.InvalidString(path + ".value", toleration.value,
                           "must be empty for operator `Exists`");
    }
  } else if (toleration.op == "Equal") {
    errors.EachInvalid(path + ".value", toleration.value, LabelValueErrors(toleration.value));
  } else {
    errors.NotSupported(path + ".operator", toleration.op, {"Equal", "Exists"});
  }
  const std::string& effect = toleration.effect;
  if (!effect.empty() && effect != "NoExecute" && effect != "NoSchedule" && effect != "None") {
    errors.NotSupported(path + ".effect", effect, {"NoExecute", "NoSchedule", "None"});
  }
}

// The fields of `exactly` and of a subrequest, at `path`.
void CheckExactRequest(FieldErrors& errors, const ExactDeviceRequest& request,
                       const std::string& path, SelectorCost cost) {
  CheckDeviceClassName(errors, request.device_class_name, path + ".deviceClassName");
  CheckSelectors(errors, request.selectors, path + ".selectors", cost);
  CheckAllocationMode(errors, request, path);
  for (size_t i = 0; i < request.tolerations.size(); ++i) {
    CheckToleration(errors, request.tolerations[i], Index(path + ".tolerations", i));
  }
}

void CheckRequest(FieldErrors& errors, const DeviceRequest& request, const std::string& path,
                  SelectorCost cost) {
  CheckRequestName(errors, request.name, path + ".name");
  const bool has_subs = !request.first_available.empty();
  const bool has_exactly = request.exactly.has_value();
  if (!has_subs && !has_exactly) {
    errors.Required(path, "exactly one of `exactly` or `firstAvailable` is required");
  } else if (has_subs && has_exactly) {
    errors.InvalidString(
        path, "null",
        "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set");
  } else if (has_subs) {
    CheckSet(
        errors, request.first_available, kFirstAvailableDeviceRequestMaxSize,
        path + ".firstAvailable",
        [&](const DeviceSubRequest& sub, const std::string& at) {
          CheckRequestName(errors, sub.name, at + ".name");
          CheckExactRequest(errors, sub.request, at, cost);
        },
        [](const DeviceSubRequest& sub) -> absl::string_view { return sub.name; }, "name");
  } else {
    CheckExactRequest(errors, *request.exactly, path + ".exactly", cost);
  }
}

void CheckRequestRef(FieldErrors& errors, const std::string& reference, const std::string& path,
                     const RequestNames& names) {
  std::vector<absl::string_view> segments = absl::StrSplit(reference, '/');
  if (segments.size() > 2) {
    errors.InvalidString(path, reference, kRequestRefMessage);
    return;
  }
  for (absl::string_view segment : segments) CheckRequestName(errors, segment, path);
  if (!names.Has(reference)) errors.InvalidString(path, reference, kRequestRefMessage);
}

void CheckRequestRefs(FieldErrors& errors, const std::vector<std::string>& references,
                      const std::string& path, const RequestNames& names) {
  CheckSet(
      errors, references, kDeviceRequestsMaxSize, path,
      [&](const std::string& reference, const std::string& at) {
        CheckRequestRef(errors, reference, at, names);
      },
      [](const std::string& reference) -> absl::string_view { return reference; });
}

void CheckCIdentifier(FieldErrors& errors, absl::string_view id, const std::string& path) {
  if (id.size() > kDeviceMaxIdLength) errors.TooLong(path, kDeviceMaxIdLength);
  errors.EachInvalid(path, id, CIdentifierErrors(id));
}

// A constraint's attribute: "domain/name", the domain a driver name, the name a C identifier.
void CheckFullyQualifiedName(FieldErrors& errors, const std::string& name,
                             const std::string& path) {
  std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
  if (parts.size() == 1) {
    CheckCIdentifier(errors, parts[0], path);
  } else if (parts.size() == 2) {
    if (parts[0].empty()) {
      errors.InvalidString(path, "", "the domain must not be empty");
    } else {
      CheckDriverName(errors, parts[0], path);
    }
    if (parts[1].empty()) {
      errors.InvalidString(path, "", "the name must not be empty");
    } else {
      CheckCIdentifier(errors, parts[1], path);
    }
  } else {
    errors.InvalidString(path, name, "must not contain more than one slash");
  }
  if (!absl::StrContains(name, '/')) {
    errors.InvalidString(path, name,
                         "a fully qualified name must be a domain and a name separated by a slash");
  }
}

void CheckConstraint(FieldErrors& errors, const DeviceConstraint& constraint,
                     const std::string& path, const RequestNames& names) {
  CheckRequestRefs(errors, constraint.requests, path + ".requests", names);
  if (constraint.match_attribute.has_value()) {
    CheckFullyQualifiedName(errors, *constraint.match_attribute, path + ".matchAttribute");
  } else if (constraint.distinct_attribute.has_value()) {
    CheckFullyQualifiedName(errors, *constraint.distinct_attribute, path + ".distinctAttribute");
  } else {
    errors.Required(path + ".matchAttribute");
  }
}

// An opaque configuration's parameters: a JSON object, at most 10 KiB as written.
void CheckParameters(FieldErrors& errors, const Json& parameters, const std::string& path) {
  if (parameters.is_null()) {
    errors.Required(path);
  } else if (parameters.dump().size() > kOpaqueParametersMaxLength) {
    errors.TooLong(path, kOpaqueParametersMaxLength);
  } else if (!parameters.is_object()) {
    errors.InvalidString(path, "<value omitted>", "must be a valid JSON object");
  }
}

// A DeviceConfiguration (a claim's or a class's): `opaque`, the API's one kind.
void CheckDeviceConfiguration(FieldErrors& errors, const Json& configuration,
                              const std::string& path) {
  auto opaque = configuration.find("opaque");
  if (opaque == configuration.end() || !opaque->is_object()) {
    errors.Required(path + ".opaque");
    return;
  }
  auto driver = opaque->find("driver");
  if (driver == opaque->end() || driver->is_string()) {
    CheckDriverName(errors, driver == opaque->end() ? "" : driver->get_ref<const std::string&>(),
                    path + ".opaque.driver");
  } else {
    errors.Invalid(path + ".opaque.driver", driver->dump(), "must be a string");
  }
  auto parameters = opaque->find("parameters");
  CheckParameters(errors, parameters != opaque->end() ? *parameters : Json(),
                  path + ".opaque.parameters");
}

void CheckConfig(FieldErrors& errors, const DeviceClaimConfiguration& config,
                 const std::string& path, const RequestNames& names) {
  CheckRequestRefs(errors, config.requests, path + ".requests", names);
  CheckDeviceConfiguration(errors, config.configuration, path);
}

// The strings of a requirement's `values` (non-strings left out); `bad` set when the field is
// there but not a list of strings. nlohmann's find answers end() for a value that is not an
// object, so these take any JSON.
std::vector<std::string> SelectorValues(const Json& requirement, bool& bad) {
  std::vector<std::string> values;
  auto it = requirement.find("values");
  if (it == requirement.end() || it->is_null()) return values;
  if (!it->is_array()) {
    bad = true;
    return values;
  }
  for (const Json& value : *it) {
    if (value.is_string()) {
      values.push_back(value.get<std::string>());
    } else {
      bad = true;
    }
  }
  return values;
}

std::string SelectorString(const Json& requirement, const char* key) {
  auto it = requirement.find(key);
  return it != requirement.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// GoRequirements: the requirements a term lists under `key`, as Go's %#v prints the internal
// type in "must have exactly one node selector term".
std::string GoRequirements(const Json& term, const char* key) {
  auto list = term.find(key);
  if (list == term.end() || !list->is_array()) return "[]core.NodeSelectorRequirement(nil)";
  std::vector<std::string> items;
  for (const Json& requirement : *list) {
    bool bad = false;
    std::vector<std::string> quoted;
    for (const std::string& value : SelectorValues(requirement, bad)) {
      quoted.push_back(GoQuote(value));
    }
    auto values = requirement.find("values");
    const bool listed = values != requirement.end() && values->is_array();
    items.push_back(absl::StrCat(
        "core.NodeSelectorRequirement{Key:", GoQuote(SelectorString(requirement, "key")),
        ", Operator:", GoQuote(SelectorString(requirement, "operator")), ", Values:",
        listed ? absl::StrCat("[]string{", absl::StrJoin(quoted, ", "), "}") : "[]string(nil)",
        "}"));
  }
  return absl::StrCat("[]core.NodeSelectorRequirement{", absl::StrJoin(items, ", "), "}");
}

std::string GoTerms(const Json* terms) {
  if (terms == nullptr || !terms->is_array()) return "[]core.NodeSelectorTerm(nil)";
  std::vector<std::string> items;
  for (const Json& term : *terms) {
    items.push_back(absl::StrCat(
        "core.NodeSelectorTerm{MatchExpressions:", GoRequirements(term, "matchExpressions"),
        ", MatchFields:", GoRequirements(term, "matchFields"), "}"));
  }
  return absl::StrCat("[]core.NodeSelectorTerm{", absl::StrJoin(items, ", "), "}");
}

// CheckNodeSelectorRequirement: core validation's ValidateNodeSelectorRequirement (label
// values checked, as the resource API asks) or, for `fields`, ValidateNodeFieldSelectorRequirement.
void CheckNodeSelectorRequirement(FieldErrors& errors, const Json& requirement,
                                  const std::string& at, bool fields) {
  if (!requirement.is_object()) {
    errors.InvalidString(at, requirement.dump(), "must be an object");
    return;
  }
  bool bad_values = false;
  const std::vector<std::string> values = SelectorValues(requirement, bad_values);
  if (bad_values)
    errors.InvalidString(at + ".values", requirement["values"].dump(), "must be a list of strings");
  const std::string key = SelectorString(requirement, "key");
  const std::string op = SelectorString(requirement, "operator");
  if (fields) {
    if (op == "In" || op == "NotIn") {
      if (values.size() != 1) {
        errors.Required(at + ".values",
                        "must be only one value when `operator` is 'In' or 'NotIn' for node "
                        "field selector");
      }
    } else {
      errors.InvalidString(at + ".operator", op, "not a valid selector operator");
    }
    if (key != "metadata.name") {
      errors.InvalidString(at + ".key", key, "not a valid field selector key");
    } else {
      for (size_t i = 0; i < values.size(); ++i) {
        errors.EachInvalid(absl::StrCat(at, ".values[", i, "]"), values[i],
                           Dns1123SubdomainErrors(values[i]));
      }
    }
    return;
  }
  if (op == "In" || op == "NotIn") {
    if (values.empty()) {
      errors.Required(at + ".values", "must be specified when `operator` is 'In' or 'NotIn'");
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!values.empty()) {
      errors.Forbidden(at + ".values",
                       "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    }
  } else if (op == "Gt" || op == "Lt") {
    if (values.size() != 1) {
      errors.Required(at + ".values",
                      "must be specified single value when `operator` is 'Lt' or 'Gt'");
    }
  } else {
    errors.InvalidString(at + ".operator", op, "not a valid selector operator");
  }
  errors.EachInvalid(at + ".key", key, QualifiedNameErrors(key));
  for (size_t i = 0; i < values.size(); ++i) {
    errors.EachInvalid(absl::StrCat(at, ".values[", i, "]"), values[i],
                       LabelValueErrors(values[i]));
  }
}

// CheckNodeSelector: core validation's ValidateNodeSelector, as the resource API calls it for a
// slice's or a device's nodeSelector; `one_term` adds the slice's own rule of exactly one term.
void CheckNodeSelector(FieldErrors& errors, const Json& selector, const std::string& at,
                       bool one_term) {
  if (!selector.is_object()) {
    errors.InvalidString(at, selector.dump(), "must be an object");
    return;
  }
  const std::string terms_at = at + ".nodeSelectorTerms";
  auto it = selector.find("nodeSelectorTerms");
  const Json* terms = it == selector.end() || it->is_null() ? nullptr : &*it;
  if (terms != nullptr && !terms->is_array()) {
    errors.InvalidString(terms_at, terms->dump(), "must be a list");
    return;
  }
  if (terms == nullptr || terms->empty()) {
    errors.Required(terms_at, "must have at least one node selector term");
  } else {
    for (size_t i = 0; i < terms->size(); ++i) {
      const Json& term = (*terms)[i];
      const std::string term_at = absl::StrCat(terms_at, "[", i, "]");
      if (!term.is_object()) {
        errors.InvalidString(term_at, term.dump(), "must be an object");
        continue;
      }
      for (const auto& [key, fields] :
           {std::pair{"matchExpressions", false}, std::pair{"matchFields", true}}) {
        auto list = term.find(key);
        if (list == term.end() || list->is_null()) continue;
        if (!list->is_array()) {
          errors.InvalidString(absl::StrCat(term_at, ".", key), list->dump(), "must be a list");
          continue;
        }
        for (size_t j = 0; j < list->size(); ++j) {
          CheckNodeSelectorRequirement(errors, (*list)[j],
                                       absl::StrCat(term_at, ".", key, "[", j, "]"), fields);
        }
      }
    }
  }
  if (one_term && (terms == nullptr || terms->size() != 1)) {
    errors.Invalid(terms_at, GoTerms(terms), "must have exactly one node selector term");
  }
}

// CheckDeviceNodeSelection: a device's own nodeName, nodeSelector or allNodes: exactly one of them
// when the slice selects nodes per device, none otherwise.
void CheckDeviceNodeSelection(FieldErrors& errors, const Device& device, const std::string& at,
                              bool per_device) {
  auto set = [&](const char* key) -> const Json* {
    auto it = device.extra.find(key);
    return it == device.extra.end() || it->is_null() ? nullptr : &*it;
  };
  const Json* node_name = set("nodeName");
  const Json* node_selector = set("nodeSelector");
  const Json* all_nodes = set("allNodes");
  if (!per_device) {
    if (node_name != nullptr || node_selector != nullptr || all_nodes != nullptr) {
      errors.InvalidString(at, "null",
                           "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                           "`perDeviceNodeSelection` is set to true in the ResourceSlice spec");
    }
    return;
  }
  std::vector<absl::string_view> fields;
  if (node_name != nullptr) {
    if (!node_name->is_string()) {
      errors.InvalidString(at + ".nodeName", node_name->dump(), "must be a string");
    } else if (const std::string& name = node_name->get_ref<const std::string&>(); name.empty()) {
      errors.InvalidString(at + ".nodeName", "", "must not be empty");
    } else {
      fields.push_back("`nodeName`");
      errors.EachInvalid(at + ".nodeName", name, Dns1123SubdomainErrors(name));
    }
  }
  if (node_selector != nullptr) {
    fields.push_back("`nodeSelector`");
    CheckNodeSelector(errors, *node_selector, at + ".nodeSelector", /*one_term=*/false);
  }
  if (all_nodes != nullptr) {
    if (all_nodes->is_boolean() && all_nodes->get<bool>()) {
      fields.push_back("`allNodes`");
    } else {
      errors.Invalid(at + ".allNodes", all_nodes->dump(), "must be either unset or set to true");
    }
  }
  constexpr absl::string_view kOneOf =
      "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec";
  if (fields.empty()) {
    errors.Required(at, kOneOf);
  } else if (fields.size() > 1) {
    errors.InvalidString(at, absl::StrCat("{", absl::StrJoin(fields, ", "), "}"), kOneOf);
  }
}

// A device attribute of a list type (DRAListTypeAttributes): `ints`, `bools`, `strings` or
// `versions` in place of a single value.
bool HasListAttribute(const Device& device) {
  const auto attributes = device.extra.find("attributes");
  if (attributes == device.extra.end() || !attributes->is_object()) return false;
  return absl::c_any_of(attributes->items(), [](const auto& attribute) {
    const Json& value = attribute.value();
    return value.is_object() && (value.contains("ints") || value.contains("bools") ||
                                 value.contains("strings") || value.contains("versions"));
  });
}

// A slice's devices or shared counters (one of them), its devices at most 128 (64 when one has
// taints, consumes counters or has a list attribute), each named by a unique DNS label, with its
// own node selection.
void CheckSliceContents(FieldErrors& errors, const std::vector<Device>& devices,
                        const std::vector<CounterSet>& shared_counters, bool per_device) {
  if (!shared_counters.empty() && !devices.empty()) {
    errors.InvalidString("spec", "", "only one of `sharedCounters` or `devices` is allowed");
  }
  const bool advanced = absl::c_any_of(devices, [](const Device& device) {
    return !device.taints.empty() || !device.consumes_counters.empty() || HasListAttribute(device);
  });
  CheckSet(
      errors, devices, advanced ? kSliceMaxDevicesWithAdvancedFeatures : kSliceMaxDevices,
      "spec.devices",
      [&](const Device& device, const std::string& at) {
        errors.EachInvalid(at + ".name", device.name, Dns1123LabelErrors(device.name));
        CheckDeviceNodeSelection(errors, device, at, per_device);
      },
      [](const Device& device) -> absl::string_view { return device.name; }, "name");
}

// spec.skipNodeOperations: a set of resourceapi.SkipNodeOperation's values, in which skipping
// NodePrepareResources needs NodeUnprepareResources (or "*") skipped too: a pod started without
// its driver would otherwise wait for that driver to end. That rule names the whole list, as
// JSON, like upstream's.
void CheckSkipNodeOperations(FieldErrors& errors, const std::vector<std::string>& operations,
                             const std::string& path) {
  std::set<absl::string_view> seen;
  for (size_t i = 0; i < operations.size(); ++i) {
    const std::string& operation = operations[i];
    if (operation != kSkipAllNodeOperations && operation != kSkipNodePrepareResources &&
        operation != kSkipNodeUnprepareResources) {
      errors.NotSupported(
          Index(path, i), operation,
          {kSkipAllNodeOperations, kSkipNodePrepareResources, kSkipNodeUnprepareResources});
    } else if (!seen.insert(operation).second) {
      errors.Duplicate(Index(path, i), operation);
    }
  }
  if (seen.contains(kSkipNodePrepareResources) && !seen.contains(kSkipNodeUnprepareResources) &&
      !seen.contains(kSkipAllNodeOperations)) {
    std::string listed = "[";
    for (const std::string& operation : operations) {
      if (listed.size() > 1) listed += ',';
      AppendGoJsonString(listed, operation);
    }
    listed += ']';
    errors.Invalid(path, listed,
                   absl::StrCat(kSkipNodePrepareResources, " cannot be skipped unless ",
                                kSkipNodeUnprepareResources, " is also skipped"));
  }
}

}  // namespace

absl::Status ValidateResourceClaim(const ResourceClaim& claim, SelectorCost cost) {
  const DeviceClaim& spec = claim.spec;
  const RequestNames names(spec);
  FieldErrors errors;
  // Its metadata as ValidateObjectMeta with ValidateResourceClaimName. A claim read from a file
  // may leave its namespace to the reader (the pod's, or "default").
  CheckObjectName(errors, claim.metadata);
  if (!claim.metadata.namespace_name.empty()) {
    errors.EachInvalid("metadata.namespace", claim.metadata.namespace_name,
                       Dns1123LabelErrors(claim.metadata.namespace_name));
  }
  CheckSet(
      errors, spec.requests, kDeviceRequestsMaxSize, "spec.devices.requests",
      [&](const DeviceRequest& request, const std::string& at) {
        CheckRequest(errors, request, at, cost);
      },
      [](const DeviceRequest& request) -> absl::string_view { return request.name; }, "name");
  CheckSize(errors, spec.constraints, kDeviceConstraintsMaxSize, "spec.devices.constraints",
            [&](const DeviceConstraint& constraint, const std::string& at) {
              CheckConstraint(errors, constraint, at, names);
            });
  CheckSize(errors, spec.config, kDeviceConfigMaxSize, "spec.devices.config",
            [&](const DeviceClaimConfiguration& config, const std::string& at) {
              CheckConfig(errors, config, at, names);
            });
  return errors.Result();
}

absl::Status ValidateDeviceClass(const DeviceClass& device_class, SelectorCost cost) {
  FieldErrors errors;
  CheckObjectName(errors, device_class.metadata);
  CheckSelectors(errors, device_class.selectors, "spec.selectors", cost);
  CheckSize(errors, device_class.config, kDeviceConfigMaxSize, "spec.config",
            [&](const Json& config, const std::string& at) {
              CheckDeviceConfiguration(errors, config, at);
            });
  if (device_class.extended_resource_name.has_value() &&
      !IsExtendedResourceName(*device_class.extended_resource_name)) {
    errors.InvalidString("spec.extendedResourceName", *device_class.extended_resource_name,
                         "must be a valid extended resource name");
  }
  return errors.Result();
}

absl::Status ValidateResourceSlice(const ResourceSlice& slice) {
  FieldErrors errors;
  const ResourceSliceSpec& spec = slice.spec;
  CheckDriverName(errors, spec.driver, "spec.driver");
  const std::string& pool = spec.pool.name;
  if (pool.empty()) {
    errors.Required("spec.pool.name");
  } else {
    if (pool.size() > kPoolNameMaxLength) errors.TooLong("spec.pool.name", kPoolNameMaxLength);
    for (absl::string_view part : absl::StrSplit(pool, '/')) {
      errors.EachInvalid("spec.pool.name", part, Dns1123SubdomainErrors(part));
    }
  }
  if (spec.pool.resource_slice_count <= 0) {
    errors.Invalid("spec.pool.resourceSliceCount", absl::StrCat(spec.pool.resource_slice_count),
                   "must be greater than zero");
  }
  if (spec.pool.generation < 0) {
    errors.Invalid("spec.pool.generation", absl::StrCat(spec.pool.generation),
                   "must be greater than or equal to zero");
  }

  std::vector<absl::string_view> node_selection;
  if (spec.node_name.has_value()) {
    if (spec.node_name->empty()) {
      errors.InvalidString("spec.nodeName", "",
                           "must be either unset or set to a non-empty string");
    } else {
      node_selection.push_back("`nodeName`");
      errors.EachInvalid("spec.nodeName", *spec.node_name, Dns1123SubdomainErrors(*spec.node_name));
    }
  }
  if (spec.node_selector.has_value()) {
    node_selection.push_back("`nodeSelector`");
    CheckNodeSelector(errors, *spec.node_selector, "spec.nodeSelector", /*one_term=*/true);
  }
  for (const auto& [set, field, name] :
       {std::tuple{spec.all_nodes, "spec.allNodes", "`allNodes`"},
        std::tuple{spec.per_device_node_selection, "spec.perDeviceNodeSelection",
                   "`perDeviceNodeSelection`"}}) {
    if (!set.has_value()) continue;
    if (*set) {
      node_selection.push_back(name);
    } else {
      errors.Invalid(field, "false", "must be either unset or set to true");
    }
  }
  constexpr absl::string_view kOneNodeSelection =
      "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required";
  if (node_selection.empty()) {
    errors.Required("spec", kOneNodeSelection);
  } else if (node_selection.size() > 1) {
    errors.InvalidString("spec", absl::StrCat("{", absl::StrJoin(node_selection, ", "), "}"),
                         absl::StrCat(kOneNodeSelection, ", but multiple fields are set"));
  }
  CheckSliceContents(errors, spec.devices, spec.shared_counters,
                     spec.per_device_node_selection.value_or(false));
  CheckSkipNodeOperations(errors, spec.skip_node_operations, "spec.skipNodeOperations");
  return errors.Result();
}

absl::Status ValidateSliceContents(const std::vector<Device>& devices,
                                   const std::vector<CounterSet>& shared_counters,
                                   bool per_device_node_selection) {
  FieldErrors errors;
  CheckSliceContents(errors, devices, shared_counters, per_device_node_selection);
  return errors.Result();
}

absl::StatusOr<ResourceClaim> DecodeValidResourceClaim(const Json& object, SelectorCost cost) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(object);
  if (!claim.ok()) return claim;
  if (absl::Status valid = ValidateResourceClaim(*claim, cost); !valid.ok()) return valid;
  return claim;
}

absl::StatusOr<DeviceClass> DecodeValidDeviceClass(const Json& object, SelectorCost cost) {
  absl::StatusOr<DeviceClass> device_class = DecodeDeviceClass(object);
  if (!device_class.ok()) return device_class;
  if (absl::Status valid = ValidateDeviceClass(*device_class, cost); !valid.ok()) return valid;
  return device_class;
}

}  // namespace devmgr::kubeapi
