#include "node/claim_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

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

ClaimStore::ClaimStore(std::filesystem::path folder, LoggerPtr logger)
    : store_(std::move(folder)), logger_(std::move(logger)) {}

absl::Status ClaimStore::Load() {
  absl::MutexLock write_lock(&write_mu_);
  absl::StatusOr<std::string> bytes = store_.Read(kClaimRecordName);
  if (absl::IsNotFound(bytes.status())) return absl::OkStatus();
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<ClaimRecord> record = DecodeClaimRecord(*bytes);
  if (!record.ok()) {
    const std::string aside = absl::StrCat(kClaimRecordName, ".corrupt");
    if (absl::Status renamed = store_.Rename(kClaimRecordName, aside); !renamed.ok()) {
      return renamed;
    }
    DEVMGR_LOG(logger_, err, "The claim record is unusable; it was kept aside", "keptAs", aside,
               "err", record.status());
    return absl::OkStatus();
  }
  Contents contents;
  for (dra::Pod& pod : record->pods) {
    std::string uid = pod.uid;
    contents.pods.emplace(std::move(uid), std::move(pod));
  }
  for (dra::ResourceClaim& claim : record->claims) {
    ClaimKey key{claim.namespace_name, claim.name};
    contents.claims.emplace(std::move(key), std::move(claim));
  }
  absl::MutexLock lock(&mu_);
  contents_ = std::move(contents);
  ++revision_;
  return absl::OkStatus();
}

absl::Status ClaimStore::Add(const PodClaims& claims) {
  absl::MutexLock write_lock(&write_mu_);
  Contents next;
  {
    absl::MutexLock lock(&mu_);
    next = contents_;
  }
  const dra::Pod& pod = claims.pod;
  if (!next.pods.emplace(pod.uid, pod).second) {
    return absl::AlreadyExistsError(absl::StrCat("pod ", pod.uid, " already has its claims"));
  }
  for (const dra::ResourceClaim& claim : claims.claims) {
    auto [it, added] = next.claims.emplace(ClaimKey{claim.namespace_name, claim.name}, claim);
    if (!added && it->second.uid != claim.uid) {
      return absl::AlreadyExistsError(absl::StrCat("ResourceClaim ", claim.namespace_name, "/",
                                                   claim.name, " is held with UID ", it->second.uid,
                                                   ", not ", claim.uid));
    }
  }
  // Every allocated claim the pod uses, brought now or by an earlier pod, is reserved for it.
  for (const std::string& name : ClaimNames(pod)) {
    auto it = next.claims.find(ClaimKey{pod.namespace_name, name});
    if (it == next.claims.end()) continue;
    dra::ResourceClaim& stored = it->second;
    if (stored.allocation.has_value() && !ReservedFor(stored, pod.uid)) {
      stored.reserved_for.push_back({"", "pods", pod.name, pod.uid});
    }
  }
  return Replace(std::move(next));
}

ClaimStore::Contents ClaimStore::Without(Contents contents, const std::set<std::string>& pod_uids) {
  for (const std::string& uid : pod_uids) contents.pods.erase(uid);
  for (auto it = contents.claims.begin(); it != contents.claims.end();) {
    std::vector<dra::ResourceClaimConsumerReference>& reserved = it->second.reserved_for;
    std::erase_if(reserved, [&](const dra::ResourceClaimConsumerReference& consumer) {
      return consumer.resource == "pods" && pod_uids.contains(consumer.uid);
    });
    // Kept while a stored pod of its namespace names it (directly or as a generated claim).
    bool used = false;
    for (const auto& [uid, pod] : contents.pods) {
      if (pod.namespace_name != it->first.first) continue;
      const std::vector<std::string> names = ClaimNames(pod);
      used = used || std::find(names.begin(), names.end(), it->first.second) != names.end();
    }
    it = used ? std::next(it) : contents.claims.erase(it);
  }
  return contents;
}

absl::Status ClaimStore::Remove(const std::string& pod_uid) {
  absl::MutexLock write_lock(&write_mu_);
  Contents next;
  {
    absl::MutexLock lock(&mu_);
    if (!contents_.pods.contains(pod_uid)) return absl::OkStatus();
    next = contents_;
  }
  return Replace(Without(std::move(next), {pod_uid}));
}

absl::Status ClaimStore::Retain(const std::set<std::string>& pod_uids) {
  absl::MutexLock write_lock(&write_mu_);
  std::set<std::string> gone;
  Contents next;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [uid, pod] : contents_.pods) {
      if (!pod_uids.contains(uid)) gone.insert(uid);
    }
    if (gone.empty()) return absl::OkStatus();
    next = contents_;
  }
  DEVMGR_LOG(logger_, info, "Forgetting the claims of pods that were never admitted", "pods",
             static_cast<int64_t>(gone.size()));
  return Replace(Without(std::move(next), gone));
}

absl::Status ClaimStore::Replace(Contents next) {
  ClaimRecord record;
  for (const auto& [uid, pod] : next.pods) record.pods.push_back(pod);
  for (const auto& [key, claim] : next.claims) record.claims.push_back(claim);
  if (absl::Status written = store_.Write(kClaimRecordName, EncodeClaimRecord(record));
      !written.ok()) {
    return written;
  }
  absl::MutexLock lock(&mu_);
  contents_ = std::move(next);
  ++revision_;
  return absl::OkStatus();
}

uint64_t ClaimStore::Revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

std::optional<dra::Pod> ClaimStore::FindPod(const std::string& pod_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = contents_.pods.find(pod_uid);
  if (it == contents_.pods.end()) return std::nullopt;
  return it->second;
}

std::vector<dra::Pod> ClaimStore::Pods() const {
  std::vector<dra::Pod> pods;
  absl::MutexLock lock(&mu_);
  pods.reserve(contents_.pods.size());
  for (const auto& [uid, pod] : contents_.pods) pods.push_back(pod);
  return pods;
}

std::vector<dra::ResourceClaim> ClaimStore::Claims() const {
  std::vector<dra::ResourceClaim> claims;
  absl::MutexLock lock(&mu_);
  claims.reserve(contents_.claims.size());
  for (const auto& [key, claim] : contents_.claims) claims.push_back(claim);
  return claims;
}

absl::StatusOr<dra::ResourceClaim> ClaimStore::GetClaim(const std::string& namespace_name,
                                                        const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = contents_.claims.find(ClaimKey{namespace_name, name});
  if (it == contents_.claims.end()) {
    return absl::NotFoundError(
        absl::StrCat("resourceclaims.resource.k8s.io \"", name, "\" not found"));
  }
  return it->second;
}

}  // namespace devmgr::node
