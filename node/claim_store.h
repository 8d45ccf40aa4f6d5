// ClaimStore: where the node's DRA manager reads ResourceClaims when no API server holds them.
// Claims travel with their pod (pod_claims.h); the store keeps each admitted pod's DRA half and
// the claims it brought, durably, in the claim record (claim_record.h), so that after a restart
// the node knows which claims to prepare again and which pods use them.
//
// As the scheduler does when it binds a pod, the store reserves each allocated claim for the
// pod that brought it (status.reservedFor gains the pod). A claim several pods use is stored
// once: the first pod's copy is kept, and later pods only join its reservedFor.
//
// A pod's claims are stored at once and become durable with the store's next write: the DRA
// manager's checkpoint writes carry the record (the store is their DurableWriter), so the claims
// of a pod being admitted reach the disk in the flush that records the pod with its claims
// before any driver is called. A removal too is written by the store's next write: nothing
// waits for it, since a restart's Retain forgets the claims of pods the node no longer holds.
//
// Thread-safety: every method may be called from any thread; writes are serialised and happen
// outside the lock that readers take, so GetClaim never waits for the disk. A change costs what
// it touches plus one pass over the stored entries (their encoded bytes are joined, not
// encoded again).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/durable_writer.h"
#include "common/file_store.h"
#include "common/logging.h"
#include "dra/claim.h"
#include "node/claim_record.h"
#include "node/pod_claims.h"

namespace devmgr::node {

class ClaimStore final : public dra::ClaimSource, public DurableWriter {
 public:
  // The record lives in `folder` (the node's root folder); its writes go through `next` (the
  // node's state journal), or alone when it is null.
  ClaimStore(std::filesystem::path folder, LoggerPtr logger, DurableWriter* next = nullptr);

  // Load reads the record. One that cannot be decoded is logged, renamed with a ".corrupt"
  // suffix (beside earlier copies, common/damaged_copy.h) and ignored (the DRA manager's own
  // checkpoint still names the prepared claims, and its reconcile unprepares those of pods the node
  // no longer knows). Errors for I/O, and FailedPrecondition for a record a newer devmgr wrote,
  // which is left as it is.
  absl::Status Load() ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // Add stores the pod's DRA half and its claims; they are durable after the store's next
  // write (Flush, or a write it carries). AlreadyExists when the pod is stored already, or when
  // a claim of the same namespace and name is stored with another UID. Nothing changes on an
  // error.
  absl::Status Add(const PodClaims& claims) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // Replace puts `pod` in place of the stored DRA half of the pod with its UID, which must name
  // the same claims (an older record's entry with what it lacked filled in); durable after the
  // store's next write. NotFound when the pod is not stored, InvalidArgument when `pod` names
  // other claims; nothing changes on an error.
  absl::Status Replace(const dra::Pod& pod) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // Remove forgets the pod, drops it from the reservedFor of its claims and forgets the claims
  // no stored pod uses any more; the record without them is written with the store's next
  // write (Flush, or a write it carries). An unknown pod is not an error.
  void Remove(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // Retain forgets (as Remove) every stored pod not in `pod_uids`, then writes the record: what
  // an admission cut short by a crash left behind, and removed pods whose record a crash did
  // not let a write carry.
  absl::Status Retain(const std::set<std::string>& pod_uids) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // Flush writes the record if something changed since its last write.
  absl::Status Flush() ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // DurableWriter: the record, when it has changed, renamed before `files`.
  absl::Status WriteTogether(std::vector<FileStore::PlacedBytes> files) override
      ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // FindPod: the DRA half of a stored pod.
  std::optional<dra::Pod> FindPod(const std::string& pod_uid) const ABSL_LOCKS_EXCLUDED(mu_);
  // Pods: every stored pod, by UID.
  std::vector<dra::Pod> Pods() const ABSL_LOCKS_EXCLUDED(mu_);
  // Claims: every stored claim.
  std::vector<dra::ResourceClaim> Claims() const ABSL_LOCKS_EXCLUDED(mu_);
  // Revision: a number that changes whenever the stored pods or claims change.
  uint64_t Revision() const ABSL_LOCKS_EXCLUDED(mu_);

  // dra::ClaimSource: a claim some stored pod brought; NotFound otherwise (upstream's text:
  // "resourceclaims.resource.k8s.io \"NAME\" not found").
  absl::StatusOr<dra::ResourceClaim> GetClaim(const std::string& namespace_name,
                                              const std::string& name) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using ClaimKey = std::pair<std::string, std::string>;
  // A stored pod or claim, with its element of the record, encoded once when it changes: a
  // write joins the elements, so its cost grows with the bytes, not with re-encoding every pod.
  struct StoredPod {
    dra::Pod pod;
    std::string encoded;
  };
  struct StoredClaim {
    dra::ResourceClaim claim;
    std::string encoded;
  };
  // What one call changes; std::nullopt forgets the entry.
  struct Change {
    std::map<std::string, std::optional<StoredPod>> pods;
    std::map<ClaimKey, std::optional<StoredClaim>> claims;
  };

  // Install makes `change` in the store; the record holds it once written.
  void Install(Change change) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Write writes the record, if it changed since its last write (joined under mu_), renamed
  // before `files`, with one flush.
  absl::Status Write(std::vector<FileStore::PlacedBytes> files)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Forget: the change that forgets the stored pods of `pod_uids`, drops them from the
  // reservedFor of every claim and forgets the claims no other stored pod names.
  Change Forget(const std::set<std::string>& pod_uids) ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const FileStore store_;
  const LoggerPtr logger_;
  DurableWriter* const next_;
  // Serialises writes of the record; taken before mu_. Changes take mu_ alone, so an admission
  // storing its claims does not wait for a write in progress.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, StoredPod> pods_ ABSL_GUARDED_BY(mu_);
  std::map<ClaimKey, StoredClaim> claims_ ABSL_GUARDED_BY(mu_);
  // Claim key -> the stored pods of its namespace that name it: a claim is kept while one does.
  std::map<ClaimKey, std::set<std::string>> namers_ ABSL_GUARDED_BY(mu_);
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The revision the record on disk holds.
  uint64_t written_ ABSL_GUARDED_BY(write_mu_) = 0;
};

}  // namespace devmgr::node
