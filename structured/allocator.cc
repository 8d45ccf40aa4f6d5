#include "structured/allocator.h"

#include <algorithm>
#include <limits>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/stack_thread.h"
#include "structured/constraints.h"
#include "structured/pools.h"

namespace devmgr::structured {
namespace {

using kubeapi::AllocationResult;
using kubeapi::DeviceClass;
using kubeapi::ExactDeviceRequest;
using kubeapi::ResourceClaim;
using Json = nlohmann::json;

// The deepest search run on the caller's thread, and the stack a deeper one's thread gets per
// level: a level takes about 450 bytes in an optimized build and several KiB with the
// sanitizers, whose build runs the tests too (2 KiB a level overflowed there). The stack is
// address space; only the pages the search reaches are used.
constexpr size_t kSearchDepthOnCallersStack = 512;
constexpr size_t kSearchStackBytesPerLevel = 8192;

// The devices a request may take: its count, the claim's limit for all of a kind.
int64_t DevicesAsked(const kubeapi::ExactDeviceRequest& request) {
  return request.allocation_mode == kubeapi::kAllocationModeExactCount
             ? request.count
             : kubeapi::kAllocationResultsMaxSize;
}

// SearchDepth: the most stack frames the search takes for `claim`: one as it moves to the claim,
// two for each request (a request and its subrequest), and one for each device it picks (at
// most kAllocationResultsMaxSize).
size_t SearchDepth(const ResourceClaim& claim) {
  int64_t devices = 0;
  for (const kubeapi::DeviceRequest& request : claim.spec.requests) {
    int64_t most = request.exactly.has_value() ? DevicesAsked(*request.exactly) : 0;
    for (const kubeapi::DeviceSubRequest& sub : request.first_available) {
      most = std::max(most, DevicesAsked(sub.request));
    }
    const int64_t limit = kubeapi::kAllocationResultsMaxSize;
    devices = std::min(devices + std::clamp<int64_t>(most, 0, limit), limit);
  }
  return 1 + 2 * claim.spec.requests.size() + static_cast<size_t>(devices);
}

// klog.KObj: "namespace/name", or the name alone.
std::string KObj(const ResourceClaim& claim) {
  if (claim.metadata.namespace_name.empty()) return claim.metadata.name;
  return absl::StrCat(claim.metadata.namespace_name, "/", claim.metadata.name);
}

std::string RandomUuid() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  const uint64_t high = random();
  const uint64_t low = random();
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", high >> 32, (high >> 16) & 0xffff,
                         high & 0x0fff, ((low >> 48) & 0x3fff) | 0x8000, low & 0xffffffffffffULL);
}

// resourceclaim.ToleratesTaint.
bool Tolerates(const kubeapi::DeviceToleration& toleration, const kubeapi::DeviceTaint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.op.empty() || toleration.op == "Equal") return toleration.value == taint.value;
  return toleration.op == "Exists";
}

// The first taint with an effect that keeps devices from being allocated (NoSchedule,
// NoExecute) that the request does not tolerate; nullptr when there is none.
const kubeapi::DeviceTaint* UntoleratedTaint(const DeviceInfo& device,
                                             const ExactDeviceRequest& request) {
  for (const kubeapi::DeviceTaint& taint : device.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    bool tolerated = false;
    for (const kubeapi::DeviceToleration& toleration : request.tolerations) {
      if (Tolerates(toleration, taint)) {
        tolerated = true;
        break;
      }
    }
    if (!tolerated) return &taint;
  }
  return nullptr;
}

// A device the search may pick: where it is, and what is allocated of it already.
struct Candidate {
  DeviceID id;
  const DeviceInfo* device = nullptr;
  const SliceInfo* slice = nullptr;
  const Pool* pool = nullptr;
  // In AllocatedState::devices: held by another claim.
  bool held = false;
  // In AllocatedState::shared: another claim holds a share of it.
  bool shared = false;
  // Held, shared or with consumed capacity: its counters are spent (IsDeviceAllocated).
  bool allocated = false;
  const ConsumedCapacity* allocated_capacity = nullptr;
};

// One request, or one subrequest of a request with firstAvailable.
struct RequestKey {
  int claim = 0;
  int request = 0;
  int sub = 0;

  bool operator==(const RequestKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const RequestKey& key) {
    return H::combine(std::move(h), key.claim, key.request, key.sub);
  }
};

// AddCounts: a + b for counts of devices, the largest (or smallest) value instead of a sum past
// int64's range: over (or under) every limit, as the sum is. A count may be negative: validation
// refuses one, and a claim that was not validated (a file) sums it as upstream's allocator does.
int64_t AddCounts(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

struct RequestData {
  const ExactDeviceRequest* spec = nullptr;
  std::string name;
  std::string parent;  // the request's name, for a subrequest
  const DeviceClass* device_class = nullptr;
  int64_t num_devices = 0;
  int selected_sub = 0;
  std::vector<int> all_devices;  // All: the candidates, by index

  bool admin() const { return spec->admin_access.value_or(false); }
  bool all_mode() const { return spec->allocation_mode == kubeapi::kAllocationModeAll; }
  std::string FullName() const { return parent.empty() ? name : absl::StrCat(parent, "/", name); }
};

// The position of one device to be found: of a claim, of a request, of a subrequest.
struct DeviceIndices {
  int claim = 0;
  int request = 0;
  int sub = 0;
  int device = 0;
};

struct DeviceResult {
  std::string request;
  std::string parent;
  int candidate = 0;
  std::optional<bool> admin_access;
  std::optional<std::string> share_id;
  ConsumedCapacity consumed;
  bool multiple = false;       // a share of a device that allows multiple allocations
  bool took_counters = false;  // its counters were taken by this allocation
};

// What a step of the search reports.
enum class Step { kNo, kDone, kTooMany, kError };

}  // namespace

// Search: one Allocate call's state. Only one thread works on it.
class Search {
 public:
  Search(const Allocator& allocator, const Node& node,
         const std::vector<const ResourceClaim*>& claims, Explanation* explanation)
      : a_(allocator),
        features_(allocator.options_.features),
        node_(node),
        claims_(claims),
        explanation_(explanation),
        deadline_(allocator.options_.timeout == absl::ZeroDuration()
                      ? absl::InfiniteFuture()
                      : absl::Now() + allocator.options_.timeout) {}

  absl::StatusOr<std::optional<std::vector<AllocationResult>>> Run();
  int64_t steps() const { return steps_; }

 private:
  absl::Status Prepare();
  absl::StatusOr<RequestData> ValidateRequest(const ExactDeviceRequest& spec, std::string name,
                                              std::string parent, const RequestKey& key);
  Step AllocateOne(DeviceIndices r, bool allocate_sub, int start);
  // AllocateDevice: whether the candidate can be taken for r; when it can, it is.
  bool AllocateDevice(const DeviceIndices& r, int candidate, bool must);
  void Deallocate(const DeviceIndices& r, size_t previous_results);
  absl::StatusOr<bool> Selectable(const RequestKey& key, const RequestData& data, int candidate);
  // Why the selectors of `data` refuse the device ("" when they do not).
  absl::StatusOr<std::string> SelectorsRefuse(const RequestKey& key, const RequestData& data,
                                              const Candidate& candidate);
  absl::StatusOr<bool> SelectorsMatch(const RequestKey& key, const Candidate& candidate,
                                      const DeviceClass* device_class,
                                      const std::vector<kubeapi::DeviceSelector>& selectors,
                                      size_t* refused);
  absl::StatusOr<bool> FitsCapacityNow(const RequestData& data, int candidate);
  bool TakeCounters(const Candidate& candidate);
  void ReturnCounters(const Candidate& candidate);
  bool InUse(int candidate) const;
  // Shared already, held or in this search, with or without consumed capacity (upstream's
  // deviceCapacityInUse).
  bool CapacityInUse(int candidate) const;
  // The device may be given to several claims (allowMultipleAllocations, with the gate on).
  bool Shareable(const Candidate& candidate) const;
  bool AllocatingForClaim(int candidate, int claim) const;
  bool Interrupted();
  absl::StatusOr<Json> NodeSelectorFor(const std::vector<DeviceResult>& results) const;
  std::vector<kubeapi::DeviceAllocationConfiguration> Configs(int claim_index) const;
  void Explain();
  std::string StaticVerdict(const RequestKey& key, const RequestData& data, int candidate);

  const Allocator& a_;
  const Features& features_;
  const Node& node_;
  const std::vector<const ResourceClaim*>& claims_;
  Explanation* const explanation_;
  const absl::Time deadline_;

  std::vector<Pool> pools_;
  std::vector<Candidate> candidates_;  // of complete, valid pools, in slice order
  absl::flat_hash_map<RequestKey, RequestData> requests_;
  std::vector<std::vector<std::unique_ptr<Constraint>>> constraints_;
  std::vector<std::vector<int64_t>> constraint_refusals_;
  absl::flat_hash_map<std::tuple<int, int, int, int>, bool> matches_;
  std::vector<std::vector<int>> allocating_;  // per candidate: the claims it is being given to
  // Per candidate: the shares of it this search is giving out, counted whether or not they
  // consume capacity (a share that consumes none leaves no trace in allocating_capacity_).
  std::vector<int> allocating_shares_;
  absl::flat_hash_map<int, ConsumedCapacity> allocating_capacity_;  // per candidate
  // Per pool: counters available before this allocation, and taken by it.
  absl::flat_hash_map<const Pool*, std::map<std::string, Counters>> available_counters_;
  absl::flat_hash_map<const Pool*, std::map<std::string, Counters>> consumed_counters_;
  std::vector<std::vector<DeviceResult>> results_;
  std::map<std::string, int64_t> search_refusals_;
  int64_t steps_ = 0;
  absl::Status error_;
};

namespace {

absl::Status Aborted(bool cancelled) {
  if (cancelled) return absl::CancelledError("filter operation aborted: context canceled");
  return absl::DeadlineExceededError("filter operation aborted: context deadline exceeded");
}

}  // namespace

bool Search::Interrupted() {
  const std::atomic<bool>* cancelled = a_.options_.cancelled;
  const bool is_cancelled = cancelled != nullptr && cancelled->load(std::memory_order_relaxed);
  if (!is_cancelled && absl::Now() < deadline_) return false;
  error_ = Aborted(is_cancelled);
  return true;
}

absl::StatusOr<RequestData> Search::ValidateRequest(const ExactDeviceRequest& spec,
                                                    std::string name, std::string parent,
                                                    const RequestKey& key) {
  const ResourceClaim& claim = *claims_[key.claim];
  RequestData data;
  data.spec = &spec;
  data.name = std::move(name);
  data.parent = std::move(parent);
  for (size_t i = 0; i < spec.selectors.size(); ++i) {
    if (!spec.selectors[i].cel_expression.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("claim ", KObj(claim), ", request ", data.name, ", selector #", i,
                       ": CEL expression empty (unsupported selector type?)"));
    }
  }
  if (!features_.admin_access && spec.admin_access.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim ", KObj(claim), ", request ", data.name,
                     ": admin access is requested, but the feature is disabled"));
  }
  if (spec.device_class_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim ", KObj(claim), ", request ", data.name,
                     ": missing device class name (unsupported request type?)"));
  }
  data.device_class = a_.FindClass(spec.device_class_name);
  if (data.device_class == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("claim ", KObj(claim), ", request ", data.name,
                     ": could not retrieve device class ", spec.device_class_name,
                     ": deviceclass.resource.k8s.io \"", spec.device_class_name, "\" not found"));
  }
  if (spec.allocation_mode == kubeapi::kAllocationModeExactCount) {
    // However large, a count only meets the claim's limit of devices: a subrequest asking for
    // more than it is passed over for the next one, as upstream's.
    data.num_devices = spec.count;
    return data;
  }
  if (spec.allocation_mode != kubeapi::kAllocationModeAll) {
    return absl::InvalidArgumentError(absl::StrCat("claim ", KObj(claim), ", request ", data.name,
                                                   ": unsupported count mode ",
                                                   spec.allocation_mode));
  }
  for (const Pool& pool : pools_) {
    if (pool.incomplete) {
      return absl::UnavailableError(absl::StrCat("claim ", KObj(claim), ", request ", data.name,
                                                 ": asks for all devices, but resource pool ",
                                                 pool.id.ToString(),
                                                 " is currently being updated"));
    }
    if (pool.invalid) {
      return absl::UnavailableError(absl::StrCat("claim ", KObj(claim), ", request ", data.name,
                                                 ": asks for all devices, but resource pool ",
                                                 pool.id.ToString(), " is currently invalid"));
    }
  }
  for (size_t i = 0; i < candidates_.size(); ++i) {
    absl::StatusOr<bool> selectable = Selectable(key, data, static_cast<int>(i));
    if (!selectable.ok()) return selectable.status();
    if (!*selectable) continue;
    // With consumable capacity, "all" are those with room for the request.
    if (features_.consumable_capacity) {
      absl::StatusOr<bool> fits = FitsCapacityNow(data, static_cast<int>(i));
      if (!fits.ok() && EndsAllocation(fits.status())) return fits.status();
      if (!fits.ok() || !*fits) continue;
    }
    data.all_devices.push_back(static_cast<int>(i));
  }
  data.num_devices = static_cast<int64_t>(data.all_devices.size());
  return data;
}

absl::Status Search::Prepare() {
  absl::StatusOr<std::vector<Pool>> pools = GatherPools(a_.slices_, node_, features_);
  if (!pools.ok()) {
    return absl::Status(pools.status().code(),
                        absl::StrCat("gather pool information: ", pools.status().message()));
  }
  pools_ = *std::move(pools);
  for (const Pool& pool : pools_) {
    if (pool.incomplete || pool.invalid) continue;
    for (const auto& slice : pool.slices_targeting_node) {
      for (const DeviceInfo& device : slice->devices) {
        Candidate candidate;
        candidate.id = DeviceID{slice->driver, slice->pool, device.name};
        candidate.device = &device;
        candidate.slice = slice.get();
        candidate.pool = &pool;
        const AllocatedState& allocated = a_.allocated_;
        candidate.held = allocated.devices.contains(candidate.id);
        auto capacity = allocated.consumed_capacity.find(candidate.id);
        if (capacity != allocated.consumed_capacity.end()) {
          candidate.allocated_capacity = &capacity->second;
        }
        auto shared = allocated.shared.lower_bound({candidate.id, ""});
        candidate.shared = shared != allocated.shared.end() && shared->first == candidate.id;
        candidate.allocated =
            candidate.held || candidate.shared || candidate.allocated_capacity != nullptr;
        candidates_.push_back(std::move(candidate));
      }
    }
  }
  allocating_.resize(candidates_.size());
  allocating_shares_.resize(candidates_.size());
  constraints_.resize(claims_.size());
  constraint_refusals_.resize(claims_.size());
  results_.resize(claims_.size());

  for (size_t c = 0; c < claims_.size(); ++c) {
    const ResourceClaim& claim = *claims_[c];
    int64_t min_devices = 0;
    for (size_t r = 0; r < claim.spec.requests.size(); ++r) {
      const kubeapi::DeviceRequest& request = claim.spec.requests[r];
      RequestKey key{static_cast<int>(c), static_cast<int>(r), 0};
      const bool has_subs = !request.first_available.empty();
      if (has_subs && !features_.prioritized_list) {
        return absl::InvalidArgumentError(
            absl::StrCat("claim ", KObj(claim), ", request ", request.name,
                         ": has subrequests, but the DRAPrioritizedList feature is disabled"));
      }
      if (!features_.consumable_capacity) {
        if (request.exactly.has_value() && request.exactly->capacity_requests.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "claim ", KObj(claim), ", request ", request.name,
              ": has capacity requests, but the DRAConsumableCapacity feature is disabled"));
        }
        for (const kubeapi::DeviceSubRequest& sub : request.first_available) {
          if (sub.request.capacity_requests.has_value()) {
            return absl::InvalidArgumentError(absl::StrCat(
                "claim ", KObj(claim), ", subrequest ", sub.name,
                ": has capacity requests, but the DRAConsumableCapacity feature is disabled"));
          }
        }
      }
      if (has_subs) {
        int64_t fewest = std::numeric_limits<int64_t>::max();
        for (size_t s = 0; s < request.first_available.size(); ++s) {
          key.sub = static_cast<int>(s);
          const kubeapi::DeviceSubRequest& sub = request.first_available[s];
          absl::StatusOr<RequestData> data =
              ValidateRequest(sub.request, sub.name, request.name, key);
          if (!data.ok()) return data.status();
          fewest = std::min(fewest, data->num_devices);
          requests_[key] = *std::move(data);
        }
        min_devices = AddCounts(min_devices, fewest);
      } else {
        if (!request.exactly.has_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat("claim ", KObj(claim), ", request ", request.name,
                           ": missing device class name (unsupported request type?)"));
        }
        absl::StatusOr<RequestData> data = ValidateRequest(*request.exactly, request.name, "", key);
        if (!data.ok()) return data.status();
        min_devices = AddCounts(min_devices, data->num_devices);
        requests_[key] = *std::move(data);
      }
    }
    if (min_devices > kubeapi::kAllocationResultsMaxSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("claim ", KObj(claim), ": number of requested devices ", min_devices,
                       " exceeds the claim limit of ", kubeapi::kAllocationResultsMaxSize));
    }
    for (size_t i = 0; i < claim.spec.constraints.size(); ++i) {
      const kubeapi::DeviceConstraint& constraint = claim.spec.constraints[i];
      if (constraint.match_attribute.has_value()) {
        constraints_[c].push_back(MakeMatchAttribute(
            constraint.requests, *constraint.match_attribute, features_.list_type_attributes));
      } else if (constraint.distinct_attribute.has_value()) {
        constraints_[c].push_back(MakeDistinctAttribute(
            constraint.requests, *constraint.distinct_attribute, features_.list_type_attributes));
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("claim ", KObj(claim), ", constraint #", i,
                         ": empty constraint (unsupported constraint type?)"));
      }
    }
    constraint_refusals_[c].assign(constraints_[c].size(), 0);
  }
  return absl::OkStatus();
}

bool Search::InUse(int candidate) const {
  return candidates_[candidate].held || !allocating_[candidate].empty();
}

bool Search::Shareable(const Candidate& candidate) const {
  return features_.consumable_capacity &&
         candidate.device->allow_multiple_allocations.value_or(false);
}

bool Search::CapacityInUse(int candidate) const {
  const Candidate& c = candidates_[candidate];
  return c.shared || c.allocated_capacity != nullptr || allocating_shares_[candidate] > 0;
}

bool Search::AllocatingForClaim(int candidate, int claim) const {
  const std::vector<int>& claims = allocating_[candidate];
  return std::find(claims.begin(), claims.end(), claim) != claims.end();
}

absl::StatusOr<bool> Search::SelectorsMatch(const RequestKey& key, const Candidate& candidate,
                                            const DeviceClass* device_class,
                                            const std::vector<kubeapi::DeviceSelector>& selectors,
                                            size_t* refused) {
  const std::string owner = device_class != nullptr
                                ? absl::StrCat("class ", device_class->metadata.name)
                                : absl::StrCat("claim ", KObj(*claims_[key.claim]));
  for (size_t i = 0; i < selectors.size(); ++i) {
    if (!selectors[i].cel_expression.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          owner, ": selector #", i, ": CEL expression empty (unsupported selector type?)"));
    }
    absl::StatusOr<std::shared_ptr<const cel::Program>> program =
        a_.Compile(*selectors[i].cel_expression);
    if (!program.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          owner, ": selector #", i, ": CEL compile error: ", program.status().message()));
    }
    const absl::StatusOr<cel::Value>& device = candidate.device->cel_value;
    absl::StatusOr<bool> matches =
        device.ok() ? (*program)->MatchesValue(*device, nullptr,
                                               cel::Interruption{deadline_, a_.options_.cancelled})
                    : absl::StatusOr<bool>(device.status());
    if (!matches.ok()) {
      // An evaluation the search's deadline or cancellation stopped keeps that code: the claim
      // may be allocatable another time. Any other failure is the selector's.
      const absl::StatusCode code = matches.status().code();
      return absl::Status(
          code == absl::StatusCode::kDeadlineExceeded || code == absl::StatusCode::kCancelled
              ? code
              : absl::StatusCode::kInvalidArgument,
          absl::StrCat(owner, ": selector #", i, " on device ", candidate.id.ToString(),
                       ": CEL runtime error: ", cel::WithRuntimeHint(matches.status().message())));
    }
    if (!*matches) {
      if (refused != nullptr) *refused = i;
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::string> Search::SelectorsRefuse(const RequestKey& key, const RequestData& data,
                                                    const Candidate& candidate) {
  if (!features_.device_binding_and_status() && !candidate.device->binding_conditions.empty()) {
    return std::string(
        "has binding conditions (the DRADeviceBindingConditions and DRAResourceClaimDeviceStatus "
        "features are not both on)");
  }
  if (!features_.optional_node_operations && !candidate.slice->skip_node_operations.empty()) {
    return std::string(
        "its ResourceSlice skips node operations (the DRAOptionalNodeOperations feature is off)");
  }
  size_t refused = 0;
  if (data.device_class != nullptr) {
    absl::StatusOr<bool> match =
        SelectorsMatch(key, candidate, data.device_class, data.device_class->selectors, &refused);
    if (!match.ok()) return match.status();
    if (!*match) {
      return absl::StrCat("class ", data.device_class->metadata.name, " selector #", refused,
                          " is false: ", *data.device_class->selectors[refused].cel_expression);
    }
  }
  absl::StatusOr<bool> match =
      SelectorsMatch(key, candidate, nullptr, data.spec->selectors, &refused);
  if (!match.ok()) return match.status();
  if (!*match) {
    return absl::StrCat("request selector #", refused,
                        " is false: ", *data.spec->selectors[refused].cel_expression);
  }
  if (candidate.slice->per_device_node_selection.value_or(false)) {
    const DeviceInfo& device = *candidate.device;
    absl::StatusOr<bool> reaches =
        NodeMatches(node_, device.node_name, device.all_nodes,
                    device.node_selector.has_value() ? &*device.node_selector : nullptr);
    if (!reaches.ok()) return reaches.status();
    if (!*reaches) return absl::StrCat("not reachable from node ", node_.name);
  }
  return std::string();
}

absl::StatusOr<bool> Search::Selectable(const RequestKey& key, const RequestData& data,
                                        int candidate) {
  const auto cache_key = std::make_tuple(candidate, key.claim, key.request, key.sub);
  if (auto it = matches_.find(cache_key); it != matches_.end()) return it->second;
  absl::StatusOr<std::string> refused = SelectorsRefuse(key, data, candidates_[candidate]);
  if (!refused.ok()) return refused.status();
  const bool selectable = refused->empty();
  matches_[cache_key] = selectable;
  return selectable;
}

absl::StatusOr<bool> Search::FitsCapacityNow(const RequestData& data, int candidate) {
  const Candidate& c = candidates_[candidate];
  ConsumedCapacity consumed;
  if (c.allocated_capacity != nullptr) consumed = *c.allocated_capacity;
  if (auto it = allocating_capacity_.find(candidate); it != allocating_capacity_.end()) {
    AddTo(consumed, it->second);
  }
  return FitsCapacity(consumed, data.spec->capacity_requests, c.device->capacity,
                      features_.fractional_capacity_range);
}

bool Search::TakeCounters(const Candidate& candidate) {
  const Pool* pool = candidate.pool;
  auto available_it = available_counters_.find(pool);
  if (available_it == available_counters_.end()) {
    std::map<std::string, Counters> available = pool->counter_sets;
    // Devices allocated before this allocation hold their counters.
    for (const auto* slices : {&pool->slices_targeting_node, &pool->slices_not_targeting_node}) {
      for (const auto& slice : *slices) {
        for (const DeviceInfo& device : slice->devices) {
          const DeviceID id{slice->driver, slice->pool, device.name};
          const AllocatedState& allocated = a_.allocated_;
          bool is_allocated =
              allocated.devices.contains(id) || allocated.consumed_capacity.contains(id);
          if (!is_allocated) {
            auto shared = allocated.shared.lower_bound({id, ""});
            is_allocated = shared != allocated.shared.end() && shared->first == id;
          }
          if (!is_allocated) continue;
          for (const CounterConsumption& consumption : device.consumes_counters) {
            Counters& set = available[consumption.counter_set];
            for (const auto& [name, amount] : consumption.counters) {
              auto counter = set.find(name);
              if (counter == set.end()) continue;
              counter->second = counter->second.Sub(amount).value_or(counter->second);
            }
          }
        }
      }
    }
    available_it = available_counters_.emplace(pool, std::move(available)).first;
  }
  std::map<std::string, Counters>& consumed = consumed_counters_[pool];
  for (const CounterConsumption& consumption : candidate.device->consumes_counters) {
    Counters& set = consumed[consumption.counter_set];
    for (const auto& [name, amount] : consumption.counters) {
      auto [it, inserted] = set.emplace(name, amount);
      if (!inserted) it->second = it->second.Add(amount).value_or(it->second);
    }
  }
  // Every counter of the pool, as upstream's checkAvailableCounters compares them: one this
  // allocation has not taken counts as 0 taken, so a counter that devices allocated before have
  // over-spent refuses each candidate of the pool, whichever counters it draws on and whatever
  // was tried before it.
  for (const auto& [set_name, counters] : available_it->second) {
    auto used = consumed.find(set_name);
    for (const auto& [name, available] : counters) {
      const kubeapi::Quantity* taken = nullptr;
      if (used != consumed.end()) {
        if (auto it = used->second.find(name); it != used->second.end()) taken = &it->second;
      }
      if (taken != nullptr ? available.Compare(*taken) < 0 : available.Sign() < 0) {
        ReturnCounters(candidate);
        return false;
      }
    }
  }
  return true;
}

void Search::ReturnCounters(const Candidate& candidate) {
  std::map<std::string, Counters>& consumed = consumed_counters_[candidate.pool];
  for (const CounterConsumption& consumption : candidate.device->consumes_counters) {
    Counters& set = consumed[consumption.counter_set];
    for (const auto& [name, amount] : consumption.counters) {
      auto it = set.find(name);
      if (it != set.end()) it->second = it->second.Sub(amount).value_or(it->second);
    }
  }
}

bool Search::AllocateDevice(const DeviceIndices& r, int candidate, bool must) {
  const Candidate& c = candidates_[candidate];
  const RequestData& data = requests_.at(RequestKey{r.claim, r.request, r.sub});
  const bool admin = data.admin();
  const bool multiple = Shareable(c);
  if (!multiple && admin && AllocatingForClaim(candidate, r.claim)) return false;
  if (!admin && InUse(candidate)) return false;
  // Not given whole while another claim holds a share of it (its slice may no longer allow
  // shares: kubernetes#140797).
  if (!admin && !multiple && CapacityInUse(candidate)) return false;
  if (!features_.partitionable_devices && !c.device->consumes_counters.empty()) return false;

  // A share of a device shared already: its counters are spent once for all its shares.
  const bool skip_counters = multiple && CapacityInUse(candidate);
  bool took_counters = false;
  if (!skip_counters && !c.device->consumes_counters.empty()) {
    if (!TakeCounters(c)) {
      ++search_refusals_[absl::StrCat(c.id.ToString(), ": counters of pool ", c.pool->id.ToString(),
                                      " used up")];
      return false;
    }
    took_counters = true;
  }
  // Everything taken so far is given back when the device is refused after all.
  auto refuse = [&]() {
    if (took_counters) ReturnCounters(c);
    return false;
  };
  const std::string& base = data.parent.empty() ? data.name : data.parent;
  const std::string sub = data.parent.empty() ? "" : data.name;
  if (features_.device_taints && UntoleratedTaint(*c.device, *data.spec) != nullptr) {
    return refuse();
  }
  std::vector<std::unique_ptr<Constraint>>& constraints = constraints_[r.claim];
  for (size_t i = 0; i < constraints.size(); ++i) {
    if (constraints[i]->Add(base, sub, *c.device, c.id)) continue;
    ++constraint_refusals_[r.claim][i];
    if (must) {
      error_ = absl::FailedPreconditionError(absl::StrCat(
          "claim ", KObj(*claims_[r.claim]), ", request ", data.name, ": cannot add device ",
          c.id.ToString(), " because a claim constraint would not be satisfied"));
    }
    for (size_t e = 0; e < i; ++e) constraints[e]->Remove(base, sub, *c.device, c.id);
    return refuse();
  }

  DeviceResult result;
  result.request = data.name;
  result.parent = data.parent;
  result.candidate = candidate;
  result.multiple = multiple;
  result.took_counters = took_counters;
  if (admin) result.admin_access = true;
  if (features_.consumable_capacity) {
    absl::StatusOr<bool> fits = FitsCapacityNow(data, candidate);
    if (fits.ok() && *fits && multiple) {
      absl::StatusOr<ConsumedCapacity> consumed = ConsumedByRequest(
          data.spec->capacity_requests, c.device->capacity, features_.fractional_capacity_range);
      if (consumed.ok()) {
        result.consumed = *std::move(consumed);
      } else {
        fits = consumed.status();
      }
    }
    if (!fits.ok() || !*fits) {
      if (!fits.ok() && EndsAllocation(fits.status())) {
        error_ = fits.status();
      } else {
        ++search_refusals_[absl::StrCat(c.id.ToString(), ": capacity used up")];
      }
      for (auto& constraint : constraints) constraint->Remove(base, sub, *c.device, c.id);
      return refuse();
    }
    if (multiple) {
      result.share_id = a_.options_.new_share_id ? a_.options_.new_share_id() : RandomUuid();
      AddTo(allocating_capacity_[candidate], result.consumed);
      ++allocating_shares_[candidate];
    }
  }
  if (!multiple) allocating_[candidate].push_back(r.claim);
  results_[r.claim].push_back(std::move(result));
  return true;
}

void Search::Deallocate(const DeviceIndices& r, size_t previous_results) {
  const DeviceResult& result = results_[r.claim][previous_results];
  const Candidate& c = candidates_[result.candidate];
  const std::string& base = result.parent.empty() ? result.request : result.parent;
  const std::string sub = result.parent.empty() ? "" : result.request;
  for (auto& constraint : constraints_[r.claim]) constraint->Remove(base, sub, *c.device, c.id);
  if (result.multiple) {
    --allocating_shares_[result.candidate];
    auto it = allocating_capacity_.find(result.candidate);
    if (it != allocating_capacity_.end()) {
      SubtractFrom(it->second, result.consumed);
      if (it->second.empty()) allocating_capacity_.erase(it);
    }
  } else {
    std::vector<int>& claims = allocating_[result.candidate];
    claims.erase(std::find(claims.begin(), claims.end(), r.claim));
  }
  if (result.took_counters) ReturnCounters(c);
  results_[r.claim].resize(previous_results);
}

Step Search::AllocateOne(DeviceIndices r, bool allocate_sub, int start) {
  ++steps_;
  if (Interrupted()) return Step::kError;
  if (r.claim >= static_cast<int>(claims_.size())) return Step::kDone;
  const ResourceClaim& claim = *claims_[r.claim];
  if (r.request >= static_cast<int>(claim.spec.requests.size())) {
    const Step next = AllocateOne(DeviceIndices{r.claim + 1, 0, 0, 0}, false, 0);
    // A later claim over its limit says nothing about this claim's choices.
    return next == Step::kTooMany ? Step::kNo : next;
  }
  const RequestKey key{r.claim, r.request, r.sub};
  const RequestData& data = requests_.at(key);

  if (!allocate_sub && !data.parent.empty()) {
    // One of the subrequests, in order; the first that leads to a solution wins.
    bool all_too_many = true;
    for (int sub = 0;; ++sub) {
      if (!requests_.contains(RequestKey{r.claim, r.request, sub})) {
        return all_too_many ? Step::kTooMany : Step::kNo;
      }
      r.sub = sub;
      const Step step = AllocateOne(r, true, 0);
      if (step == Step::kTooMany) continue;
      all_too_many = false;
      if (step == Step::kError) return step;
      if (step == Step::kDone) {
        requests_.at(key).selected_sub = sub;
        return Step::kDone;
      }
    }
  }

  const bool all_mode = data.all_mode();
  if (all_mode && data.all_devices.empty()) return Step::kNo;
  if (r.device >= data.num_devices) {
    return AllocateOne(DeviceIndices{r.claim, r.request + 1, 0, 0}, false, 0);
  }
  const size_t previous = results_[r.claim].size();
  // Written so that no count, however large, wraps around.
  if (data.num_devices - r.device >
      kubeapi::kAllocationResultsMaxSize - static_cast<int64_t>(previous)) {
    ++search_refusals_[absl::StrCat("claim ", KObj(claim), ": more than ",
                                    kubeapi::kAllocationResultsMaxSize, " devices")];
    return Step::kTooMany;
  }
  const DeviceIndices next{r.claim, r.request, r.sub, r.device + 1};

  if (all_mode) {
    // Every matching device, in a fixed order: the one up next must be available.
    if (!AllocateDevice(r, data.all_devices[r.device], true)) {
      return error_.ok() ? Step::kNo : Step::kError;
    }
    const Step step = AllocateOne(next, allocate_sub, 0);
    if (step != Step::kDone) Deallocate(r, previous);
    return step;
  }

  const bool admin = data.admin();
  for (int i = start; i < static_cast<int>(candidates_.size()); ++i) {
    if (admin ? AllocatingForClaim(i, r.claim) : InUse(i)) continue;
    absl::StatusOr<bool> selectable = Selectable(key, data, i);
    if (!selectable.ok()) {
      error_ = selectable.status();
      return Step::kError;
    }
    if (!*selectable) continue;
    if (features_.consumable_capacity) {
      absl::StatusOr<bool> fits = FitsCapacityNow(data, i);
      if (!fits.ok() && EndsAllocation(fits.status())) {
        error_ = fits.status();
        return Step::kError;
      }
      if (!fits.ok() || !*fits) continue;
    }
    if (!AllocateDevice(r, i, false)) {
      if (!error_.ok()) return Step::kError;
      continue;
    }
    const Step step = AllocateOne(next, allocate_sub, i + 1);
    if (step == Step::kDone) return step;
    Deallocate(r, previous);
    if (step != Step::kNo) return step;
  }
  return Step::kNo;
}

absl::StatusOr<Json> Search::NodeSelectorFor(const std::vector<DeviceResult>& results) const {
  Json match_fields = Json::array();
  Json match_expressions = Json::array();
  // Adds the requirements not there yet (same key, operator and set of values).
  auto add_new = [](const Json& from, Json& to) {
    if (!from.is_array()) return;
    for (const Json& requirement : from) {
      bool present = false;
      for (const Json& existing : to) {
        if (existing.value("key", Json()) != requirement.value("key", Json()) ||
            existing.value("operator", Json()) != requirement.value("operator", Json())) {
          continue;
        }
        std::set<std::string> a, b;
        for (const Json& v : existing.value("values", Json::array())) {
          if (v.is_string()) a.insert(v.get<std::string>());
        }
        for (const Json& v : requirement.value("values", Json::array())) {
          if (v.is_string()) b.insert(v.get<std::string>());
        }
        if (a == b) {
          present = true;
          break;
        }
      }
      if (!present) to.push_back(requirement);
    }
  };
  for (const DeviceResult& result : results) {
    const Candidate& c = candidates_[result.candidate];
    const bool per_device = c.slice->per_device_node_selection.value_or(false);
    const std::string& node_name = per_device ? c.device->node_name : c.slice->node_name;
    const std::optional<Json>& selector =
        per_device ? c.device->node_selector : c.slice->node_selector;
    if (!node_name.empty() || c.device->binds_to_node) {
      return Json{
          {"nodeSelectorTerms",
           Json::array({Json{
               {"matchFields", Json::array({Json{{"key", "metadata.name"},
                                                 {"operator", "In"},
                                                 {"values", Json::array({node_.name})}}})}}})}};
    }
    if (!selector.has_value()) continue;
    // Read whole before its parts are merged: the selector of a device that also reaches every
    // node was never matched against a node, so it may not even have the shape of one.
    if (absl::StatusOr<bool> parsed = NodeSelectorMatches(*selector, node_); !parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("node selector of device ", c.id.ToString(),
                                                     ": ", parsed.status().message()));
    }
    const Json terms = selector->value("nodeSelectorTerms", Json::array());
    if (terms.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported ResourceSlice.NodeSelector with ", terms.size(), " terms"));
    }
    if (terms.size() == 1) {
      add_new(terms[0].value("matchFields", Json::array()), match_fields);
      add_new(terms[0].value("matchExpressions", Json::array()), match_expressions);
    }
  }
  if (match_fields.empty() && match_expressions.empty()) return Json();
  Json term = Json::object();
  if (!match_expressions.empty()) term["matchExpressions"] = std::move(match_expressions);
  if (!match_fields.empty()) term["matchFields"] = std::move(match_fields);
  return Json{{"nodeSelectorTerms", Json::array({std::move(term)})}};
}

std::vector<kubeapi::DeviceAllocationConfiguration> Search::Configs(int claim_index) const {
  const ResourceClaim& claim = *claims_[claim_index];
  std::vector<kubeapi::DeviceAllocationConfiguration> configs;
  // The name the results carry for each request: the request's, or of its chosen subrequest.
  std::vector<std::string> chosen(claim.spec.requests.size());
  std::vector<const RequestData*> data(claim.spec.requests.size());
  for (size_t r = 0; r < claim.spec.requests.size(); ++r) {
    const RequestData* entry = &requests_.at(RequestKey{claim_index, static_cast<int>(r), 0});
    if (!entry->parent.empty()) {
      entry = &requests_.at(RequestKey{claim_index, static_cast<int>(r), entry->selected_sub});
    }
    data[r] = entry;
    chosen[r] = entry->FullName();
  }
  // Each class's configuration once, listing every request that uses the class.
  std::map<std::string, std::pair<size_t, size_t>> class_ranges;
  for (size_t r = 0; r < claim.spec.requests.size(); ++r) {
    const DeviceClass* device_class = data[r]->device_class;
    if (device_class == nullptr) continue;
    auto range = class_ranges.find(device_class->metadata.name);
    if (range != class_ranges.end()) {
      for (size_t i = range->second.first; i < range->second.second; ++i) {
        configs[i].requests.push_back(chosen[r]);
      }
      continue;
    }
    const size_t first = configs.size();
    for (const Json& config : device_class->config) {
      configs.push_back({kubeapi::kAllocationConfigSourceClass, {chosen[r]}, config});
    }
    class_ranges[device_class->metadata.name] = {first, configs.size()};
  }
  for (const kubeapi::DeviceClaimConfiguration& config : claim.spec.config) {
    bool applies = config.requests.empty();
    for (size_t r = 0; r < claim.spec.requests.size() && !applies; ++r) {
      for (const std::string& name : config.requests) {
        if (name == claim.spec.requests[r].name ||
            (!data[r]->parent.empty() && name == chosen[r])) {
          applies = true;
        }
      }
    }
    if (applies) {
      configs.push_back(
          {kubeapi::kAllocationConfigSourceClaim, config.requests, config.configuration});
    }
  }
  // A configuration for every request of the claim says so by naming none.
  for (kubeapi::DeviceAllocationConfiguration& config : configs) {
    if (config.requests.empty()) continue;
    bool all = true;
    for (size_t r = 0; r < claim.spec.requests.size() && all; ++r) {
      const auto& names = config.requests;
      all = std::find(names.begin(), names.end(), claim.spec.requests[r].name) != names.end() ||
            (!data[r]->parent.empty() &&
             std::find(names.begin(), names.end(), chosen[r]) != names.end());
    }
    if (all) config.requests.clear();
  }
  return configs;
}

absl::StatusOr<std::optional<std::vector<AllocationResult>>> Search::Run() {
  if (absl::Status prepared = Prepare(); !prepared.ok()) {
    if (explanation_ != nullptr) explanation_->search.push_back(std::string(prepared.message()));
    return prepared;
  }
  const Step step = AllocateOne(DeviceIndices{}, false, 0);
  if (explanation_ != nullptr) {
    explanation_->allocated = step == Step::kDone;
    Explain();
  }
  if (step == Step::kError) return error_;
  if (step != Step::kDone) {
    for (const Pool& pool : pools_) {
      if (pool.invalid) {
        // Not fatal: another node may allocate; said only when this one cannot.
        return absl::FailedPreconditionError("invalid resource pools were encountered");
      }
    }
    return std::nullopt;
  }

  std::vector<AllocationResult> out(claims_.size());
  for (size_t c = 0; c < claims_.size(); ++c) {
    AllocationResult& allocation = out[c];
    for (const DeviceResult& result : results_[c]) {
      const Candidate& candidate = candidates_[result.candidate];
      kubeapi::DeviceRequestAllocationResult item;
      item.request =
          result.parent.empty() ? result.request : absl::StrCat(result.parent, "/", result.request);
      item.driver = candidate.id.driver;
      item.pool = candidate.id.pool;
      item.device = candidate.id.device;
      item.admin_access = result.admin_access;
      // The tolerations of the request that got the device.
      for (const auto& [key, data] : requests_) {
        if (key.claim == static_cast<int>(c) && data.name == result.request &&
            data.parent == result.parent) {
          item.tolerations = data.spec->tolerations;
          break;
        }
      }
      item.share_id = result.share_id;
      item.consumed_capacity = result.consumed;
      if (features_.device_binding_and_status()) {
        item.binding_conditions = candidate.device->binding_conditions;
        item.binding_failure_conditions = candidate.device->binding_failure_conditions;
      }
      item.skip_node_operations = candidate.slice->skip_node_operations;
      allocation.results.push_back(std::move(item));
    }
    allocation.config = Configs(static_cast<int>(c));
    absl::StatusOr<Json> selector = NodeSelectorFor(results_[c]);
    if (!selector.ok()) {
      return absl::Status(selector.status().code(),
                          absl::StrCat("create NodeSelector for claim ", claims_[c]->metadata.name,
                                       ": ", selector.status().message()));
    }
    if (!selector->is_null()) allocation.node_selector = *std::move(selector);
  }
  return out;
}

std::string Search::StaticVerdict(const RequestKey& key, const RequestData& data, int candidate) {
  const Candidate& c = candidates_[candidate];
  if (!data.admin() && c.held) return "already allocated to another claim";
  if (!data.admin() && !Shareable(c) && (c.shared || c.allocated_capacity != nullptr)) {
    return "another claim holds a share of it, and it is not shared any more";
  }
  absl::StatusOr<std::string> refused = SelectorsRefuse(key, data, c);
  if (!refused.ok()) return std::string(refused.status().message());
  if (!refused->empty()) return *refused;
  if (!features_.partitionable_devices && !c.device->consumes_counters.empty()) {
    return "consumes shared counters (the DRAPartitionableDevices feature is off)";
  }
  if (features_.device_taints) {
    if (const kubeapi::DeviceTaint* taint = UntoleratedTaint(*c.device, *data.spec)) {
      return absl::StrCat("taint ", taint->key, "=", taint->value, ":", taint->effect,
                          " is not tolerated");
    }
  }
  if (features_.consumable_capacity) {
    ConsumedCapacity consumed;
    if (c.allocated_capacity != nullptr) consumed = *c.allocated_capacity;
    absl::StatusOr<bool> fits =
        FitsCapacity(consumed, data.spec->capacity_requests, c.device->capacity,
                     features_.fractional_capacity_range);
    if (!fits.ok()) return std::string(fits.status().message());
    if (!*fits) return "not enough capacity left";
  }
  return "";
}

void Search::Explain() {
  Explanation& out = *explanation_;
  out.steps = steps_;
  for (const Pool& pool : pools_) {
    if (pool.incomplete) {
      out.pools.push_back(absl::StrCat(pool.id.ToString(),
                                       ": being updated (not all of its slices are published)"));
    } else if (pool.invalid) {
      out.pools.push_back(absl::StrCat(pool.id.ToString(), ": invalid: ", pool.invalid_reason));
    }
  }
  for (size_t c = 0; c < claims_.size(); ++c) {
    const ResourceClaim& claim = *claims_[c];
    ClaimExplanation claim_out;
    claim_out.claim = KObj(claim);
    for (size_t r = 0; r < claim.spec.requests.size(); ++r) {
      for (int sub = 0;; ++sub) {
        const RequestKey key{static_cast<int>(c), static_cast<int>(r), sub};
        auto it = requests_.find(key);
        if (it == requests_.end()) break;
        const RequestData& data = it->second;
        RequestExplanation request;
        request.request = data.FullName();
        request.device_class = data.spec->device_class_name;
        request.wants = data.all_mode()         ? "all devices"
                        : data.num_devices == 1 ? "1 device"
                                                : absl::StrCat(data.num_devices, " devices");
        for (int i = 0; i < static_cast<int>(candidates_.size()); ++i) {
          request.devices.push_back({candidates_[i].id.ToString(), StaticVerdict(key, data, i)});
        }
        for (const Pool& pool : pools_) {
          if (!pool.incomplete && !pool.invalid) continue;
          for (const auto& slice : pool.slices_targeting_node) {
            for (const DeviceInfo& device : slice->devices) {
              request.devices.push_back(
                  {DeviceID{slice->driver, slice->pool, device.name}.ToString(),
                   pool.incomplete ? "its pool is being updated" : "its pool is invalid"});
            }
          }
        }
        claim_out.requests.push_back(std::move(request));
      }
    }
    for (size_t i = 0; i < constraints_[c].size(); ++i) {
      claim_out.constraint_refusals.emplace_back(constraints_[c][i]->Describe(),
                                                 constraint_refusals_[c][i]);
    }
    out.claims.push_back(std::move(claim_out));
  }
  for (const auto& [what, count] : search_refusals_) {
    out.search.push_back(absl::StrCat(what, " (", count, count == 1 ? " time)" : " times)"));
  }
}

AllocatedState AllocatedStateOf(const std::vector<kubeapi::ResourceClaim>& claims,
                                const Features& features) {
  AllocatedState state;
  for (const kubeapi::ResourceClaim& claim : claims) {
    if (!claim.allocation.has_value()) continue;
    for (const kubeapi::DeviceRequestAllocationResult& result : claim.allocation->results) {
      if (result.admin_access.value_or(false)) continue;
      const DeviceID id{result.driver, result.pool, result.device};
      if (features.consumable_capacity && result.share_id.has_value()) {
        state.shared.insert({id, *result.share_id});
        if (!result.consumed_capacity.empty()) {
          AddTo(state.consumed_capacity[id], result.consumed_capacity);
        }
        continue;
      }
      state.devices.insert(id);
    }
  }
  return state;
}

std::unique_ptr<Allocator> Allocator::Create(AllocatorOptions options, AllocatedState allocated,
                                             std::vector<DeviceClass> classes,
                                             const std::vector<kubeapi::ResourceSlicePtr>& slices) {
  std::vector<std::shared_ptr<const SliceInfo>> infos;
  infos.reserve(slices.size());
  for (const kubeapi::ResourceSlicePtr& slice : slices) infos.push_back(ReadSlice(*slice));
  return std::unique_ptr<Allocator>(new Allocator(std::move(options), std::move(allocated),
                                                  std::move(classes), std::move(infos)));
}

const DeviceClass* Allocator::FindClass(const std::string& name) const {
  for (const DeviceClass& device_class : classes_) {
    if (device_class.metadata.name == name) return &device_class;
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<const cel::Program>> Allocator::Compile(
    const std::string& expression) const {
  absl::MutexLock lock(&mu_);
  auto it = programs_.find(expression);
  if (it != programs_.end()) return it->second;
  cel::CompileOptions compile;
  compile.check.list_type_attributes = options_.features.list_type_attributes;
  compile.check.consumable_capacity = options_.features.consumable_capacity;
  return programs_.emplace(expression, cel::Program::Compile(expression, compile)).first->second;
}

absl::StatusOr<std::optional<std::vector<AllocationResult>>> Allocator::Allocate(
    const Node& node, const std::vector<const ResourceClaim*>& claims,
    Explanation* explanation) const {
  Search search(*this, node, claims, explanation);
  // A call of many claims would overflow the caller's stack (10,000 claims did): it runs on a
  // thread whose stack holds its depth (SearchDepth).
  size_t depth = 0;
  for (const ResourceClaim* claim : claims) depth += SearchDepth(*claim);
  absl::StatusOr<std::optional<std::vector<AllocationResult>>> result;
  if (depth <= kSearchDepthOnCallersStack) {
    result = search.Run();
  } else if (absl::Status ran =
                 RunWithStack(depth * kSearchStackBytesPerLevel, [&] { result = search.Run(); });
             !ran.ok()) {
    return ran;
  }
  absl::MutexLock lock(&mu_);
  stats_.allocate_one_calls = search.steps();
  return result;
}

AllocatorStats Allocator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace devmgr::structured
