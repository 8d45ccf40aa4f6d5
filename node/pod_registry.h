// PodRegistry: the daemon's pod source. The device manager frees the devices of every pod that
// is not active, so the daemon must know across restarts which pods it admitted: it keeps them
// in the durable record (pod_record.h), written before an admission is reported done and
// rewritten when a pod is removed. An admission's record is written in the same flush as the
// checkpoint that holds its devices (WriteWithCheckpoint, through RecordingCheckpointStore), and
// a removal's in the flush of the checkpoint that releases them, so that each costs one flush
// of the disk. A staged admission that holds devices is written as admitted only beside a
// checkpoint whose state was taken after it was staged (CheckpointMark): until then it is
// written in flight, so that no record names it admitted beside a checkpoint that holds only
// some of its devices.
//
// Every record written lists every pod whose devices the checkpoint beside it may hold, whatever
// other admissions' and removals' writes come between the steps of one: a pod's entry goes into
// the record, in flight, when its admission begins (before any device is allocated), and it
// leaves only once its devices are durably released; a removal marks it in flight first. The
// recovery rules at Load:
//  - a pod in flight (its admission, refusal or removal was cut short) is not admitted; the
//    devices the checkpoint holds for it are freed (Leaving, Released);
//  - pods found in the checkpoint without a record (files of a devmgr without the state journal
//    cut between two renames, or a checkpoint taken over from a real kubelet) are "recovered":
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
  // Found in the checkpoint only; `pod` has its UID and the containers that hold devices (and
  // its name and other containers when the claim store names it: Recover).
  bool recovered = false;
};

class PodRegistry final : public podresources::PodsProvider {
 public:
  // The record lives in `folder` (the device plugin folder, beside the checkpoint).
  PodRegistry(std::filesystem::path folder, LoggerPtr logger);

  // Whether the checkpoint the entries come from was read whole (or was not there at all), or
  // lost entries (it could not be read or verified, or some of its entries did not parse).
  enum class CheckpointRead { kWhole, kPartial };

  // Load reads the record, forgets the pods in it that were in flight or that held devices and
  // hold none in `checkpoint_entries`, then adds as recovered every pod of `checkpoint_entries`
  // that it does not hold, except those in flight: the host releases their devices (Leaving).
  // Beside a kPartial checkpoint a pod that held devices and holds none there is kept admitted,
  // holding nothing: its absence says nothing then (the kubelet, which loses the allocations of
  // a corrupt checkpoint too, keeps its pods). A record that cannot be read is logged, renamed
  // with a ".corrupt" suffix (beside earlier copies, common/damaged_copy.h) and ignored: its pods
  // are still found in the checkpoint, so no device is freed (the host recovers the pods that hold
  // none: Recover). Errors for I/O that prevents knowing (a record that exists but cannot be read
  // or renamed), and FailedPrecondition for a record a newer devmgr wrote (after a downgrade): it
  // is left as it is, not taken for corrupt.
  absl::Status Load(const std::vector<checkpoint::PodDevicesEntry>& checkpoint_entries,
                    CheckpointRead read = CheckpointRead::kWhole);
  // Recover takes in the pods another state file names (the claim store's, which may hold no
  // device): a pod recovered from the checkpoint that one of them names gets its namespace,
  // name and the containers the checkpoint did not list (at every start: they are not in the
  // record); after a lost record, each one the registry does not hold is admitted again, holding
  // no device, and a record is written (with them, if any), so that later starts keep them and
  // read the record as not lost. The record is lost when Load found it corrupt, or found none
  // beside one kept aside (a start that lost it stopped before writing a new one); a missing
  // record is otherwise not lost: no pod was ever recorded, and the pods other files name were
  // admissions a crash cut short. Pods being admitted or leaving are left alone. The record's
  // write errors.
  absl::Status Recover(std::vector<devicemanager::Pod> pods) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // BeginAdmission makes `pod` active for the device manager (which frees the devices of
  // inactive pods) but not yet visible to ListPods or PodResources, and puts it into the
  // record's next write in flight. AlreadyExists when a pod with its UID is admitted, recovered
  // or being admitted; FailedPrecondition while one is leaving (IsLeaving: the devices of the
  // earlier pod must be released durably first, or a record naming the new one admitted could
  // come beside a checkpoint that still holds them).
  absl::Status BeginAdmission(const devicemanager::Pod& pod);
  // StageAdmission puts a pod that BeginAdmission took into the record's next write, saying
  // whether the device manager holds devices for it (then it is written as admitted only with
  // a checkpoint taken after this call: the caller syncs the checkpoint next). The pod is not
  // listed yet.
  void StageAdmission(const std::string& pod_uid, bool holds_devices);
  // CommitAdmission makes a staged pod admitted (listed), writing the record first unless a
  // write since StageAdmission carried it; on a failed write the pod stays staged and the
  // error is returned (the caller aborts), and so it does with FailedPrecondition for a pod
  // that holds devices when no checkpoint taken after it was staged was written.
  absl::Status CommitAdmission(const std::string& pod_uid);
  // AbortAdmission forgets a pod that BeginAdmission took; the record keeps it in flight until
  // Released. The caller then releases the pod's devices durably, calls Released, and calls
  // FlushRecord.
  void AbortAdmission(const std::string& pod_uid);
  // Released: the devices of a pod of Leaving are durably released, so the record's next write
  // may leave it out (no write is made for it: in flight, it is not admitted after a restart).
  void Released(const std::string& pod_uid);
  // Leaving: the pods no longer active whose entries stay in the record, in flight, until
  // Released: refused ones whose release failed, and those Load found in flight holding
  // devices in the checkpoint (the host releases them before it lets the device manager free
  // anything, then calls Released).
  std::vector<std::string> Leaving() const;
  // IsLeaving: `pod_uid` is among Leaving.
  bool IsLeaving(const std::string& pod_uid) const;
  // FlushRecord writes the record if a refused pod was staged since its last write (a staged
  // pod that held no devices may be on disk as admitted, and no checkpoint write came to carry
  // it in flight). A failure is returned; the next write retries.
  absl::Status FlushRecord();

  // A removal, in three steps so that the record with the pod in flight and the checkpoint
  // without its devices take one flush. BeginRemoval puts an admitted pod into the record's
  // next write in flight (a recovered one is not in it); the pod stays listed and active. The
  // caller then releases the pod's devices, whose checkpoint write carries the record, and
  // calls FinishRemoval, which forgets the pod, writing the record first unless a write since
  // BeginRemoval carried it; on a failed write it returns the error and the caller calls
  // AbortRemoval, which puts the pod back into the record's next write as admitted. NotFound
  // from BeginRemoval when the pod is unknown or already being removed.
  absl::Status BeginRemoval(const std::string& pod_uid);
  absl::Status FinishRemoval(const std::string& pod_uid);
  void AbortRemoval(const std::string& pod_uid);
  // AbandonRemoval, instead of AbortRemoval when the release of the pod's devices was made in
  // memory but not durably (its checkpoint write failed): those devices may go to other pods,
  // so the pod leaves the listed and active pods and stays in the record in flight among
  // Leaving, as a refused pod does, until Released (FlushRecord writes it so).
  void AbandonRemoval(const std::string& pod_uid);

  // CheckpointMark: what the record is at now. A checkpoint whose state was taken after this
  // call holds the devices of every admission staged before it.
  uint64_t CheckpointMark() const ABSL_LOCKS_EXCLUDED(mu_);
  // WriteWithCheckpoint writes the device manager's checkpoint (`name`, `bytes`, its state
  // taken after CheckpointMark answered `mark`), together with the record when the record has
  // changed since it was last written: one flush for both, the checkpoint renamed first. The
  // store's error when the write fails.
  absl::Status WriteWithCheckpoint(absl::string_view name, absl::string_view bytes, uint64_t mark)
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
  // The record as it is to be written beside a checkpoint taken after CheckpointMark answered
  // `mark`: the admitted pods, those being admitted and those leaving, each with its entry
  // (staged ones that hold devices in flight if staged after `mark`); the change it reflects
  // (changes_), `mark`, and the first staged change it wrote in flight for that reason (0 for
  // none).
  struct RecordSnapshot {
    std::string bytes;
    uint64_t change = 0;
    uint64_t mark = 0;
    uint64_t deferred = 0;
  };
  struct Admitting;
  RecordSnapshot SnapshotLocked(uint64_t mark) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AdmittedBeside: a staged pod is written admitted beside a checkpoint of `mark`.
  static bool AdmittedBeside(const Admitting& admitting, uint64_t mark);
  // WrittenAdmittedLocked: a staged pod is on disk admitted.
  bool WrittenAdmittedLocked(const Admitting& admitting) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WriteRecord writes the record (without the checkpoint) as SnapshotLocked gives it beside
  // the checkpoint last written.
  absl::Status WriteRecord() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // WroteLocked notes that `record` is on disk.
  void WroteLocked(const RecordSnapshot& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
    // Being removed: the record's writes hold in_flight_entry since changes_ was
    // removal_change.
    bool removing = false;
    uint64_t removal_change = 0;
    std::string in_flight_entry = {};
    // Its place in the order of admissions (pods the record lists in its order, at Load): of
    // two pods of one name, GetPodByName answers the later, as the kubelet's pod manager.
    uint64_t admission = 0;
  };
  std::map<std::string, Held> pods_ ABSL_GUARDED_BY(mu_);
  uint64_t admissions_ ABSL_GUARDED_BY(mu_) = 0;
  struct Admitting {
    devicemanager::Pod pod;
    // Its entry in the record in flight, and once staged as it is to be admitted.
    std::string in_flight_entry;
    std::string staged_entry = {};
    bool staged = false;
    bool holds_devices = false;
    // changes_ when it was staged: the record holds it admitted once written_ reaches this
    // (and written_mark_, when it holds devices: WrittenAdmittedLocked).
    uint64_t staged_change = 0;
  };
  std::map<std::string, Admitting> admitting_ ABSL_GUARDED_BY(mu_);
  // Leaving: the in-flight entries of pods no longer active, until Released.
  std::map<std::string, std::string> leaving_ ABSL_GUARDED_BY(mu_);
  // Bumped by every change of what the record is to hold, except an entry in flight leaving it
  // (Released, FinishRemoval), which no restart needs to see; written_ is the change last
  // written.
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  // The mark of the checkpoint last written (a write of the record alone is beside it), the
  // mark of the last record written, and what that record deferred (RecordSnapshot).
  uint64_t checkpoint_mark_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t written_mark_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t deferred_ ABSL_GUARDED_BY(mu_) = 0;
  // The change of the last refusal of a staged pod (or abandoned removal), which FlushRecord
  // makes durable.
  uint64_t refused_change_ ABSL_GUARDED_BY(mu_) = 0;
  // Changes with every change of pods_ (what GetActivePods answers).
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The pods each change of revision_ was about, for the last kChangesKept changes.
  static constexpr size_t kChangesKept = 1024;
  ChangeLog change_log_ ABSL_GUARDED_BY(mu_){kChangesKept};
  // Load found the record lost (Recover).
  bool record_lost_ ABSL_GUARDED_BY(mu_) = false;
  // Changes whenever an admission is abandoned; with revision_, the ActiveUidsRevision.
  uint64_t abandoned_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::node
