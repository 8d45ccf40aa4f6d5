#include "podresources/list_cache.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <grpc/slice.h>

#include <algorithm>
#include <cstring>
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

// Joined: the pieces one after the other, copied into slices of at most kSliceBytes. gRPC
// sends a message of a few large slices as fast as one of a single slice, and much faster than
// one of a slice per pod; slices this size come from memory the allocator keeps, where a
// single slice of a large answer is a fresh mapping whose every page faults on first write.
constexpr size_t kSliceBytes = 64 * 1024;

grpc::ByteBuffer Joined(const std::vector<std::shared_ptr<const std::string>>& pieces,
                        size_t size) {
  std::vector<grpc::Slice> slices;
  slices.reserve(size / kSliceBytes + 1);
  auto piece = pieces.begin();
  size_t offset = 0;  // into *piece
  for (size_t left = size; left > 0;) {
    const size_t length = std::min(left, kSliceBytes);
    grpc_slice slice = grpc_slice_malloc(length);
    uint8_t* out = GRPC_SLICE_START_PTR(slice);
    for (size_t filled = 0; filled < length;) {
      const size_t n = std::min(length - filled, (*piece)->size() - offset);
      std::memcpy(out + filled, (*piece)->data() + offset, n);
      filled += n;
      offset += n;
      if (offset == (*piece)->size()) {
        ++piece;
        offset = 0;
      }
    }
    slices.emplace_back(slice, grpc::Slice::STEAL_REF);
    left -= length;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
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

  std::vector<Pod> pods = providers.pods->GetActivePods();
  google::protobuf::Arena arena(AnswerArenaOptions());
  // parts_ is updated in place; the parts of pods not listed this time are dropped after.
  const uint64_t build = ++builds_;
  // Each pod's part, kept or new, in the provider's order.
  std::vector<std::shared_ptr<const std::string>> pieces;
  pieces.reserve(pods.size());
  size_t size = 0;
  for (Pod& pod : pods) {
    const std::optional<uint64_t> found =
        reusable ? providers.devices->PodAllocationsRevision(pod.uid) : std::nullopt;
    const bool known = found.has_value();
    const uint64_t revision = found.value_or(0);
    auto kept = parts_.find(pod.uid);
    if (known && kept != parts_.end() && kept->second.revision == revision &&
        kept->second.dynamic == dynamic && kept->second.pod == pod) {
      kept->second.build = build;
      pieces.push_back(kept->second.bytes);
    } else {
      auto* resources = google::protobuf::Arena::CreateMessage<::v1::PodResources>(&arena);
      FillPodResources(pod, providers, *resources);
      pieces.push_back(std::make_shared<const std::string>(Framed(*resources)));
      if (known) {
        if (kept == parts_.end()) kept = parts_.try_emplace(pod.uid).first;
        kept->second = PodPart{std::move(pod), revision, dynamic, pieces.back(), build};
      }
    }
    size += pieces.back()->size();
  }
  std::erase_if(parts_, [build](const auto& entry) { return entry.second.build != build; });
  grpc::ByteBuffer answer = Joined(pieces, size);
  key_ = key;
  answer_ = key.has_value() ? answer : grpc::ByteBuffer();
  return answer;
}

}  // namespace devmgr::podresources
