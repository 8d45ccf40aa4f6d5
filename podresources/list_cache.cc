#include "podresources/list_cache.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <grpc/slice.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "podresources/answer_arena.h"
#include "podresources/pod_resources.h"

namespace devmgr::podresources {
namespace {

// Field 1 of ListPodResourcesResponse (repeated PodResources pod_resources), length-delimited.
constexpr uint8_t kPodResourcesTag = (1 << 3) | 2;

// The stack block of a part's arena: a pod of a few containers fits in it.
constexpr size_t kPartBlockBytes = 4096;

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

// Part: `pod`'s element of the answer, read from the providers. Its message lives on an arena
// of its own that starts in a block on the stack: a first List builds thousands of parts, and
// an arena kept across them would hold them all, every page of it fresh memory to fault in.
std::shared_ptr<const std::string> Part(const Pod& pod, const Providers& providers) {
  alignas(std::max_align_t) char first_block[kPartBlockBytes];
  google::protobuf::ArenaOptions options = AnswerArenaOptions();
  options.initial_block = first_block;
  options.initial_block_size = sizeof(first_block);
  google::protobuf::Arena arena(options);
  auto* resources = google::protobuf::Arena::CreateMessage<::v1::PodResources>(&arena);
  FillPodResources(pod, providers, *resources);
  return std::make_shared<const std::string>(Framed(*resources));
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
    DynamicResourcesProvider* listed = providers.ListedDynamicResources();
    const std::optional<uint64_t> dynamic =
        listed == nullptr ? std::optional<uint64_t>(0) : listed->Revision();
    if (pods.has_value() && devices.has_value() && dynamic.has_value()) {
      key = Key{*pods, *devices, *dynamic};
    }
  }
  absl::MutexLock lock(&mu_);
  if (key.has_value() && key_ == key) return answer_;
  std::optional<grpc::ByteBuffer> answer;
  if (key.has_value()) answer = UpdatedLocked(providers, *key);
  if (!answer.has_value()) answer = BuiltLocked(providers, key);
  key_ = key;
  answer_ = key.has_value() ? *answer : grpc::ByteBuffer();
  return *std::move(answer);
}

std::optional<grpc::ByteBuffer> ListCache::UpdatedLocked(const Providers& providers,
                                                         const Key& key) {
  if (!key_.has_value() || !whole_in_uid_order_ || key.dynamic != key_->dynamic) {
    return std::nullopt;
  }
  const std::optional<std::vector<std::string>> pods =
      providers.pods->ActivePodsChangedSince(key_->pods);
  if (!pods.has_value()) return std::nullopt;
  const std::optional<std::vector<std::string>> devices =
      providers.devices->PodsWithAllocationsChangedSince(key_->devices);
  if (!devices.has_value()) return std::nullopt;
  std::vector<std::string> changed;
  std::set_union(pods->begin(), pods->end(), devices->begin(), devices->end(),
                 std::back_inserter(changed));
  for (const std::string& uid : changed) {
    std::optional<Pod> pod = providers.pods->GetActivePod(uid);
    if (!pod.has_value()) {
      parts_.erase(uid);
      continue;
    }
    const std::optional<uint64_t> revision = providers.devices->PodAllocationsRevision(uid);
    if (!revision.has_value()) return std::nullopt;
    std::shared_ptr<const std::string> bytes = Part(*pod, providers);
    parts_.insert_or_assign(
        uid, PodPart{*std::move(pod), *revision, key.dynamic, std::move(bytes), builds_});
  }
  std::vector<std::shared_ptr<const std::string>> pieces;
  pieces.reserve(parts_.size());
  size_t size = 0;
  for (const auto& [uid, part] : parts_) {
    pieces.push_back(part.bytes);
    size += part.bytes->size();
  }
  return Joined(pieces, size);
}

grpc::ByteBuffer ListCache::BuiltLocked(const Providers& providers, const std::optional<Key>& key) {
  const bool reusable = key.has_value();
  const uint64_t dynamic = reusable ? key->dynamic : 0;
  std::vector<Pod> pods = providers.pods->GetActivePods();
  // parts_ is updated in place; the parts of pods not listed this time are dropped after.
  const uint64_t build = ++builds_;
  // Whether parts_ will hold every pod listed, in the order listed: then a later answer can
  // be parts_ walked in order (UpdatedLocked).
  whole_in_uid_order_ = reusable;
  const std::string* previous = nullptr;
  // Each pod's part, kept or new, in the provider's order.
  std::vector<std::shared_ptr<const std::string>> pieces;
  pieces.reserve(pods.size());
  size_t size = 0;
  for (Pod& pod : pods) {
    const std::optional<uint64_t> found =
        reusable ? providers.devices->PodAllocationsRevision(pod.uid) : std::nullopt;
    const bool known = found.has_value();
    const uint64_t revision = found.value_or(0);
    if (!known || (previous != nullptr && !(*previous < pod.uid))) whole_in_uid_order_ = false;
    // Where the pod's part is or goes: at the end when the pods come in UID order, as the
    // first build after a start puts every one.
    auto kept = !parts_.empty() && std::prev(parts_.end())->first < pod.uid
                    ? parts_.end()
                    : parts_.lower_bound(pod.uid);
    const bool has_part = kept != parts_.end() && kept->first == pod.uid;
    if (known && has_part && kept->second.revision == revision && kept->second.dynamic == dynamic &&
        kept->second.pod == pod) {
      kept->second.build = build;
      pieces.push_back(kept->second.bytes);
    } else {
      pieces.push_back(Part(pod, providers));
      if (known) {
        if (!has_part) kept = parts_.emplace_hint(kept, pod.uid, PodPart{});
        kept->second = PodPart{std::move(pod), revision, dynamic, pieces.back(), build};
      }
    }
    previous = known ? &kept->first : nullptr;
    size += pieces.back()->size();
  }
  std::erase_if(parts_, [build](const auto& entry) { return entry.second.build != build; });
  return Joined(pieces, size);
}

}  // namespace devmgr::podresources
