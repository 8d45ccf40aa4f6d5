#include "node/claim_manifest.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/k8s_names.h"
#include "kubeapi/quantity.h"
#include "kubeapi/yaml_objects.h"
#include "node/manifest_fields.h"

namespace devmgr::node {
namespace {

// ReadRequired: a string field that must be present and not empty.
absl::StatusOr<std::string> ReadRequired(const YAML::Node& node, absl::string_view field) {
  absl::StatusOr<std::string> value = ReadString(node, field);
  if (value.ok() && value->empty()) return FieldError(field, "is required");
  return value;
}

// ReadOptional: a string field that may be absent (std::nullopt).
absl::StatusOr<std::optional<std::string>> ReadOptional(const YAML::Node& node,
                                                        absl::string_view field) {
  if (!IsPresent(node)) return std::optional<std::string>();
  absl::StatusOr<std::string> value = ReadString(node, field);
  if (!value.ok()) return value.status();
  return std::optional<std::string>(*std::move(value));
}

// ReadNames: a list field of non-empty strings (absent: none).
absl::StatusOr<std::vector<std::string>> ReadNames(const YAML::Node& list,
                                                   const std::string& field) {
  std::vector<std::string> names;
  if (!IsPresent(list)) return names;
  if (!list.IsSequence()) return FieldError(field, "must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    absl::StatusOr<std::string> name = ReadRequired(list[i], absl::StrCat(field, "[", i, "]"));
    if (!name.ok()) return name.status();
    names.push_back(*std::move(name));
  }
  return names;
}

// ForEachItem calls `read(item, "FIELD[i]")` for each item of a list field (absent: none).
template <typename Read>
absl::Status ForEachItem(const YAML::Node& list, absl::string_view field, Read read) {
  if (!IsPresent(list)) return absl::OkStatus();
  if (!list.IsSequence()) return FieldError(field, "must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = absl::StrCat(field, "[", i, "]");
    if (!list[i].IsMap()) return FieldError(where, "must be an object");
    if (absl::Status status = read(list[i], where); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ReadOwner(const YAML::Node& node, const std::string& where,
                       dra::OwnerReference& owner) {
  for (auto [key, target] :
       {std::pair{"apiVersion", &owner.api_version}, std::pair{"kind", &owner.kind},
        std::pair{"name", &owner.name}, std::pair{"uid", &owner.uid}}) {
    absl::StatusOr<std::string> value = ReadString(node[key], absl::StrCat(where, ".", key));
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  const YAML::Node controller = node["controller"];
  if (IsPresent(controller)) {
    if (!controller.IsScalar() ||
        (controller.Scalar() != "true" && controller.Scalar() != "false")) {
      return FieldError(absl::StrCat(where, ".controller"), "must be true or false");
    }
    owner.controller = controller.Scalar() == "true";
  }
  return absl::OkStatus();
}

absl::Status ReadResult(const YAML::Node& node, const std::string& where,
                        dra::DeviceRequestAllocationResult& result) {
  for (auto [key, target] :
       {std::pair{"request", &result.request}, std::pair{"driver", &result.driver},
        std::pair{"pool", &result.pool}, std::pair{"device", &result.device}}) {
    absl::StatusOr<std::string> value = ReadRequired(node[key], absl::StrCat(where, ".", key));
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  absl::StatusOr<std::optional<std::string>> share_id =
      ReadOptional(node["shareID"], absl::StrCat(where, ".shareID"));
  if (!share_id.ok()) return share_id.status();
  result.share_id = *std::move(share_id);
  absl::StatusOr<std::optional<std::string>> admin =
      ReadOptional(node["adminAccess"], absl::StrCat(where, ".adminAccess"));
  if (!admin.ok()) return admin.status();
  if (admin->has_value() && **admin != "true" && **admin != "false") {
    return FieldError(absl::StrCat(where, ".adminAccess"), "must be true or false");
  }
  result.admin_access = admin->value_or("false") == "true";
  absl::StatusOr<std::vector<std::string>> skips =
      ReadNames(node["skipNodeOperations"], absl::StrCat(where, ".skipNodeOperations"));
  if (!skips.ok()) return skips.status();
  result.skip_node_operations = *std::move(skips);
  const YAML::Node consumed = node["consumedCapacity"];
  if (IsPresent(consumed)) {
    const std::string field = absl::StrCat(where, ".consumedCapacity");
    if (!IsMapNode(consumed)) return FieldError(field, "must be a map of quantities");
    for (const auto& entry : consumed) {
      const std::string name = entry.first.Scalar();
      absl::StatusOr<std::string> amount =
          ReadRequired(entry.second, absl::StrCat(field, ".", name));
      if (!amount.ok()) return amount.status();
      if (!kubeapi::Quantity::Parse(*amount).ok()) {
        return FieldError(absl::StrCat(field, ".", name),
                          absl::StrCat("\"", *amount, "\" is not a quantity"));
      }
      result.consumed_capacity[name] = *std::move(amount);
    }
  }
  return absl::OkStatus();
}

// status.allocation.devices.config[]: each an opaque configuration (the API's only kind).
absl::Status ReadConfig(const YAML::Node& node, const std::string& where,
                        dra::DeviceAllocationConfiguration& config) {
  absl::StatusOr<std::string> source = ReadRequired(node["source"], absl::StrCat(where, ".source"));
  if (!source.ok()) return source.status();
  if (*source != "FromClass" && *source != "FromClaim") {
    return FieldError(absl::StrCat(where, ".source"), "must be FromClass or FromClaim");
  }
  config.source = *std::move(source);
  absl::StatusOr<std::vector<std::string>> requests =
      ReadNames(node["requests"], absl::StrCat(where, ".requests"));
  if (!requests.ok()) return requests.status();
  config.requests = *std::move(requests);
  const YAML::Node opaque = node["opaque"];
  const std::string opaque_field = absl::StrCat(where, ".opaque");
  if (!IsMapNode(opaque)) return FieldError(opaque_field, "is required");
  absl::StatusOr<std::string> driver =
      ReadRequired(opaque["driver"], absl::StrCat(opaque_field, ".driver"));
  if (!driver.ok()) return driver.status();
  config.driver = *std::move(driver);
  const std::string parameters_field = absl::StrCat(opaque_field, ".parameters");
  if (!IsPresent(opaque["parameters"])) return FieldError(parameters_field, "is required");
  absl::StatusOr<nlohmann::json> parameters = kubeapi::YamlToJson(opaque["parameters"]);
  if (!parameters.ok() || !parameters->is_object()) {
    return FieldError(parameters_field, "must be an object");
  }
  config.parameters = parameters->dump();
  return absl::OkStatus();
}

absl::Status ReadConsumer(const YAML::Node& node, const std::string& where,
                          dra::ResourceClaimConsumerReference& consumer) {
  for (auto [key, target] :
       {std::pair{"apiGroup", &consumer.api_group}, std::pair{"resource", &consumer.resource},
        std::pair{"name", &consumer.name}, std::pair{"uid", &consumer.uid}}) {
    absl::StatusOr<std::string> value = ReadString(node[key], absl::StrCat(where, ".", key));
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<dra::ResourceClaim> ReadResourceClaim(const YAML::Node& root) {
  if (!IsMapNode(root)) return absl::InvalidArgumentError("a ResourceClaim must be an object");
  dra::ResourceClaim claim;
  const YAML::Node metadata = root["metadata"];
  if (!IsMapNode(metadata)) return FieldError("metadata", "is required");
  for (auto [key, target] : {std::pair{"uid", &claim.uid}, std::pair{"name", &claim.name},
                             std::pair{"namespace", &claim.namespace_name}}) {
    absl::StatusOr<std::string> value = ReadString(metadata[key], absl::StrCat("metadata.", key));
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  if (claim.name.empty()) return FieldError("metadata.name", "is required");
  // As the API server's ValidateResourceClaimName (a claim read from the API server passed it).
  if (absl::Status valid =
          NameError("metadata.name", claim.name, Dns1123SubdomainErrors(claim.name));
      !valid.ok()) {
    return valid;
  }
  if (claim.uid.empty()) claim.uid = NewUid();
  const YAML::Node annotations = metadata["annotations"];
  if (IsPresent(annotations) && !annotations.IsMap()) {
    return FieldError("metadata.annotations", "must be an object");
  }
  if (IsPresent(annotations)) {
    absl::StatusOr<std::optional<std::string>> pod_claim_name =
        ReadOptional(annotations[std::string(dra::kPodClaimNameAnnotation)],
                     absl::StrCat("metadata.annotations[", dra::kPodClaimNameAnnotation, "]"));
    if (!pod_claim_name.ok()) return pod_claim_name.status();
    claim.pod_claim_name = *std::move(pod_claim_name);
  }
  if (absl::Status owners = ForEachItem(metadata["ownerReferences"], "metadata.ownerReferences",
                                        [&](const YAML::Node& item, const std::string& where) {
                                          return ReadOwner(item, where,
                                                           claim.owner_references.emplace_back());
                                        });
      !owners.ok()) {
    return owners;
  }

  const YAML::Node status = root["status"];
  if (!IsPresent(status)) return claim;
  if (!status.IsMap()) return FieldError("status", "must be an object");
  const YAML::Node allocation = status["allocation"];
  if (IsPresent(allocation)) {
    if (!allocation.IsMap()) return FieldError("status.allocation", "must be an object");
    const YAML::Node devices = allocation["devices"];
    if (IsPresent(devices) && !devices.IsMap()) {
      return FieldError("status.allocation.devices", "must be an object");
    }
    claim.allocation.emplace();
    if (absl::Status results = ForEachItem(IsMapNode(devices) ? devices["results"] : YAML::Node(),
                                           "status.allocation.devices.results",
                                           [&](const YAML::Node& item, const std::string& where) {
                                             return ReadResult(item, where,
                                                               claim.allocation->emplace_back());
                                           });
        !results.ok()) {
      return results;
    }
    if (absl::Status configs =
            ForEachItem(IsMapNode(devices) ? devices["config"] : YAML::Node(),
                        "status.allocation.devices.config",
                        [&](const YAML::Node& item, const std::string& where) {
                          return ReadConfig(item, where, claim.allocation_config.emplace_back());
                        });
        !configs.ok()) {
      return configs;
    }
  }
  if (absl::Status reserved = ForEachItem(status["reservedFor"], "status.reservedFor",
                                          [&](const YAML::Node& item, const std::string& where) {
                                            return ReadConsumer(item, where,
                                                                claim.reserved_for.emplace_back());
                                          });
      !reserved.ok()) {
    return reserved;
  }
  return claim;
}

absl::Status ReadPodResourceClaims(const YAML::Node& spec, const YAML::Node& status,
                                   dra::Pod& pod) {
  std::set<std::string> names;
  if (absl::Status claims = ForEachItem(
          spec["resourceClaims"], "spec.resourceClaims",
          [&](const YAML::Node& item, const std::string& where) -> absl::Status {
            dra::PodResourceClaim& claim = pod.resource_claims.emplace_back();
            absl::StatusOr<std::string> name =
                ReadRequired(item["name"], absl::StrCat(where, ".name"));
            if (!name.ok()) return name.status();
            // As the API server's validatePodResourceClaim: the entry's name unique and a
            // DNS label, the claim or template it names a DNS subdomain, and so the name of
            // the claim made from a template, "<pod>-<entry>".
            if (!names.insert(*name).second) {
              return FieldError(absl::StrCat(where, ".name"),
                                absl::StrCat("duplicate claim name \"", *name, "\""));
            }
            if (absl::Status valid =
                    NameError(absl::StrCat(where, ".name"), *name, Dns1123LabelErrors(*name));
                !valid.ok()) {
              return valid;
            }
            claim.name = *std::move(name);
            absl::StatusOr<std::optional<std::string>> claim_name =
                ReadOptional(item["resourceClaimName"], absl::StrCat(where, ".resourceClaimName"));
            if (!claim_name.ok()) return claim_name.status();
            absl::StatusOr<std::optional<std::string>> template_name =
                ReadOptional(item["resourceClaimTemplateName"],
                             absl::StrCat(where, ".resourceClaimTemplateName"));
            if (!template_name.ok()) return template_name.status();
            if (claim_name->has_value() == template_name->has_value()) {
              return FieldError(where,
                                "must name exactly one of resourceClaimName and "
                                "resourceClaimTemplateName");
            }
            for (const auto& [field, named] :
                 {std::pair{"resourceClaimName", &*claim_name},
                  std::pair{"resourceClaimTemplateName", &*template_name}}) {
              if (!named->has_value()) continue;
              if (absl::Status valid = NameError(absl::StrCat(where, ".", field), **named,
                                                 Dns1123SubdomainErrors(**named));
                  !valid.ok()) {
                return valid;
              }
            }
            if (template_name->has_value()) {
              const std::string made = absl::StrCat(pod.name, "-", claim.name);
              std::vector<std::string> errors = Dns1123SubdomainErrors(made);
              for (std::string& error : errors) error.insert(0, "final ResourceClaim name: ");
              if (absl::Status valid = NameError(absl::StrCat(where, ".name"), made, errors);
                  !valid.ok()) {
                return valid;
              }
            }
            claim.resource_claim_name = *std::move(claim_name);
            claim.resource_claim_template_name = *std::move(template_name);
            return absl::OkStatus();
          });
      !claims.ok()) {
    return claims;
  }
  if (const YAML::Node group = spec["schedulingGroup"]; IsPresent(group)) {
    if (!group.IsMap()) return FieldError("spec.schedulingGroup", "must be an object");
    absl::StatusOr<std::optional<std::string>> name =
        ReadOptional(group["podGroupName"], "spec.schedulingGroup.podGroupName");
    if (!name.ok()) return name.status();
    pod.pod_group_name = *std::move(name);
  }
  if (!IsPresent(status)) return absl::OkStatus();
  if (!status.IsMap()) return FieldError("status", "must be an object");
  return ForEachItem(
      status["resourceClaimStatuses"], "status.resourceClaimStatuses",
      [&](const YAML::Node& item, const std::string& where) -> absl::Status {
        dra::PodResourceClaimStatus& claim_status = pod.resource_claim_statuses.emplace_back();
        absl::StatusOr<std::string> name = ReadRequired(item["name"], absl::StrCat(where, ".name"));
        if (!name.ok()) return name.status();
        claim_status.name = *std::move(name);
        absl::StatusOr<std::optional<std::string>> claim_name =
            ReadOptional(item["resourceClaimName"], absl::StrCat(where, ".resourceClaimName"));
        if (!claim_name.ok()) return claim_name.status();
        claim_status.resource_claim_name = *std::move(claim_name);
        return absl::OkStatus();
      });
}

absl::StatusOr<std::optional<dra::PodExtendedResourceClaimStatus>> ReadExtendedResourceClaimStatus(
    const YAML::Node& status) {
  if (!IsMapNode(status)) return std::nullopt;
  const YAML::Node extended = status["extendedResourceClaimStatus"];
  if (!IsPresent(extended)) return std::nullopt;
  constexpr absl::string_view kField = "status.extendedResourceClaimStatus";
  if (!extended.IsMap()) return FieldError(kField, "must be an object");
  dra::PodExtendedResourceClaimStatus out;
  absl::StatusOr<std::string> claim_name =
      ReadRequired(extended["resourceClaimName"], absl::StrCat(kField, ".resourceClaimName"));
  if (!claim_name.ok()) return claim_name.status();
  out.resource_claim_name = *std::move(claim_name);
  absl::Status read = ForEachItem(
      extended["requestMappings"], absl::StrCat(kField, ".requestMappings"),
      [&](const YAML::Node& item, const std::string& where) -> absl::Status {
        dra::ContainerExtendedResourceRequest& mapping = out.request_mappings.emplace_back();
        for (auto [key, target] : {std::pair{"containerName", &mapping.container_name},
                                   std::pair{"resourceName", &mapping.resource_name},
                                   std::pair{"requestName", &mapping.request_name}}) {
          absl::StatusOr<std::string> value =
              ReadRequired(item[key], absl::StrCat(where, ".", key));
          if (!value.ok()) return value.status();
          *target = *std::move(value);
        }
        return absl::OkStatus();
      });
  if (!read.ok()) return read;
  return out;
}

absl::StatusOr<std::vector<dra::ContainerClaim>> ReadContainerClaims(const YAML::Node& claims,
                                                                     absl::string_view field,
                                                                     const dra::Pod& pod) {
  std::vector<dra::ContainerClaim> out;
  absl::Status read = ForEachItem(
      claims, field, [&](const YAML::Node& item, const std::string& where) -> absl::Status {
        absl::StatusOr<std::string> name = ReadRequired(item["name"], absl::StrCat(where, ".name"));
        if (!name.ok()) return name.status();
        absl::StatusOr<std::string> request =
            ReadString(item["request"], absl::StrCat(where, ".request"));
        if (!request.ok()) return request.status();
        bool known = false;
        for (const dra::PodResourceClaim& pod_claim : pod.resource_claims) {
          known = known || pod_claim.name == *name;
        }
        if (!known) {
          return FieldError(absl::StrCat(where, ".name"),
                            absl::StrCat("\"", *name, "\" is not one of spec.resourceClaims"));
        }
        out.push_back({*std::move(name), *std::move(request)});
        return absl::OkStatus();
      });
  if (!read.ok()) return read;
  return out;
}

}  // namespace devmgr::node
