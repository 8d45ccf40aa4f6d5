#include "node/pod_record.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"

namespace devmgr::node {
namespace {

using devicemanager::Container;
using devicemanager::ContainerType;
using devicemanager::Pod;
using Json = nlohmann::json;

constexpr int kVersion = 1;

const char* TypeName(ContainerType type) {
  switch (type) {
    case ContainerType::kInit:
      return "init";
    case ContainerType::kSidecar:
      return "sidecar";
    case ContainerType::kRegular:
      break;
  }
  return "regular";
}

Json EncodeContainers(const std::vector<Container>& containers) {
  Json list = Json::array();
  for (const Container& container : containers) {
    Json devices = Json::object();
    for (const auto& [resource, count] : container.devices) devices[resource] = count;
    list.push_back({{"name", container.name},
                    {"type", TypeName(container.type)},
                    {"devices", std::move(devices)}});
  }
  return list;
}

// A field of `object` with the JSON type `want`; DataLoss naming `where` otherwise.
absl::StatusOr<const Json*> Field(const Json& object, const char* key, Json::value_t want,
                                  const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->type() != want) {
    return absl::DataLossError(absl::StrCat(where, ".", key, ": missing or of the wrong type"));
  }
  return &*it;
}

absl::StatusOr<std::vector<Container>> DecodeContainers(const Json& pod, const char* key,
                                                        const std::string& where) {
  absl::StatusOr<const Json*> list = Field(pod, key, Json::value_t::array, where);
  if (!list.ok()) return list.status();
  std::vector<Container> containers;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const Json& item = (**list)[i];
    const std::string at = absl::StrCat(where, ".", key, "[", i, "]");
    if (!item.is_object()) return absl::DataLossError(absl::StrCat(at, ": not an object"));
    absl::StatusOr<const Json*> name = Field(item, "name", Json::value_t::string, at);
    absl::StatusOr<const Json*> type = Field(item, "type", Json::value_t::string, at);
    absl::StatusOr<const Json*> devices = Field(item, "devices", Json::value_t::object, at);
    for (const auto* field : {&name, &type, &devices}) {
      if (!field->ok()) return field->status();
    }
    Container container;
    container.name = (*name)->get<std::string>();
    const std::string type_name = (*type)->get<std::string>();
    if (type_name == "init") {
      container.type = ContainerType::kInit;
    } else if (type_name == "sidecar") {
      container.type = ContainerType::kSidecar;
    } else if (type_name == "regular") {
      container.type = ContainerType::kRegular;
    } else {
      return absl::DataLossError(absl::StrCat(at, ".type: unknown \"", type_name, "\""));
    }
    for (const auto& [resource, count] : (*devices)->items()) {
      if (!count.is_number_integer() || count.get<int64_t>() < 0) {
        return absl::DataLossError(
            absl::StrCat(at, ".devices[\"", resource, "\"]: not a device count"));
      }
      container.devices[resource] = count.get<int64_t>();
    }
    containers.push_back(std::move(container));
  }
  return containers;
}

}  // namespace

std::string EncodePodRecordEntry(const RecordedPod& recorded) {
  const Pod& pod = recorded.pod;
  Json json = {{"uid", pod.uid},
               {"namespace", pod.namespace_name},
               {"name", pod.name},
               {"initContainers", EncodeContainers(pod.init_containers)},
               {"containers", EncodeContainers(pod.containers)}};
  // Written only when there are some, so that records of pods without them stay as they were.
  if (!pod.dra_resource_mappings.empty()) {
    Json mappings = Json::array();
    for (const devicemanager::DraResourceMapping& mapping : pod.dra_resource_mappings) {
      mappings.push_back(
          {{"container", mapping.container_name}, {"resource", mapping.resource_name}});
    }
    json["draResourceMappings"] = std::move(mappings);
  }
  if (recorded.holds_devices) json["holdsDevices"] = true;
  if (recorded.in_flight) json["inFlight"] = true;
  std::string entry = json.dump();
  // The registry keeps it for the pod's life: without the room the appends left.
  entry.shrink_to_fit();
  return entry;
}

std::string JoinPodRecord(const std::vector<absl::string_view>& entries) {
  // The document nlohmann::json writes for {"version":1,"pods":[...]}: keys in sorted order.
  // Appended into room reserved once: absl's joins zero their whole result before copying
  // into it, a pass over megabytes of a node's record at every write.
  constexpr absl::string_view kStart = "{\"pods\":[";
  const std::string end = absl::StrCat("],\"version\":", kVersion, "}");
  size_t size = kStart.size() + end.size();
  for (absl::string_view entry : entries) size += entry.size() + 1;
  std::string out;
  out.reserve(size);
  out.append(kStart.data(), kStart.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ',';
    out.append(entries[i].data(), entries[i].size());
  }
  out += end;
  return out;
}

std::string EncodePodRecord(const std::vector<RecordedPod>& pods) {
  std::vector<std::string> entries;
  entries.reserve(pods.size());
  for (const RecordedPod& pod : pods) entries.push_back(EncodePodRecordEntry(pod));
  return JoinPodRecord({entries.begin(), entries.end()});
}

absl::StatusOr<std::vector<RecordedPod>> DecodePodRecord(absl::string_view bytes) {
  if (absl::Status shape = CheckJsonShape(bytes, kMaxApiObjectJsonDepth, kMaxStateFileJsonValues);
      !shape.ok()) {
    return absl::DataLossError(shape.message());
  }
  Json document = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return absl::DataLossError("not a JSON object");
  }
  auto version = document.find("version");
  if (version != document.end() && version->is_number_integer() &&
      version->get<int64_t>() > kVersion) {
    // Not damage: a newer devmgr wrote it, and this one must not take it for corrupt.
    return absl::FailedPreconditionError(absl::StrCat("written by a newer devmgr (version ",
                                                      version->get<int64_t>(),
                                                      "; this one reads version ", kVersion, ")"));
  }
  if (version == document.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kVersion) {
    return absl::DataLossError(absl::StrCat("version: want ", kVersion));
  }
  absl::StatusOr<const Json*> list = Field(document, "pods", Json::value_t::array, "record");
  if (!list.ok()) return list.status();
  std::vector<RecordedPod> pods;
  std::set<std::string> uids;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const Json& item = (**list)[i];
    const std::string at = absl::StrCat("pods[", i, "]");
    if (!item.is_object()) return absl::DataLossError(absl::StrCat(at, ": not an object"));
    Pod pod;
    for (auto [key, field] :
         {std::pair{"uid", &pod.uid}, std::pair{"namespace", &pod.namespace_name},
          std::pair{"name", &pod.name}}) {
      absl::StatusOr<const Json*> value = Field(item, key, Json::value_t::string, at);
      if (!value.ok()) return value.status();
      *field = (*value)->get<std::string>();
    }
    if (pod.uid.empty() || !uids.insert(pod.uid).second) {
      return absl::DataLossError(absl::StrCat(at, ".uid: empty or repeated"));
    }
    absl::StatusOr<std::vector<Container>> init = DecodeContainers(item, "initContainers", at);
    if (!init.ok()) return init.status();
    absl::StatusOr<std::vector<Container>> regular = DecodeContainers(item, "containers", at);
    if (!regular.ok()) return regular.status();
    pod.init_containers = *std::move(init);
    pod.containers = *std::move(regular);
    if (auto mappings = item.find("draResourceMappings"); mappings != item.end()) {
      const std::string where = absl::StrCat(at, ".draResourceMappings");
      if (!mappings->is_array()) return absl::DataLossError(absl::StrCat(where, ": not a list"));
      for (const Json& mapping : *mappings) {
        absl::StatusOr<const Json*> container =
            mapping.is_object() ? Field(mapping, "container", Json::value_t::string, where)
                                : absl::DataLossError(absl::StrCat(where, ": not an object"));
        if (!container.ok()) return container.status();
        absl::StatusOr<const Json*> resource =
            Field(mapping, "resource", Json::value_t::string, where);
        if (!resource.ok()) return resource.status();
        pod.dra_resource_mappings.push_back(
            {(*container)->get<std::string>(), (*resource)->get<std::string>()});
      }
    }
    RecordedPod& recorded = pods.emplace_back(RecordedPod{std::move(pod)});
    for (auto [key, flag] : {std::pair{"holdsDevices", &recorded.holds_devices},
                             std::pair{"inFlight", &recorded.in_flight}}) {
      auto value = item.find(key);
      if (value == item.end()) continue;
      if (!value->is_boolean()) {
        return absl::DataLossError(absl::StrCat(at, ".", key, ": not a boolean"));
      }
      *flag = value->get<bool>();
    }
  }
  return pods;
}

}  // namespace devmgr::node
