// PodRegistry: the daemon's pod source. The device manager frees the devices of every pod that
// is not active, so the daemon must know across restarts which pods it admitted: it keeps them
// in the durable record (pod_record.h), written before an admission is reported done and
// rewritten when a pod is removed. Pods found in the checkpoint without a record (an admission
// cut short by a crash, or a checkpoint taken over from a real kubelet) are "recovered": they
// stay active, known by UID and by the containers that hold devices, until removed, so that a
// restart never frees a device by itself.
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

  // Load reads the record, then adds as recovered every pod of `checkpoint_entries` that it
  // does not hold. A record that cannot be read is logged, renamed with a ".corrupt" suffix and
  // ignored: its pods are still found in the checkpoint, so no device is freed. Errors only
  // for I/O that prevents knowing (a record that exists but cannot be read or renamed).
  absl::Status Load(const std::vector<checkpoint::PodDevicesEntry>& checkpoint_entries);

  // BeginAdmission makes `pod` active for the device manager (which frees the devices of
  // inactive pods) but not yet visible to ListPods or PodResources. AlreadyExists when a pod
  // with its UID is admitted, recovered or being admitted.
  absl::Status BeginAdmission(const devicemanager::Pod& pod);
  // CommitAdmission writes the record with the pod and makes it admitted; on a failed write
  // the pod stays in admission and the error is returned (the caller aborts).
  absl::Status CommitAdmission(const std::string& pod_uid);
  // AbortAdmission forgets a pod that BeginAdmission took.
  void AbortAdmission(const std::string& pod_uid);

  // Remove forgets an admitted or recovered pod, rewriting the record first when it is in it.
  // NotFound when unknown; the store's error when the record cannot be written (then nothing
  // changed).
  absl::Status Remove(const std::string& pod_uid);

  std::optional<RegisteredPod> Find(const std::string& pod_uid) const;
  // List: admitted and recovered pods, by UID.
  std::vector<RegisteredPod> List() const;
  // ActiveUids: every pod whose devices must be kept (also those being admitted).
  std::vector<std::string> ActiveUids() const;

  // podresources::PodsProvider: admitted and recovered pods (there are no terminal ones).
  std::vector<podresources::Pod> GetPods() override;
  std::vector<podresources::Pod> GetActivePods() override;
  std::optional<podresources::Pod> GetPodByName(const std::string& namespace_name,
                                                const std::string& name) override;
  std::optional<uint64_t> ActivePodsRevision() override;

  // ToPodResources: how PodResources sees one of our pods (sidecars have restartPolicy Always).
  static podresources::Pod ToPodResources(const devicemanager::Pod& pod);

 private:
  // WriteRecord writes the admitted pods, with the entry `added` (none if empty) and without
  // the pod `removed`.
  absl::Status WriteRecord(absl::string_view added, const std::string& removed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);

  const FileStore store_;
  const LoggerPtr logger_;
  // Serialises record writes; taken before mu_.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  struct Held {
    RegisteredPod registered;
    // The pod's entry in the record, kept so that a write encodes only the pod it adds; empty
    // for a recovered pod, which the record does not list.
    std::string record_entry;
  };
  std::map<std::string, Held> pods_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, devicemanager::Pod> admitting_ ABSL_GUARDED_BY(mu_);
  // Changes with every change of pods_ (what GetActivePods answers).
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::node
