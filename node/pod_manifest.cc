#include "node/pod_manifest.h"

#include <yaml-cpp/yaml.h>

#include <random>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devicemanager/validation.h"
#include "node/quantity.h"

namespace devmgr::node {
namespace {

using devicemanager::Container;
using devicemanager::ContainerType;

// yaml-cpp answers a lookup of a missing key with an invalid node whose type queries throw;
// these ask safely.
bool IsPresent(const YAML::Node& node) { return node.IsDefined() && !node.IsNull(); }
bool IsMapNode(const YAML::Node& node) { return node.IsDefined() && node.IsMap(); }

absl::Status FieldError(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// A scalar string field; absent or null gives "".
absl::StatusOr<std::string> ReadString(const YAML::Node& node, absl::string_view field) {
  if (!IsPresent(node)) return std::string();
  if (!node.IsScalar()) return FieldError(field, "must be a string");
  return node.Scalar();
}

// A random (version 4) UUID, as the API server assigns to a new pod.
std::string NewUid() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  const uint64_t high = (rng() & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  const uint64_t low = (rng() & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", high >> 32, (high >> 16) & 0xFFFF,
                         high & 0xFFFF, low >> 48, low & 0xFFFFFFFFFFFFULL);
}

// Reads one `resources.limits` or `resources.requests` map, keeping extended resources only.
absl::StatusOr<std::map<std::string, int64_t>> ReadCounts(const YAML::Node& node,
                                                          absl::string_view field) {
  std::map<std::string, int64_t> counts;
  if (!IsPresent(node)) return counts;
  if (!node.IsMap()) return FieldError(field, "must be a map of resource name to quantity");
  for (const auto& item : node) {
    if (!item.first.IsScalar()) return FieldError(field, "resource names must be strings");
    const std::string resource = item.first.Scalar();
    if (!devicemanager::IsExtendedResourceName(resource)) continue;  // cpu, memory, ...
    const std::string where = absl::StrCat(field, "[\"", resource, "\"]");
    if (!item.second.IsScalar()) return FieldError(where, "must be a quantity");
    absl::StatusOr<int64_t> count = ParseDeviceCount(item.second.Scalar());
    if (!count.ok()) return FieldError(where, count.status().message());
    counts[resource] = *count;
  }
  return counts;
}

absl::StatusOr<Container> ReadContainer(const YAML::Node& node, absl::string_view field,
                                        bool init) {
  if (!node.IsMap()) return FieldError(field, "must be a container object");
  Container container;
  absl::StatusOr<std::string> name = ReadString(node["name"], absl::StrCat(field, ".name"));
  if (!name.ok()) return name.status();
  if (name->empty()) return FieldError(absl::StrCat(field, ".name"), "is required");
  container.name = *std::move(name);

  absl::StatusOr<std::string> restart_policy =
      ReadString(node["restartPolicy"], absl::StrCat(field, ".restartPolicy"));
  if (!restart_policy.ok()) return restart_policy.status();
  if (!restart_policy->empty()) {
    if (!init || *restart_policy != "Always") {
      return FieldError(
          absl::StrCat(field, ".restartPolicy"),
          init ? "only \"Always\" is allowed (a sidecar)" : "is allowed only on init containers");
    }
  }
  container.type = !init                     ? ContainerType::kRegular
                   : restart_policy->empty() ? ContainerType::kInit
                                             : ContainerType::kSidecar;

  const YAML::Node resources = node["resources"];
  if (IsPresent(resources) && !resources.IsMap()) {
    return FieldError(absl::StrCat(field, ".resources"), "must be an object");
  }
  const std::string limits_field = absl::StrCat(field, ".resources.limits");
  const std::string requests_field = absl::StrCat(field, ".resources.requests");
  absl::StatusOr<std::map<std::string, int64_t>> limits =
      ReadCounts(IsMapNode(resources) ? resources["limits"] : YAML::Node(), limits_field);
  if (!limits.ok()) return limits.status();
  absl::StatusOr<std::map<std::string, int64_t>> requests =
      ReadCounts(IsMapNode(resources) ? resources["requests"] : YAML::Node(), requests_field);
  if (!requests.ok()) return requests.status();
  // Extended resources cannot be overcommitted: a request needs an equal limit; a limit alone
  // implies the request.
  for (const auto& [resource, count] : *requests) {
    const auto limit = limits->find(resource);
    const std::string where = absl::StrCat(requests_field, "[\"", resource, "\"]");
    if (limit == limits->end()) {
      return FieldError(where, "a limit must be set for a resource that cannot be overcommitted");
    }
    if (limit->second != count) {
      return FieldError(where, absl::StrCat("must equal the limit (", limit->second, ")"));
    }
  }
  container.devices = *std::move(limits);
  return container;
}

absl::Status ReadContainers(const YAML::Node& node, absl::string_view field, bool init,
                            std::vector<Container>& out, std::set<std::string>& names) {
  if (!IsPresent(node)) return absl::OkStatus();
  if (!node.IsSequence()) return FieldError(field, "must be a list of containers");
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string where = absl::StrCat(field, "[", i, "]");
    absl::StatusOr<Container> container = ReadContainer(node[i], where, init);
    if (!container.ok()) return container.status();
    if (!names.insert(container->name).second) {
      return FieldError(absl::StrCat(where, ".name"),
                        absl::StrCat("duplicate container name \"", container->name, "\""));
    }
    out.push_back(*std::move(container));
  }
  return absl::OkStatus();
}

absl::StatusOr<PodManifest> ReadPod(const YAML::Node& root) {
  if (!IsMapNode(root)) return absl::InvalidArgumentError("the manifest must be a Pod object");
  absl::StatusOr<std::string> kind = ReadString(root["kind"], "kind");
  if (!kind.ok()) return kind.status();
  if (!kind->empty() && *kind != "Pod") {
    return FieldError("kind", absl::StrCat("is \"", *kind, "\"; only a Pod can be admitted"));
  }

  PodManifest manifest;
  const YAML::Node metadata = root["metadata"];
  if (!IsMapNode(metadata)) return FieldError("metadata", "is required");
  for (auto [key, target] :
       {std::pair{"uid", &manifest.pod.uid}, std::pair{"name", &manifest.pod.name},
        std::pair{"namespace", &manifest.pod.namespace_name}}) {
    absl::StatusOr<std::string> value = ReadString(metadata[key], absl::StrCat("metadata.", key));
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  if (manifest.pod.name.empty()) return FieldError("metadata.name", "is required");
  if (manifest.pod.namespace_name.empty()) manifest.pod.namespace_name = "default";
  if (manifest.pod.uid.empty()) {
    manifest.pod.uid = NewUid();
    manifest.generated_uid = true;
  }

  const YAML::Node spec = root["spec"];
  if (!IsMapNode(spec)) return FieldError("spec", "is required");
  std::set<std::string> names;
  if (absl::Status status = ReadContainers(spec["initContainers"], "spec.initContainers", true,
                                           manifest.pod.init_containers, names);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = ReadContainers(spec["containers"], "spec.containers", false,
                                           manifest.pod.containers, names);
      !status.ok()) {
    return status;
  }
  if (manifest.pod.containers.empty()) return FieldError("spec.containers", "is required");
  return manifest;
}

}  // namespace

absl::StatusOr<PodManifest> ParsePodManifest(absl::string_view text) {
  // yaml-cpp reports errors by throwing; none may leave this function.
  try {
    return ReadPod(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid YAML or JSON: ", e.what()));
  }
}

}  // namespace devmgr::node
