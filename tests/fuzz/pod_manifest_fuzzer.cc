// libFuzzer target for the Pod manifest reader of `devmgr pods admit` (YAML or JSON, from
// whoever may admit pods). Any input must give a Status, never a crash or an exception; what
// is accepted must be a pod the device manager can admit as it is (a name, at least one
// container, unique non-empty container names, kinds that match the lists, only extended
// resources with non-negative counts); and the pod, written back as a JSON manifest, must read
// back the same, so that no field is lost or misread on the way in.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/k8s_names.h"
#include "node/pod_manifest.h"
#include "tests/fuzz/invariant.h"

namespace {

using devmgr::devicemanager::Container;
using devmgr::devicemanager::ContainerType;
using devmgr::devicemanager::Pod;
using devmgr::fuzz::Invariant;

nlohmann::json ContainerJson(const Container& container) {
  nlohmann::json out = {{"name", container.name}};
  if (container.type == ContainerType::kSidecar) out["restartPolicy"] = "Always";
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& [resource, count] : container.devices) limits[resource] = count;
  out["resources"] = {{"limits", limits}};
  return out;
}

// The pod as a JSON manifest, as `kubectl get pod -o json` would show its fields (the scheduler's
// extended-resource claim status included, which the device manager reads).
nlohmann::json PodJson(const devmgr::node::PodManifest& manifest) {
  const Pod& pod = manifest.pod;
  nlohmann::json init = nlohmann::json::array();
  for (const Container& container : pod.init_containers) init.push_back(ContainerJson(container));
  nlohmann::json regular = nlohmann::json::array();
  for (const Container& container : pod.containers) regular.push_back(ContainerJson(container));
  nlohmann::json out = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"uid", pod.uid}, {"name", pod.name}, {"namespace", pod.namespace_name}}},
      {"spec", {{"initContainers", init}, {"containers", regular}}}};
  if (const auto& extended = manifest.claims.pod.extended_resource_claim_status) {
    nlohmann::json mappings = nlohmann::json::array();
    for (const auto& mapping : extended->request_mappings) {
      mappings.push_back({{"containerName", mapping.container_name},
                          {"resourceName", mapping.resource_name},
                          {"requestName", mapping.request_name}});
    }
    out["status"] = {
        {"extendedResourceClaimStatus",
         {{"resourceClaimName", extended->resource_claim_name}, {"requestMappings", mappings}}}};
  }
  return out;
}

void CheckAdmissible(const Pod& pod) {
  Invariant(!pod.uid.empty() && !pod.name.empty() && !pod.namespace_name.empty(),
            "uid, name and namespace are set");
  Invariant(!pod.containers.empty(), "at least one container");
  std::set<std::string> names;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      Invariant(!container.name.empty(), "container names are not empty");
      Invariant(names.insert(container.name).second, "container names are unique in the pod");
      const bool init = list == &pod.init_containers;
      Invariant(init ? container.type != ContainerType::kRegular
                     : container.type == ContainerType::kRegular,
                "a container's kind matches its list");
      for (const auto& [resource, count] : container.devices) {
        Invariant(devmgr::IsExtendedResourceName(resource), "only extended resources are kept");
        Invariant(count >= 0, "device counts are not negative");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<devmgr::node::PodManifest> parsed = devmgr::node::ParsePodManifest(text);
  if (!parsed.ok()) {
    Invariant(parsed.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad manifest is InvalidArgument");
    return 0;
  }
  CheckAdmissible(parsed->pod);

  std::string json;
  try {
    json = PodJson(*parsed).dump();
  } catch (const nlohmann::json::type_error&) {
    return 0;  // a string that is not UTF-8 has no JSON form to read back
  }
  const absl::StatusOr<devmgr::node::PodManifest> again = devmgr::node::ParsePodManifest(json);
  Invariant(again.ok(), "the pod written back as JSON reads back");
  Invariant(!again->generated_uid && again->pod == parsed->pod,
            "the pod written back as JSON reads back the same");
  return 0;
}
