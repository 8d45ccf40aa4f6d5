#include "podresources/list_cache.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>

#include <memory>
#include <utility>
#include <vector>

#include "podresources/arena_messages.h"
#include "podresources/pod_resources.h"

namespace devmgr::podresources {
namespace {

// Field 1 of ListPodResourcesResponse (repeated PodResources pod_resources), length-delimited.
constexpr uint8_t kPodResourcesTag = (1 << 3) | 2;

// Framed: `resources` as one element of ListPodResourcesResponse.pod_resources, so that the
// answer is its pods' parts one after the other.
std::string Framed(const ::v1::PodResources& resources) {
  using google::protobuf::io::CodedOutputStream;
  const auto size = static_cast<uint32_t>(resources.ByteSizeLong());
  std::string bytes(1 + CodedOutputStream::VarintSize32(size) + size, '\0');
  auto* out = reinterpret_cast<uint8_t*>(bytes.data());
  *out++ = kPodResourcesTag;
  out = CodedOutputStream::WriteVarint32ToArray(size, out);
  resources.SerializeWithCachedSizesToArray(out);
  return bytes;
}

}  // namespace

grpc::ByteBuffer ListCache::Answer(const Providers& providers) {
  // Read before the state they describe: what is built is then at least as new as its key,
  // and any later change gives a different one.
  std::optional<Key> key;
  if (providers.cpus == nullptr && providers.memory == nullptr) {
    const std::optional<uint64_t> pods = providers.pods->ActivePodsRevision();
    const std::optional<uint64_t> devices = providers.devices->AllocationsRevision();
    const std::optional<uint64_t> dynamic = providers.dynamic_resources == nullptr
                                                ? std::optional<uint64_t>(0)
                                                : providers.dynamic_resources->Revision();
    if (pods.has_value() && devices.has_value() && dynamic.has_value()) {
      key = Key{*pods, *devices, *dynamic};
    }
  }
  const bool reusable = key.has_value();
  const uint64_t dynamic = reusable ? key->dynamic : 0;
  absl::MutexLock lock(&mu_);
  if (key.has_value() && key_ == key) return answer_;

  const std::vector<Pod> pods = providers.pods->GetActivePods();
  google::protobuf::Arena arena(AnswerArenaOptions());
  std::unordered_map<std::string, PodPart> parts;
  // Each pod's part, kept or new, in the provider's order.
  std::vector<std::shared_ptr<const std::string>> pieces;
  pieces.reserve(pods.size());
  size_t size = 0;
  for (const Pod& pod : pods) {
    const std::optional<uint64_t> found =
        reusable ? providers.devices->PodAllocationsRevision(pod.uid) : std::nullopt;
    const bool known = found.has_value();
    const uint64_t revision = found.value_or(0);
    auto kept = parts_.find(pod.uid);
    if (known && kept != parts_.end() && kept->second.revision == revision &&
        kept->second.dynamic == dynamic && kept->second.pod == pod) {
      pieces.push_back(kept->second.bytes);
      parts.emplace(pod.uid, std::move(kept->second));
    } else {
      auto* resources = google::protobuf::Arena::CreateMessage<::v1::PodResources>(&arena);
      FillPodResources(pod, providers, *resources);
      pieces.push_back(std::make_shared<const std::string>(Framed(*resources)));
      if (known) parts.emplace(pod.uid, PodPart{pod, revision, dynamic, pieces.back()});
    }
    size += pieces.back()->size();
  }
  parts_ = std::move(parts);
  // One slice: gRPC sends a message of one slice faster than one of a slice per pod.
  std::string joined;
  joined.reserve(size);
  for (const auto& piece : pieces) joined += *piece;
  grpc::Slice slice(joined);
  grpc::ByteBuffer answer(&slice, 1);
  key_ = key;
  answer_ = key.has_value() ? answer : grpc::ByteBuffer();
  return answer;
}

}  // namespace devmgr::podresources
