#include "node/claim_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/damaged_copy.h"

namespace devmgr::node {
namespace {

bool ReservedFor(const dra::ResourceClaim& claim, const std::string& pod_uid) {
  return std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                     [&](const dra::ResourceClaimConsumerReference& consumer) {
                       return consumer.resource == "pods" && consumer.uid == pod_uid;
                     });
}

// ClaimNames: the names of the claims `pod` uses, directly, generated from a template, or made
// by the scheduler for its extended resources.
std::vector<std::string> ClaimNames(const dra::Pod& pod) {
  std::vector<std::string> names;
  for (const dra::PodResourceClaim& claim : pod.resource_claims) {
    if (claim.resource_claim_name.has_value()) names.push_back(*claim.resource_claim_name);
  }
  for (const dra::PodResourceClaimStatus& status : pod.resource_claim_statuses) {
    if (status.resource_claim_name.has_value()) names.push_back(*status.resource_claim_name);
  }
  if (pod.extended_resource_claim_status.has_value()) {
    names.push_back(pod.extended_resource_claim_status->resource_claim_name);
  }
  return names;
}

}  // namespace

ClaimStore::ClaimStore(std::filesystem::path folder, LoggerPtr logger, DurableWriter* next)
    : store_(std::move(folder)), logger_(std::move(logger)), next_(next) {}

absl::Status ClaimStore::Load() {
  absl::MutexLock write_lock(&write_mu_);
  absl::StatusOr<std::string> bytes = store_.Read(kClaimRecordName);
  if (absl::IsNotFound(bytes.status())) return absl::OkStatus();
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<ClaimRecord> record = DecodeClaimRecord(*bytes);
  if (absl::IsFailedPrecondition(record.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat((store_.folder() / kClaimRecordName).string(), " ", record.status().message(),
                     ": refusing to start rather than lose its claims"));
  }
  if (!record.ok()) {
    absl::StatusOr<std::string> aside = MoveDamagedAside(store_, kClaimRecordName);
    if (!aside.ok()) return aside.status();
    DEVMGR_LOG(logger_, err, "The claim record is unusable; it was kept aside", "keptAs", *aside,
               "err", record.status());
    return absl::OkStatus();
  }
  Change change;
  for (dra::Pod& pod : record->pods) {
    std::string encoded = EncodeRecordPod(pod);
    std::string uid = pod.uid;
    change.pods.insert_or_assign(std::move(uid), StoredPod{std::move(pod), std::move(encoded)});
  }
  for (dra::ResourceClaim& claim : record->claims) {
    ClaimKey key{claim.namespace_name, claim.name};
    std::string encoded = EncodeRecordClaim(claim);
    change.claims.insert_or_assign(std::move(key),
                                   StoredClaim{std::move(claim), std::move(encoded)});
  }
  absl::MutexLock lock(&mu_);
  Install(std::move(change));
  written_ = revision_;
  return absl::OkStatus();
}

absl::Status ClaimStore::Add(const PodClaims& claims) {
  const dra::Pod& pod = claims.pod;
  Change change;
  // Under one hold of the lock: what is checked is what is changed.
  absl::MutexLock lock(&mu_);
  if (pods_.contains(pod.uid)) {
    return absl::AlreadyExistsError(absl::StrCat("pod ", pod.uid, " already has its claims"));
  }
  for (const dra::ResourceClaim& claim : claims.claims) {
    const ClaimKey key{claim.namespace_name, claim.name};
    // A claim stored already keeps the first pod's copy.
    const std::string* held = nullptr;
    if (auto stored = claims_.find(key); stored != claims_.end()) {
      held = &stored->second.claim.uid;
    } else if (auto [brought, added] =
                   change.claims.emplace(key, StoredClaim{claim, std::string()});
               !added) {
      held = &brought->second->claim.uid;
    }
    if (held != nullptr && *held != claim.uid) {
      return absl::AlreadyExistsError(absl::StrCat("ResourceClaim ", claim.namespace_name, "/",
                                                   claim.name, " is held with UID ", *held,
                                                   ", not ", claim.uid));
    }
  }
  // Every allocated claim the pod uses, brought now or by an earlier pod, is reserved for it.
  for (const std::string& name : ClaimNames(pod)) {
    const ClaimKey key{pod.namespace_name, name};
    auto changed = change.claims.find(key);
    auto stored = claims_.find(key);
    const dra::ResourceClaim* claim = changed != change.claims.end() ? &changed->second->claim
                                      : stored != claims_.end()      ? &stored->second.claim
                                                                     : nullptr;
    if (claim == nullptr || !claim->allocation.has_value() || ReservedFor(*claim, pod.uid)) {
      continue;
    }
    if (changed == change.claims.end()) {
      changed = change.claims.emplace(key, stored->second).first;
    }
    changed->second->claim.reserved_for.push_back({"", "pods", pod.name, pod.uid});
  }
  for (auto& [key, claim] : change.claims) claim->encoded = EncodeRecordClaim(claim->claim);
  change.pods.emplace(pod.uid, StoredPod{pod, EncodeRecordPod(pod)});
  Install(std::move(change));
  return absl::OkStatus();
}

absl::Status ClaimStore::Replace(const dra::Pod& pod) {
  absl::MutexLock lock(&mu_);
  auto stored = pods_.find(pod.uid);
  if (stored == pods_.end()) {
    return absl::NotFoundError(absl::StrCat("pod ", pod.uid, " has no claims stored"));
  }
  if (stored->second.pod.namespace_name != pod.namespace_name ||
      ClaimNames(stored->second.pod) != ClaimNames(pod)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod ", pod.uid, " is stored with other claims"));
  }
  Change change;
  change.pods.emplace(pod.uid, StoredPod{pod, EncodeRecordPod(pod)});
  Install(std::move(change));
  return absl::OkStatus();
}

ClaimStore::Change ClaimStore::Forget(const std::set<std::string>& pod_uids) {
  Change change;
  for (const std::string& uid : pod_uids) {
    if (pods_.contains(uid)) change.pods.emplace(uid, std::nullopt);
  }
  if (change.pods.empty()) return change;
  for (const auto& [key, stored] : claims_) {
    // Kept while a stored pod of its namespace that stays names it (directly, as a generated
    // claim, or for its extended resources).
    auto namers = namers_.find(key);
    const bool named = namers != namers_.end() &&
                       std::any_of(namers->second.begin(), namers->second.end(),
                                   [&](const std::string& uid) { return !pod_uids.contains(uid); });
    if (!named) {
      change.claims.emplace(key, std::nullopt);
      continue;
    }
    auto forgotten = [&](const dra::ResourceClaimConsumerReference& consumer) {
      return consumer.resource == "pods" && pod_uids.contains(consumer.uid);
    };
    if (std::none_of(stored.claim.reserved_for.begin(), stored.claim.reserved_for.end(),
                     forgotten)) {
      continue;
    }
    StoredClaim changed{stored.claim, std::string()};
    std::erase_if(changed.claim.reserved_for, forgotten);
    changed.encoded = EncodeRecordClaim(changed.claim);
    change.claims.emplace(key, std::move(changed));
  }
  return change;
}

void ClaimStore::Remove(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  Change change = Forget({pod_uid});
  if (!change.pods.empty()) Install(std::move(change));
}

absl::Status ClaimStore::Retain(const std::set<std::string>& pod_uids) {
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> gone;
    for (const auto& [uid, pod] : pods_) {
      if (!pod_uids.contains(uid)) gone.insert(uid);
    }
    Change change = Forget(gone);
    if (change.pods.empty()) return absl::OkStatus();
    DEVMGR_LOG(logger_, info, "Forgetting the claims of pods the node does not hold", "pods",
               static_cast<int64_t>(change.pods.size()));
    Install(std::move(change));
  }
  return Flush();
}

absl::Status ClaimStore::Flush() {
  absl::MutexLock write_lock(&write_mu_);
  return Write({});
}

absl::Status ClaimStore::WriteTogether(std::vector<FileStore::PlacedBytes> files) {
  absl::MutexLock write_lock(&write_mu_);
  return Write(std::move(files));
}

absl::Status ClaimStore::Write(std::vector<FileStore::PlacedBytes> files) {
  std::string record;
  uint64_t revision = 0;
  {
    absl::MutexLock lock(&mu_);
    revision = revision_;
    if (revision > written_) {
      // Joined under the lock: changes do not wait for a write in progress, only for this.
      std::vector<const std::string*> pods;
      pods.reserve(pods_.size());
      for (const auto& [uid, stored] : pods_) pods.push_back(&stored.encoded);
      std::vector<const std::string*> claims;
      claims.reserve(claims_.size());
      for (const auto& [key, stored] : claims_) claims.push_back(&stored.encoded);
      record = JoinClaimRecord(pods, claims);
    }
  }
  if (revision == written_) {
    if (files.empty()) return absl::OkStatus();
    return WriteThrough(next_, std::move(files));
  }
  files.insert(files.begin(), {&store_, kClaimRecordName, record});
  if (absl::Status written = WriteThrough(next_, std::move(files)); !written.ok()) return written;
  written_ = revision;
  return absl::OkStatus();
}

void ClaimStore::Install(Change change) {
  for (auto& [uid, pod] : change.pods) {
    if (pod.has_value()) {
      for (const std::string& name : ClaimNames(pod->pod)) {
        namers_[ClaimKey{pod->pod.namespace_name, name}].insert(uid);
      }
      pods_.insert_or_assign(uid, *std::move(pod));
      continue;
    }
    auto it = pods_.find(uid);
    for (const std::string& name : ClaimNames(it->second.pod)) {
      auto namers = namers_.find(ClaimKey{it->second.pod.namespace_name, name});
      if (namers == namers_.end()) continue;
      namers->second.erase(uid);
      if (namers->second.empty()) namers_.erase(namers);
    }
    pods_.erase(it);
  }
  for (auto& [key, claim] : change.claims) {
    if (claim.has_value()) {
      claims_.insert_or_assign(key, *std::move(claim));
    } else {
      claims_.erase(key);
    }
  }
  ++revision_;
}

uint64_t ClaimStore::Revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

std::optional<dra::Pod> ClaimStore::FindPod(const std::string& pod_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod;
}

std::vector<dra::Pod> ClaimStore::Pods() const {
  std::vector<dra::Pod> pods;
  absl::MutexLock lock(&mu_);
  pods.reserve(pods_.size());
  for (const auto& [uid, stored] : pods_) pods.push_back(stored.pod);
  return pods;
}

std::vector<dra::ResourceClaim> ClaimStore::Claims() const {
  std::vector<dra::ResourceClaim> claims;
  absl::MutexLock lock(&mu_);
  claims.reserve(claims_.size());
  for (const auto& [key, stored] : claims_) claims.push_back(stored.claim);
  return claims;
}

absl::StatusOr<dra::ResourceClaim> ClaimStore::GetClaim(const std::string& namespace_name,
                                                        const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = claims_.find(ClaimKey{namespace_name, name});
  if (it == claims_.end()) {
    return absl::NotFoundError(
        absl::StrCat("resourceclaims.resource.k8s.io \"", name, "\" not found"));
  }
  return it->second.claim;
}

}  // namespace devmgr::node
