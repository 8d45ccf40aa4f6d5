#include "podresources/allocatable_cache.h"

#include <google/protobuf/arena.h>

#include <utility>
#include <vector>

#include "podresources/answer_arena.h"
#include "podresources/pod_resources.h"

namespace devmgr::podresources {
namespace {

// DevicesPart: `devices` as the ContainerDevices entries (field 1) of an
// AllocatableResourcesResponse, so that parts and the rest of the answer can be joined.
std::string DevicesPart(const ResourceDeviceInstances& devices) {
  google::protobuf::Arena arena(AnswerArenaOptions());
  auto* response =
      google::protobuf::Arena::CreateMessage<::v1::AllocatableResourcesResponse>(&arena);
  AppendContainerDevices(devices, *response->mutable_devices());
  return response->SerializeAsString();
}

}  // namespace

grpc::ByteBuffer AllocatableCache::Answer(const Providers& providers) {
  // Read before the devices they describe: a part is then at least as new as its revision.
  const std::optional<std::map<std::string, uint64_t>> revisions =
      providers.devices->AllocatableRevisions();
  std::vector<std::shared_ptr<const std::string>> pieces;
  {
    absl::MutexLock lock(&mu_);
    if (!revisions.has_value()) {
      parts_.clear();
      pieces.push_back(std::make_shared<const std::string>(
          DevicesPart(providers.devices->GetAllocatableDevices())));
    } else {
      std::map<std::string, Part> parts;
      for (const auto& [resource, revision] : *revisions) {
        auto kept = parts_.find(resource);
        Part part;
        if (kept != parts_.end() && kept->second.revision == revision) {
          part = std::move(kept->second);
        } else {
          ResourceDeviceInstances one;
          one.emplace(resource, providers.devices->GetAllocatableDevicesOf(resource));
          part = Part{revision, std::make_shared<const std::string>(DevicesPart(one))};
        }
        pieces.push_back(part.bytes);
        parts.emplace(resource, std::move(part));
      }
      parts_ = std::move(parts);
    }
  }
  // Fields 2 and 3 follow field 1, as protobuf writes them.
  ::v1::AllocatableResourcesResponse rest;
  if (providers.cpus != nullptr) {
    for (const int64_t cpu : providers.cpus->GetAllocatableCpus()) rest.add_cpu_ids(cpu);
  }
  if (providers.memory != nullptr) {
    for (auto& memory : providers.memory->GetAllocatableMemory()) {
      *rest.add_memory() = std::move(memory);
    }
  }
  size_t size = 0;
  for (const auto& piece : pieces) size += piece->size();
  std::string joined;
  joined.reserve(size + rest.ByteSizeLong());
  for (const auto& piece : pieces) joined += *piece;
  rest.AppendToString(&joined);
  // One slice, as ListCache: gRPC sends a message of one slice fastest.
  grpc::Slice slice(std::move(joined));
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace devmgr::podresources
