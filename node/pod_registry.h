// PodRegistry: the daemon's pod source. The device manager frees the devices of every pod that
// is not active, so the daemon must know across restarts which pods it admitted: it keeps them
// in the durable record (pod_record.h), written before an admission is reported done and
// rewritten when a pod is removed. An admission's record is written in the same flush as the
// checkpoint that holds its devices (WriteWithCheckpoint, through RecordingCheckpointStore), and
// a removal's in the flush of the checkpoint that releases them, so that each costs one flush
// of the disk; the recovery rules at Load:
//  - pods found in the checkpoint without a record (an admission cut short between the two
//    renames of that write, or a checkpoint taken over from a real kubelet) are "recovered":
//    they stay active, known by UID and by the containers that hold devices, until removed, so
//    that a restart never frees a device by itself;
//  - a recorded pod that held devices when it was written but holds none in the checkpoint
//    (the record's rename survived a power cut and the checkpoint's did not) was never
//    admitted: it is forgotten.
//
// It is also the PodResources service's pods provider. Thread-safe; the record is written
// outside the state lock, one write at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint/checkpoint.h"
#include "common/change_log.h"
#include "common/durable_writer.h"
#include "common/file_store.h"
#include "common/logging.h"
#include "devicemanager/pod.h"
#include "podresources/providers.h"

namespace devmgr::node {

struct RegisteredPod {
  devicemanager::Pod pod;
  // Found in the checkpoint only; `pod` has its UID and the containers that hold devices.
  bool recovered = false;
};

class PodRegistry final : public podresources::PodsProvider {
 public:
  // The record lives in `folder` (the device plugin folder, beside the checkpoint).
  PodRegistry(std::filesystem::path folder, LoggerPtr logger);

  // Load reads the record, forgets the pods in it that held devices and hold none in
  // `checkpoint_entries`, then adds as recovered every pod of `checkpoint_entries` that it does
  // not hold. A record that cannot be read is logged, renamed with a ".corrupt" suffix and
  // ignored: its pods are still found in the checkpoint, so no device is freed. Errors only
  // for I/O that prevents knowing (a record that exists but cannot be read or renamed).
  absl::Status Load(const std::vector<checkpoint::PodDevicesEntry>& checkpoint_entries);

  // BeginAdmission makes `pod` active for the device manager (which frees the devices of
  // inactive pods) but not yet visible to ListPods or PodResources. AlreadyExists when a pod
  // with its UID is admitted, recovered or being admitted.
  absl::Status BeginAdmission(const devicemanager::Pod& pod);
  // StageAdmission puts a pod that BeginAdmission took into the record's next write, saying
  // whether the device manager holds devices for it (then its checkpoint entries must be
  // durable in the same write or before: the caller syncs the checkpoint next). The pod is not
  // listed yet.
  void StageAdmission(const std::string& pod_uid, bool holds_devices);
  // CommitAdmission makes a staged pod admitted (listed), writing the record first unless a
  // write since StageAdmission carried it; on a failed write the pod stays staged and the
  // error is returned (the caller aborts).
  absl::Status CommitAdmission(const std::string& pod_uid);
  // AbortAdmission forgets a pod that BeginAdmission took. One that was staged may be in the
  // record already: the record's next write leaves it out. The caller then releases the pod's
  // devices (the checkpoint's write carries the record without the pod: one flush for both, so
  // no crash leaves the one without the other) and calls FlushRecord.
  void AbortAdmission(const std::string& pod_uid);
  // FlushRecord writes the record if it changed since its last write (if a refused pod held no
  // devices, no checkpoint write carried it). A failure is returned; the next write retries,
  // and Load forgets a recorded pod that held devices the checkpoint lacks.
  absl::Status FlushRecord();

  // A removal, in three steps so that the record without the pod and the checkpoint without
  // its devices take one flush. BeginRemoval leaves an admitted pod out of the record's next
  // write (a recovered one is not in it); the pod stays listed and active. The caller then
  // releases the pod's devices, whose checkpoint write carries the record, and calls
  // FinishRemoval, which forgets the pod, writing the record first unless a write since
  // BeginRemoval carried it; on a failed write it returns the error and the caller calls
  // AbortRemoval, which puts the pod back into the record's next write. NotFound from
  // BeginRemoval when the pod is unknown or already being removed.
  absl::Status BeginRemoval(const std::string& pod_uid);
  absl::Status FinishRemoval(const std::string& pod_uid);
  void AbortRemoval(const std::string& pod_uid);

  // WriteWithCheckpoint writes the device manager's checkpoint (`name`, `bytes`), together
  // with the record when the record has changed since it was last written: one flush for both,
  // the checkpoint renamed first. The store's error when the write fails.
  absl::Status WriteWithCheckpoint(absl::string_view name, absl::string_view bytes)
      ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // CarryWith sends every later write (the record's, and the checkpoint's with it) through
  // `next`, which renames its own pending files first in the same flush: the DRA manager, so
  // that the write that records a pod also makes the state of its prepared claims durable. Not
  // owned; must outlive the registry; null writes alone.
  void CarryWith(DurableWriter* next) ABSL_LOCKS_EXCLUDED(write_mu_);

  std::optional<RegisteredPod> Find(const std::string& pod_uid) const;
  // List: admitted and recovered pods, by UID.
  std::vector<RegisteredPod> List() const;
  // Count: how many List would answer.
  size_t Count() const;
  // ActiveUids: every pod whose devices must be kept (also those being admitted), in UID order.
  std::vector<std::string> ActiveUids() const;
  // ActiveUidsRevision changes whenever a pod leaves what ActiveUids answers (removed, or its
  // admission abandoned).
  uint64_t ActiveUidsRevision() const;

  // podresources::PodsProvider: admitted and recovered pods (there are no terminal ones).
  std::vector<podresources::Pod> GetPods() override;
  std::vector<podresources::Pod> GetActivePods() override;
  std::optional<podresources::Pod> GetPodByName(const std::string& namespace_name,
                                                const std::string& name) override;
  std::optional<uint64_t> ActivePodsRevision() override;
  std::optional<std::vector<std::string>> ActivePodsChangedSince(uint64_t revision) override;
  std::optional<podresources::Pod> GetActivePod(const std::string& uid) override;

  // ToPodResources: how PodResources sees one of our pods (sidecars have restartPolicy Always).
  static podresources::Pod ToPodResources(const devicemanager::Pod& pod);

 private:
  // The record as it is to be written: the admitted pods not being removed and the staged
  // ones; and the change it reflects (changes_).
  struct RecordSnapshot {
    std::string bytes;
    uint64_t change = 0;
  };
  RecordSnapshot SnapshotLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WriteRecord writes the record (without the checkpoint) as SnapshotLocked gives it.
  absl::Status WriteRecord() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Wrote notes that the record of `change` is on disk.
  void Wrote(uint64_t change) ABSL_LOCKS_EXCLUDED(mu_);

  const FileStore store_;
  const LoggerPtr logger_;
  // Serialises record writes; taken before mu_.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  DurableWriter* next_ ABSL_GUARDED_BY(write_mu_) = nullptr;
  mutable absl::Mutex mu_;
  struct Held {
    RegisteredPod registered;
    // The pod's entry in the record, kept so that a write encodes only the pod it adds; empty
    // for a recovered pod, which the record does not list.
    std::string record_entry;
    // Being removed: the record's writes leave it out since changes_ was removal_change.
    bool removing = false;
    uint64_t removal_change = 0;
  };
  std::map<std::string, Held> pods_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, devicemanager::Pod> admitting_ ABSL_GUARDED_BY(mu_);
  struct Staged {
    std::string record_entry;
    // changes_ when it was staged: the record holds it once written_ reaches this.
    uint64_t change = 0;
  };
  std::map<std::string, Staged> staged_ ABSL_GUARDED_BY(mu_);
  // Bumped by every change of what the record is to hold; written_ is the change last written.
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  // Changes with every change of pods_ (what GetActivePods answers).
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The pods each change of revision_ was about, for the last kChangesKept changes.
  static constexpr size_t kChangesKept = 1024;
  ChangeLog change_log_ ABSL_GUARDED_BY(mu_){kChangesKept};
  // Changes whenever an admission is abandoned; with revision_, the ActiveUidsRevision.
  uint64_t abandoned_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::node
