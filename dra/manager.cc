#include "dra/manager.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "common/damaged_copy.h"
#include "common/node_operations.h"
#include "dra/claim_info.h"
#include "dra/claim_name.h"

namespace devmgr::dra {
namespace {

// Wrap keeps the code of `status` and puts `prefix` before its message.
absl::Status Wrap(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

draapi::v1::Claim ClaimMessage(const ClaimInfoState& state) {
  draapi::v1::Claim claim;
  claim.set_namespace_(state.namespace_name);
  claim.set_uid(state.claim_uid);
  claim.set_name(state.claim_name);
  return claim;
}

// FindClaim: the claim of `claims` with `uid`, or null.
const draapi::v1::Claim* FindClaim(const std::vector<draapi::v1::Claim>& claims,
                                   const std::string& uid) {
  for (const draapi::v1::Claim& claim : claims) {
    if (claim.uid() == uid) return &claim;
  }
  return nullptr;
}

// CheckAnswer applies upstream's rules to a driver's answer for `claims`: no claim it was not
// asked for, no claim with an error, none left out. `method` names the call in the texts.
template <typename Answers>
absl::Status CheckAnswer(absl::string_view method, const std::vector<draapi::v1::Claim>& claims,
                         const Answers& answers) {
  for (const auto& [uid, answer] : answers) {
    if (FindClaim(claims, uid) == nullptr) {
      return absl::InternalError(
          absl::StrCat(method, " returned result for unknown claim UID ", uid));
    }
  }
  for (const draapi::v1::Claim& claim : claims) {
    auto answer = answers.find(claim.uid());
    if (answer != answers.end() && !answer->second.error().empty()) {
      return absl::UnavailableError(absl::StrCat(method, " failed for ResourceClaim ", claim.name(),
                                                 ": ", answer->second.error()));
    }
  }
  if (answers.size() != claims.size()) {
    return absl::UnavailableError(
        absl::StrCat(method, " skipped ", claims.size() - answers.size(), " ResourceClaims"));
  }
  return absl::OkStatus();
}

CheckpointDevice FromProto(const draapi::v1::Device& device) {
  CheckpointDevice out;
  out.pool_name = device.pool_name();
  out.device_name = device.device_name();
  if (device.has_share_id()) out.share_id = device.share_id();
  // Go's decoder leaves an empty repeated field nil.
  if (device.request_names_size() > 0) {
    out.request_names.emplace(device.request_names().begin(), device.request_names().end());
  }
  if (device.cdi_device_ids_size() > 0) {
    out.cdi_device_ids.emplace(device.cdi_device_ids().begin(), device.cdi_device_ids().end());
  }
  return out;
}

// MakeSliceCleanup: the ResourceSlice wipes, when the host can wipe.
std::unique_ptr<SliceCleanup> MakeSliceCleanup(const ManagerOptions& options) {
  if (options.slice_wiper == nullptr) return nullptr;
  SliceCleanupOptions cleanup;
  cleanup.wiper = options.slice_wiper;
  cleanup.wiping_delay = options.wiping_delay;
  cleanup.clock = options.clock;
  cleanup.logger = options.logger;
  return std::make_unique<SliceCleanup>(std::move(cleanup));
}

DriverRegistryOptions MakeDriverRegistryOptions(const ManagerOptions& options, HealthSink* health,
                                                SliceCleanup* cleanup) {
  DriverRegistryOptions registry;
  registry.call_timeout = options.call_timeout;
  registry.metrics = options.metrics;
  registry.health = health;
  registry.health_retry_period = options.health_retry_period;
  if (cleanup != nullptr) {
    registry.on_usable_change = [cleanup](const std::string& driver_name, bool usable) {
      cleanup->DriverUsable(driver_name, usable);
    };
  }
  return registry;
}

}  // namespace

Manager::Manager(ManagerOptions options)
    : options_(std::move(options)),
      store_(options_.state_dir),
      health_(HealthCacheOptions{.state_dir = options_.resource_health_status
                                                  ? options_.state_dir
                                                  : std::filesystem::path(),
                                 .clock = options_.clock,
                                 .logger = options_.logger,
                                 .fault_hook = nullptr}),
      slice_cleanup_(MakeSliceCleanup(options_)),
      drivers_(MakeDriverRegistryOptions(options_, options_.resource_health_status ? this : nullptr,
                                         slice_cleanup_.get())) {}

Manager::~Manager() { drivers_.StopHealthStreams(); }

absl::StatusOr<std::unique_ptr<Manager>> Manager::Create(ManagerOptions options) {
  if (options.claims == nullptr) return absl::InvalidArgumentError("ManagerOptions.claims is null");
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("ManagerOptions.state_dir is empty");
  }
  std::unique_ptr<Manager> manager(new Manager(std::move(options)));
  if (manager->options_.writer == nullptr) {
    // What a crash inside a checkpoint write left; a host's writer cleans its own folders.
    if (absl::StatusOr<size_t> removed = manager->store_.RemoveTemporaries(); !removed.ok()) {
      return removed.status();
    }
  }
  absl::StatusOr<std::string> bytes = manager->store_.Read(kCheckpointName);
  absl::MutexLock lock(&manager->mu_);
  if (!bytes.ok() && !absl::IsNotFound(bytes.status())) return bytes.status();
  if (bytes.ok()) {
    absl::StatusOr<CheckpointData> data = Decode(*bytes);
    if (data.ok()) {
      for (ClaimInfoState& state : data->entries.value_or(std::vector<ClaimInfoState>{})) {
        ClaimKey key{state.namespace_name, state.claim_name};
        manager->cache_.insert_or_assign(std::move(key), CachedClaim(std::move(state)));
      }
      return manager;
    }
    // Starting empty writes a new checkpoint over the name: a file that cannot be kept aside
    // first stops the start instead of being lost.
    absl::StatusOr<std::string> aside = MoveDamagedAside(manager->store_, kCheckpointName);
    if (!aside.ok()) {
      return absl::Status(aside.status().code(),
                          absl::StrCat("cannot move aside the unusable DRA checkpoint (",
                                       data.status().message(), "): ", aside.status().message()));
    }
    DEVMGR_LOG(manager->options_.logger, err, "DRA checkpoint is unusable, starting empty", "err",
               data.status(), "keptAs", *aside);
  }
  // As the kubelet: a new checkpoint holds a nil list.
  if (absl::Status written = manager->store_.Write(
          kCheckpointName, Encode(CheckpointData{}, manager->options_.checkpoint_layout));
      !written.ok()) {
    return written;
  }
  return manager;
}

absl::Status Manager::PrepareResources(const Pod& pod, FinalWrite final_write) {
  const absl::Time start = absl::Now();
  absl::Status prepared = Prepare(pod, final_write);
  if (options_.metrics != nullptr) {
    options_.metrics->OperationDone(kPrepareResourcesOperation, !prepared.ok(),
                                    absl::Now() - start);
  }
  if (!prepared.ok()) return Wrap("prepare dynamic resources: ", prepared);
  return absl::OkStatus();
}

absl::Status Manager::Prepare(const Pod& pod, FinalWrite final_write) {
  // Pass 1, the cache untouched: whatever is wrong here leaves no trace, so a pod that can
  // never be prepared can be deleted without waiting for a driver.
  struct ClaimToPrepare {
    ResourceClaim claim;
    ClaimInfoState state;
    std::map<std::string, std::shared_ptr<const DriverClient>> drivers;
  };
  std::vector<ClaimToPrepare> infos;
  for (const PodResourceClaim& pod_claim : PodClaims(pod)) {
    absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, pod_claim);
    if (!resolved.ok()) return resolved.status();
    if (!resolved->name.has_value()) continue;  // no claim was needed
    absl::StatusOr<ResourceClaim> claim =
        options_.claims->GetClaim(pod.namespace_name, *resolved->name);
    if (!claim.ok()) {
      return Wrap(absl::StrCat("fetch ResourceClaim ", *resolved->name, ": "), claim.status());
    }
    // The host's source may answer with another claim than the one asked for (the API server
    // never does): claims are cached, prepared and unprepared under the name they were asked
    // by, so such an answer would be prepared and never unprepared.
    if (claim->namespace_name != pod.namespace_name || claim->name != *resolved->name) {
      return absl::FailedPreconditionError(
          absl::StrCat("fetch ResourceClaim ", *resolved->name,
                       ": the claim source answered with ResourceClaim ", claim->namespace_name,
                       "/", claim->name, " for ", pod.namespace_name, "/", *resolved->name));
    }
    if (resolved->must_check_owner) {
      if (absl::Status owned = IsForPod(pod, *claim, options_.workload_resource_claims);
          !owned.ok()) {
        return owned;
      }
    }
    if (!IsReservedForPod(pod, *claim, options_.workload_resource_claims)) {
      return absl::FailedPreconditionError(absl::StrCat("pod ", pod.name, " (", pod.uid,
                                                        ") is not allowed to use ResourceClaim ",
                                                        *resolved->name, " (", claim->uid, ")"));
    }
    absl::StatusOr<ClaimInfoState> state =
        NewClaimInfoState(*claim, options_.optional_node_operations);
    if (!state.ok()) return Wrap(absl::StrCat("ResourceClaim ", claim->name, ": "), state.status());
    ClaimToPrepare info{*std::move(claim), *std::move(state), {}};
    for (const auto& [driver, driver_state] : *info.state.driver_state) {
      // Nothing to prepare on the node: the driver need not even be registered.
      if (DriverSkips(driver_state, kSkipNodePrepareResources)) continue;
      absl::StatusOr<std::shared_ptr<const DriverClient>> client = drivers_.Get(driver);
      if (!client.ok()) return client.status();
      info.drivers[driver] = *std::move(client);
    }
    infos.push_back(std::move(info));
  }

  // Pass 2, under the lock: record the pod with each claim (durably, so that a pod deleted
  // before its claims are prepared is found by Reconcile) and batch the claims not prepared
  // yet per driver.
  std::map<std::string, std::vector<draapi::v1::Claim>> batches;
  std::map<std::string, std::shared_ptr<const DriverClient>> clients;
  std::vector<ClaimKey> to_prepare;
  absl::Status conflict;
  uint64_t recorded = 0;
  Busy busy(*this);
  {
    absl::MutexLock lock(&mu_);
    std::vector<ClaimKey> keys;
    for (const ClaimToPrepare& info : infos) {
      keys.emplace_back(info.claim.namespace_name, info.claim.name);
    }
    AwaitIdleLocked(keys);
    for (ClaimToPrepare& info : infos) {
      ClaimKey key{info.claim.namespace_name, info.claim.name};
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        it = cache_.emplace(key, CachedClaim(std::move(info.state))).first;
      } else if (it->second.state().claim_uid != info.claim.uid) {
        conflict = absl::FailedPreconditionError(absl::StrCat(
            "old ResourceClaim with same name ", info.claim.name, " and different UID ",
            it->second.state().claim_uid, " still exists (previous pod force-deleted?!)"));
        break;
      }
      CachedClaim& cached = it->second;
      if (!cached.state().pod_uids.has_value() || !cached.state().pod_uids->contains(pod.uid)) {
        ClaimInfoState& state = cached.mutable_state();
        if (!state.pod_uids.has_value()) state.pod_uids.emplace();
        state.pod_uids->insert(pod.uid);
      }
      // Prepared already, or named by two of the pod's claims: asked for once.
      if ((cached.prepared && !cached.unprepare_asked) ||
          std::find(to_prepare.begin(), to_prepare.end(), key) != to_prepare.end()) {
        continue;
      }
      to_prepare.push_back(key);
      MarkBusyLocked(busy, key);
      for (const auto& [driver, client] : info.drivers) {
        batches[driver].push_back(ClaimMessage(cached.state()));
        clients[driver] = client;
      }
    }
    recorded = ++version_;
  }
  if (absl::Status written = Persist(recorded); !written.ok()) {
    return Wrap("checkpoint ResourceClaim cache: ", written);
  }
  if (!conflict.ok()) return conflict;

  // Pass 3, without the lock: one call per driver, carrying every claim of the pod it serves.
  for (const auto& [driver, claims] : batches) {
    draapi::v1::NodePrepareResourcesRequest request;
    for (const draapi::v1::Claim& claim : claims) *request.add_claims() = claim;
    absl::StatusOr<draapi::v1::NodePrepareResourcesResponse> response =
        clients[driver]->NodePrepareResources(request);
    if (!response.ok()) return Wrap("NodePrepareResources: ", response.status());
    if (absl::Status checked = CheckAnswer("NodePrepareResources", claims, response->claims());
        !checked.ok()) {
      return checked;
    }
    absl::MutexLock lock(&mu_);
    for (const draapi::v1::Claim& claim : claims) {
      auto it = cache_.find(ClaimKey{claim.namespace_(), claim.name()});
      if (it == cache_.end() || it->second.state().claim_uid != claim.uid()) {
        return absl::InternalError(
            absl::StrCat("internal error: unable to get claim info for ResourceClaim ",
                         claim.name(), " in namespace ", claim.namespace_()));
      }
      // The driver's answer is the whole list of its devices for the claim: a retry replaces it.
      // None is no list, as upstream writes it ("Devices":null: it only ever adds devices).
      std::optional<std::vector<CheckpointDevice>> devices;
      for (const draapi::v1::Device& device : response->claims().at(claim.uid()).devices()) {
        if (!devices.has_value()) devices.emplace();
        devices->push_back(FromProto(device));
      }
      // A state read back may have no driver map ("DriverState":null): made as upstream's
      // addDevice makes it.
      std::optional<std::map<std::string, DriverState>>& drivers =
          it->second.mutable_state().driver_state;
      if (!drivers.has_value()) drivers.emplace();
      (*drivers)[driver].devices = std::move(devices);
    }
    ++version_;  // durable with pass 4's version
  }

  // Pass 4: every claim is prepared; the devices become durable (here, or on the host's write).
  uint64_t done = 0;
  {
    absl::MutexLock lock(&mu_);
    for (const ClaimKey& key : to_prepare) {
      auto it = cache_.find(key);
      if (it == cache_.end()) continue;
      it->second.prepared = true;
      it->second.unprepare_asked = false;
    }
    done = ++version_;
  }
  if (final_write == FinalWrite::kCarried) return absl::OkStatus();
  if (absl::Status written = Persist(done); !written.ok()) {
    return Wrap("checkpoint ResourceClaim state: ", written);
  }
  return absl::OkStatus();
}

std::vector<PodResourceClaim> Manager::PodClaims(const Pod& pod) const {
  std::vector<PodResourceClaim> claims = pod.resource_claims;
  if (const PodExtendedResourceClaimStatus* extended = ExtendedResourceClaim(pod)) {
    claims.push_back({"", extended->resource_claim_name, std::nullopt});
  }
  return claims;
}

const PodExtendedResourceClaimStatus* Manager::ExtendedResourceClaim(const Pod& pod) const {
  if (!options_.extended_resource || !pod.extended_resource_claim_status.has_value()) {
    return nullptr;
  }
  return &*pod.extended_resource_claim_status;
}

absl::StatusOr<std::vector<std::pair<std::string, std::vector<std::string>>>>
Manager::ContainerClaimNames(const Pod& pod, const Container& container) {
  std::vector<std::pair<std::string, std::vector<std::string>>> names;
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    std::vector<std::string> requests;
    for (const ContainerClaim& used : container.claims) {
      if (used.name == pod_claim.name) requests.push_back(used.request);
    }
    if (requests.empty()) continue;
    absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, pod_claim);
    if (!resolved.ok()) return resolved.status();
    if (!resolved->name.has_value()) continue;
    names.emplace_back(*resolved->name, std::move(requests));
  }
  return names;
}

absl::StatusOr<std::vector<std::string>> Manager::GetResources(const Pod& pod,
                                                               const Container& container) const {
  absl::StatusOr<std::vector<std::pair<std::string, std::vector<std::string>>>> names =
      ContainerClaimNames(pod, container);
  if (!names.ok()) return names.status();
  // The requests of the extended-resource claim that satisfy a resource the container requests.
  if (const PodExtendedResourceClaimStatus* extended = ExtendedResourceClaim(pod)) {
    std::vector<std::string> requests;
    for (const ContainerExtendedResourceRequest& mapping : extended->request_mappings) {
      if (mapping.container_name == container.name &&
          absl::c_linear_search(container.requested_resources, mapping.resource_name)) {
        requests.push_back(mapping.request_name);
      }
    }
    if (!requests.empty()) names->emplace_back(extended->resource_claim_name, std::move(requests));
  }
  std::vector<std::string> cdi_devices;
  absl::MutexLock lock(&mu_);
  for (const auto& [claim_name, requests] : *names) {
    auto it = cache_.find(ClaimKey{pod.namespace_name, claim_name});
    if (it == cache_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("internal error: unable to get claim info for ResourceClaim ", claim_name,
                       " in namespace ", pod.namespace_name));
    }
    for (const std::string& request : requests) {
      std::vector<std::string> ids = CdiDevices(it->second.state(), request);
      cdi_devices.insert(cdi_devices.end(), ids.begin(), ids.end());
    }
  }
  return cdi_devices;
}

absl::Status Manager::UnprepareResources(const Pod& pod) {
  const absl::Time start = absl::Now();
  absl::Status unprepared = UnprepareAll(pod);
  if (options_.metrics != nullptr) {
    options_.metrics->OperationDone(kUnprepareResourcesOperation, !unprepared.ok(),
                                    absl::Now() - start);
  }
  return unprepared;
}

absl::Status Manager::UnprepareAll(const Pod& pod) {
  std::vector<std::string> claim_names;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, cached] : cache_) {
      if (cached.state().pod_uids.has_value() && cached.state().pod_uids->contains(pod.uid)) {
        claim_names.push_back(key.second);
      }
    }
  }
  // None recorded (the checkpoint was lost, say): the pod says which claims it had.
  if (claim_names.empty()) {
    for (const PodResourceClaim& pod_claim : PodClaims(pod)) {
      absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, pod_claim);
      if (!resolved.ok()) return Wrap("unprepare dynamic resources: ", resolved.status());
      if (resolved->name.has_value()) claim_names.push_back(*resolved->name);
    }
  }
  absl::Status unprepared = Unprepare(pod.uid, pod.namespace_name, claim_names);
  if (!unprepared.ok()) return Wrap("unprepare dynamic resources: ", unprepared);
  return absl::OkStatus();
}

absl::Status Manager::Unprepare(const std::string& pod_uid, const std::string& namespace_name,
                                const std::vector<std::string>& claim_names) {
  std::map<std::string, std::vector<draapi::v1::Claim>> batches;
  std::vector<ClaimKey> to_forget;
  bool changed = false;
  Busy busy(*this);
  {
    absl::MutexLock lock(&mu_);
    std::vector<ClaimKey> keys;
    for (const std::string& name : claim_names) keys.emplace_back(namespace_name, name);
    AwaitIdleLocked(keys);
    for (const std::string& name : claim_names) {
      auto it = cache_.find(ClaimKey{namespace_name, name});
      // Named twice (two of the pod's references to one claim): unprepared once.
      if (it == cache_.end() ||
          std::find(to_forget.begin(), to_forget.end(), it->first) != to_forget.end()) {
        continue;
      }
      const ClaimInfoState& state = it->second.state();
      const bool ours = state.pod_uids.has_value() && state.pod_uids->contains(pod_uid);
      const size_t users = state.pod_uids.has_value() ? state.pod_uids->size() : 0;
      // Other pods still use it (or only others do): the pod lets go, the claim stays.
      if (users > 1 || (users == 1 && !ours)) {
        if (ours) {
          it->second.mutable_state().pod_uids->erase(pod_uid);
          changed = true;
        }
        continue;
      }
      to_forget.push_back(it->first);
      MarkBusyLocked(busy, it->first);
      for (const auto& [driver, driver_state] :
           state.driver_state.value_or(std::map<std::string, DriverState>{})) {
        if (DriverSkips(driver_state, kSkipNodeUnprepareResources)) continue;
        batches[driver].push_back(ClaimMessage(state));
      }
    }
    if (changed) ++version_;  // durable below, with the claims forgotten
  }

  for (const auto& [driver, claims] : batches) {
    absl::StatusOr<std::shared_ptr<const DriverClient>> client = drivers_.Get(driver);
    if (!client.ok()) return client.status();
    {
      // Should the driver fail, a pod that comes to share one of these claims has it prepared
      // again rather than trust what this call may have undone (upstream trusts it).
      absl::MutexLock lock(&mu_);
      for (const draapi::v1::Claim& claim : claims) {
        auto it = cache_.find(ClaimKey{claim.namespace_(), claim.name()});
        if (it != cache_.end()) it->second.unprepare_asked = true;
      }
    }
    draapi::v1::NodeUnprepareResourcesRequest request;
    for (const draapi::v1::Claim& claim : claims) *request.add_claims() = claim;
    absl::StatusOr<draapi::v1::NodeUnprepareResourcesResponse> response =
        (*client)->NodeUnprepareResources(request);
    if (!response.ok()) return Wrap("NodeUnprepareResources: ", response.status());
    if (absl::Status checked = CheckAnswer("NodeUnprepareResources", claims, response->claims());
        !checked.ok()) {
      return checked;
    }
  }

  if (!changed && to_forget.empty()) return absl::OkStatus();
  uint64_t forgotten = 0;
  {
    absl::MutexLock lock(&mu_);
    for (const ClaimKey& key : to_forget) cache_.erase(key);
    forgotten = ++version_;
  }
  if (absl::Status written = Persist(forgotten); !written.ok()) {
    return Wrap("checkpoint ResourceClaim state: ", written);
  }
  return absl::OkStatus();
}

Manager::Busy::~Busy() {
  if (keys_.empty()) return;
  absl::MutexLock lock(&manager_.mu_);
  for (const ClaimKey& key : keys_) manager_.busy_.erase(key);
}

void Manager::MarkBusyLocked(Busy& busy, const ClaimKey& key) {
  if (busy_.insert(key).second) busy.keys_.push_back(key);
}

void Manager::AwaitIdleLocked(const std::vector<ClaimKey>& keys) {
  const auto idle = [this, &keys]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return absl::c_none_of(keys, [this](const ClaimKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return busy_.contains(key);
    });
  };
  mu_.Await(absl::Condition(&idle));
}

bool Manager::Prepared(const Pod& pod) const {
  const std::vector<PodResourceClaim> claims = PodClaims(pod);
  absl::MutexLock lock(&mu_);
  for (const PodResourceClaim& pod_claim : claims) {
    absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, pod_claim);
    if (!resolved.ok()) return false;
    if (!resolved->name.has_value()) continue;
    auto it = cache_.find(ClaimKey{pod.namespace_name, *resolved->name});
    if (it == cache_.end() || !it->second.prepared || it->second.unprepare_asked) return false;
    // Prepared for other pods only (a removal of this one that failed after its unprepare took
    // its reference away): the next PrepareResources gives it back.
    const std::optional<std::set<std::string>>& pod_uids = it->second.state().pod_uids;
    if (!pod_uids.has_value() || !pod_uids->contains(pod.uid)) return false;
  }
  return true;
}

uint64_t Manager::ClaimsRevision() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

bool Manager::PodMightNeedToUnprepareResources(absl::string_view pod_uid_view) const {
  const std::string pod_uid(pod_uid_view);
  absl::MutexLock lock(&mu_);
  for (const auto& [key, cached] : cache_) {
    if (cached.state().pod_uids.has_value() && cached.state().pod_uids->contains(pod_uid)) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<ClaimInfoState>> Manager::GetContainerClaimInfos(
    const Pod& pod, const Container& container) const {
  absl::StatusOr<std::vector<std::pair<std::string, std::vector<std::string>>>> names =
      ContainerClaimNames(pod, container);
  if (!names.ok()) return names.status();
  std::vector<ClaimInfoState> infos;
  absl::MutexLock lock(&mu_);
  for (const auto& [claim_name, requests] : *names) {
    auto it = cache_.find(ClaimKey{pod.namespace_name, claim_name});
    if (it == cache_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("unable to get information for ResourceClaim ", claim_name));
    }
    infos.push_back(it->second.state());
  }
  const PodExtendedResourceClaimStatus* extended = ExtendedResourceClaim(pod);
  if (extended == nullptr || !absl::c_any_of(extended->request_mappings,
                                             [&](const ContainerExtendedResourceRequest& mapping) {
                                               return mapping.container_name == container.name;
                                             })) {
    return infos;
  }
  auto it = cache_.find(ClaimKey{pod.namespace_name, extended->resource_claim_name});
  if (it == cache_.end()) {
    return absl::FailedPreconditionError(absl::StrCat("unable to get claim info for claim ",
                                                      extended->resource_claim_name,
                                                      " in namespace ", pod.namespace_name));
  }
  infos.push_back(it->second.state());
  return infos;
}

std::vector<ResourceStatus> Manager::ContainerResourceStatuses(const Pod& pod,
                                                               const Container& container) const {
  if (!options_.resource_health_status) return {};
  // Each claim on its own, as upstream's UpdateAllocatedResourcesStatus: a claim that does not
  // resolve yet (a template's claim not in the pod's status) or is not cached is left out, and
  // the container's other claims are still reported.
  std::vector<std::string> names;
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    if (absl::c_none_of(container.claims,
                        [&](const ContainerClaim& used) { return used.name == pod_claim.name; })) {
      continue;
    }
    absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, pod_claim);
    if (resolved.ok() && resolved->name.has_value()) names.push_back(*resolved->name);
  }
  std::vector<ClaimInfoState> infos;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& name : names) {
      auto it = cache_.find(ClaimKey{pod.namespace_name, name});
      if (it != cache_.end()) infos.push_back(it->second.state());
    }
  }
  return BuildContainerResourceStatuses(pod, container, infos, health_);
}

void Manager::HealthReported(const std::string& driver_name,
                             const healthapi::NodeWatchResourcesResponse& response) {
  HealthChanged(driver_name, health_.Update(driver_name, BuildDeviceHealths(response, driver_name,
                                                                            options_.logger)));
}

void Manager::HealthStreamEnded(const std::string& driver_name, const HealthStreamEnd& end) {
  // A stream that never opened carried no news (upstream clears nothing for it).
  if (!end.established) return;
  std::vector<DeviceHealth> devices;
  const DevicesHealthMap snapshot = health_.Snapshot();
  if (auto driver = snapshot.find(driver_name); driver != snapshot.end()) {
    for (const auto& [key, device] : driver->second) devices.push_back(device);
  }
  if (devices.empty()) return;
  if (absl::Status cleared = health_.ClearDriver(driver_name); !cleared.ok()) {
    DEVMGR_LOG(options_.logger, warn, "Failed to write the DRA health state", "err", cleared);
  }
  HealthChanged(driver_name, devices);
}

void Manager::HealthChanged(const std::string& driver_name,
                            const std::vector<DeviceHealth>& devices) {
  if (devices.empty() || !options_.on_health_change) return;
  std::vector<ClaimInfoState> claims;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, cached] : cache_) claims.push_back(cached.state());
  }
  const std::vector<std::string> pods = PodsUsingDevices(claims, driver_name, devices);
  if (!pods.empty()) options_.on_health_change(pods);
}

std::vector<ClaimSnapshot> Manager::Claims() const {
  std::vector<ClaimSnapshot> claims;
  absl::MutexLock lock(&mu_);
  claims.reserve(cache_.size());
  for (const auto& [key, cached] : cache_) claims.push_back({cached.state(), cached.prepared});
  return claims;
}

std::map<std::string, int64_t> Manager::ClaimsInUse() const {
  std::map<std::string, int64_t> counts;
  int64_t total = 0;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, cached] : cache_) {
    if (!cached.prepared) continue;
    ++total;
    for (const auto& [driver, state] :
         cached.state().driver_state.value_or(std::map<std::string, DriverState>{})) {
      ++counts[driver];
    }
  }
  counts[std::string(kClaimsInUseAnyDriver)] = total;
  return counts;
}

absl::Status Manager::Reconcile(const std::set<std::string>& active_pod_uids,
                                const PodStepFn& around) {
  // Pod UID -> its namespace and the claims recorded for it.
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> inactive;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, cached] : cache_) {
      for (const std::string& uid : cached.state().pod_uids.value_or(std::set<std::string>{})) {
        if (active_pod_uids.contains(uid)) continue;
        auto& [namespace_name, names] = inactive[uid];
        namespace_name = key.first;
        names.push_back(key.second);
      }
    }
  }
  absl::Status first;
  for (const auto& [uid, claims] : inactive) {
    const auto unprepare = [&, &uid = uid, &claims = claims] {
      return Unprepare(uid, claims.first, claims.second);
    };
    absl::Status unprepared = around != nullptr ? around(uid, unprepare) : unprepare();
    if (unprepared.ok()) continue;
    DEVMGR_LOG(options_.logger, info,
               "Unpreparing pod resources in reconcile loop failed, will retry", "podUID", uid,
               "err", unprepared);
    if (first.ok()) first = unprepared;
  }
  return first;
}

std::shared_ptr<const RenderedEntry> Manager::CachedClaim::Rendered(Layout layout) {
  if (rendered_ == nullptr)
    rendered_ = std::make_shared<RenderedEntry>(RenderEntry(state_, layout));
  return rendered_;
}

absl::Status Manager::Persist(uint64_t version) {
  absl::MutexLock write_lock(&write_mu_);
  // A write that began after the caller's change covered it.
  if (durable_version_ >= version) return absl::OkStatus();
  return Write({});
}

absl::Status Manager::Flush() {
  uint64_t version = 0;
  {
    absl::MutexLock lock(&mu_);
    version = version_;
  }
  return Persist(version);
}

absl::Status Manager::WriteTogether(std::vector<FileStore::PlacedBytes> files) {
  absl::MutexLock write_lock(&write_mu_);
  return Write(std::move(files));
}

absl::Status Manager::Write(std::vector<FileStore::PlacedBytes> files) {
  // The rendered entries are immutable: they are joined outside the lock.
  std::vector<std::shared_ptr<const RenderedEntry>> rendered;
  uint64_t snapshot = 0;
  {
    absl::MutexLock lock(&mu_);
    snapshot = version_;
    if (snapshot > durable_version_) {
      rendered.reserve(cache_.size());
      for (auto& [key, cached] : cache_) {
        rendered.push_back(cached.Rendered(options_.checkpoint_layout));
      }
    }
  }
  if (snapshot == durable_version_) {
    if (files.empty()) return absl::OkStatus();
    return WriteThrough(options_.writer, std::move(files));
  }
  std::vector<const RenderedEntry*> entries;
  entries.reserve(rendered.size());
  for (const auto& entry : rendered) entries.push_back(entry.get());
  const std::string bytes = EncodeRendered(entries);
  files.insert(files.begin(), {&store_, kCheckpointName, bytes});
  if (absl::Status written = WriteThrough(options_.writer, std::move(files)); !written.ok()) {
    return written;
  }
  durable_version_ = snapshot;
  return absl::OkStatus();
}

}  // namespace devmgr::dra
