#include "node/pod_registry.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/damaged_copy.h"
#include "common/errno_status.h"
#include "node/pod_record.h"

namespace devmgr::node {

using devicemanager::Pod;

namespace {

// InFlightEntry: `pod` as the record lists it while its admission or removal is under way.
std::string InFlightEntry(const Pod& pod) {
  return EncodePodRecordEntry({pod, /*holds_devices=*/false, /*in_flight=*/true});
}

// DistinctDevices: the devices of `entry`, each once (a device on several NUMA nodes is listed
// under each).
int64_t DistinctDevices(const checkpoint::PodDevicesEntry& entry) {
  std::vector<absl::string_view> ids;
  for (const auto& [numa, on_node] : entry.device_ids) {
    ids.insert(ids.end(), on_node.begin(), on_node.end());
  }
  std::sort(ids.begin(), ids.end());
  return std::unique(ids.begin(), ids.end()) - ids.begin();
}

// AddMissingContainers gives `to` the containers of `from` it does not have by name. One `to`
// has (from the checkpoint, which lists every container that holds devices as a regular one)
// stays where it is: PodResources lists a sidecar's devices but not an init container's, and a
// claim record written before restart policies were kept does not say which init containers
// are sidecars.
void AddMissingContainers(const Pod& from, Pod& to) {
  auto has = [&](const std::string& name) { return to.FindContainer(name) != nullptr; };
  for (const devicemanager::Container& container : from.init_containers) {
    if (!has(container.name)) to.init_containers.push_back(container);
  }
  for (const devicemanager::Container& container : from.containers) {
    if (!has(container.name)) to.containers.push_back(container);
  }
}

}  // namespace

PodRegistry::PodRegistry(std::filesystem::path folder, LoggerPtr logger)
    : store_(std::move(folder)), logger_(std::move(logger)) {}

absl::Status PodRegistry::Load(const std::vector<checkpoint::PodDevicesEntry>& checkpoint_entries,
                               CheckpointRead read) {
  std::vector<RecordedPod> recorded;
  bool record_lost = false;
  absl::StatusOr<std::string> bytes = store_.Read(kPodRecordName);
  if (bytes.ok()) {
    absl::StatusOr<std::vector<RecordedPod>> decoded = DecodePodRecord(*bytes);
    if (decoded.ok()) {
      recorded = *std::move(decoded);
    } else if (absl::IsFailedPrecondition(decoded.status())) {
      return absl::FailedPreconditionError(
          absl::StrCat((store_.folder() / kPodRecordName).string(), " ", decoded.status().message(),
                       ": refusing to start rather than lose its pods"));
    } else {
      const std::filesystem::path path = store_.folder() / kPodRecordName;
      absl::StatusOr<std::string> aside = MoveDamagedAside(store_, kPodRecordName);
      if (!aside.ok()) {
        return absl::Status(
            aside.status().code(),
            absl::StrCat("cannot move aside the corrupt pod record: ", aside.status().message()));
      }
      DEVMGR_LOG(logger_, err, "Pod record is corrupt; moved aside, pods in the checkpoint kept",
                 "path", path.string(), "keptAs", *aside, "err", decoded.status());
      record_lost = true;
    }
  } else if (absl::IsNotFound(bytes.status())) {
    // A start that moved a corrupt record aside and stopped before writing a new one (it
    // failed, or was killed): the record is as lost as it was then. Any copy kept says so (a
    // human may have removed the first).
    for (const std::string& copy : DamagedCopyNames(kPodRecordName)) {
      const std::filesystem::path aside = store_.folder() / copy;
      std::error_code error;
      record_lost = std::filesystem::exists(aside, error);
      if (error) return ErrnoStatus(error, "cannot look for", aside);
      if (record_lost) break;
    }
  } else {
    return bytes.status();
  }

  std::set<absl::string_view> holding;
  if (!recorded.empty()) {
    for (const checkpoint::PodDevicesEntry& entry : checkpoint_entries) {
      holding.insert(entry.pod_uid);
    }
  }
  absl::MutexLock lock(&mu_);
  record_lost_ = record_lost;
  pods_.clear();
  leaving_.clear();
  ++revision_;
  change_log_.Reset(revision_);
  for (RecordedPod& pod : recorded) {
    std::string uid = pod.pod.uid;
    if (pod.in_flight) {
      // Not admitted. One that holds devices was cut short by the restart: until they are
      // released, the record keeps saying so. One that holds none was refused or removed (its
      // entry leaves the record with the next write that changes it) or cut before allocating.
      if (holding.contains(uid)) {
        DEVMGR_LOG(logger_, warn,
                   "Pod recorded while its admission or removal was under way: not admitted, "
                   "its devices are released",
                   "podUID", uid);
        leaving_.emplace(std::move(uid), InFlightEntry(pod.pod));
      } else {
        DEVMGR_LOG(logger_, debug, "Pod recorded in flight holds nothing: forgotten", "podUID",
                   uid);
        ++changes_;
      }
      continue;
    }
    if (pod.holds_devices && !holding.contains(uid) && read == CheckpointRead::kWhole) {
      // Its record was renamed in place and its checkpoint was not: never admitted. The next
      // write of the record leaves it out.
      DEVMGR_LOG(logger_, warn,
                 "Pod recorded without its devices in the checkpoint: its admission did not "
                 "complete; forgotten",
                 "podUID", uid);
      ++changes_;
      continue;
    }
    if (pod.holds_devices && !holding.contains(uid)) {
      // Recorded as holding none from now on: a later start beside a whole checkpoint must
      // not take it for an admission that never completed.
      DEVMGR_LOG(logger_, warn,
                 "Pod recorded with devices the checkpoint lost: kept admitted, holding none",
                 "podUID", uid);
      pod.holds_devices = false;
      ++changes_;
    }
    std::string entry = EncodePodRecordEntry(pod);
    pods_[uid] = Held{.registered = RegisteredPod{std::move(pod.pod), false},
                      .record_entry = std::move(entry),
                      .admission = ++admissions_};
  }
  // Recovered pods: one regular container per container name that holds devices.
  size_t recovered = 0;
  for (const checkpoint::PodDevicesEntry& entry : checkpoint_entries) {
    if (leaving_.contains(entry.pod_uid)) continue;
    // devmgr writes its checkpoint in key order, so a new pod usually goes at the end.
    const bool last = pods_.empty() || std::prev(pods_.end())->first < entry.pod_uid;
    auto [it, added] = last
                           ? std::pair(pods_.emplace_hint(pods_.end(), entry.pod_uid, Held{}), true)
                           : pods_.try_emplace(entry.pod_uid);
    RegisteredPod& registered = it->second.registered;
    if (added) {
      registered.recovered = true;
      registered.pod.uid = entry.pod_uid;
      ++recovered;
    }
    if (!registered.recovered) continue;
    Pod& pod = registered.pod;
    devicemanager::Container* container = nullptr;
    for (auto& existing : pod.containers) {
      if (existing.name == entry.container_name) container = &existing;
    }
    if (container == nullptr) {
      container = &pod.containers.emplace_back();
      container->name = entry.container_name;
    }
    container->devices[entry.resource_name] += DistinctDevices(entry);
  }
  if (recovered > 0) {
    // One line, however many: a node taken over from a kubelet recovers every pod.
    DEVMGR_LOG(logger_, info, "Pods recovered from the checkpoint without a record; kept active",
               "count", recovered);
    for (const auto& [uid, held] : pods_) {
      if (held.registered.recovered) {
        DEVMGR_LOG(logger_, debug, "Pod recovered from the checkpoint without a record", "podUID",
                   uid);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status PodRegistry::Recover(std::vector<Pod> pods) {
  absl::MutexLock write_lock(&write_mu_);
  size_t admitted = 0;
  bool lost = false;
  {
    absl::MutexLock lock(&mu_);
    lost = record_lost_;
    for (Pod& pod : pods) {
      if (leaving_.contains(pod.uid) || admitting_.contains(pod.uid)) continue;
      if (auto it = pods_.find(pod.uid); it != pods_.end()) {
        RegisteredPod& held = it->second.registered;
        if (held.recovered && held.pod.name.empty()) {
          // Found in the checkpoint, which names neither the pod nor its other containers.
          held.pod.namespace_name = pod.namespace_name;
          held.pod.name = pod.name;
          AddMissingContainers(pod, held.pod);
          change_log_.Record(++revision_, pod.uid);
        }
        continue;
      }
      if (!lost) continue;
      std::string entry = EncodePodRecordEntry({pod, /*holds_devices=*/false, /*in_flight=*/false});
      std::string uid = pod.uid;
      pods_[uid] = Held{.registered = RegisteredPod{std::move(pod), false},
                        .record_entry = std::move(entry),
                        .admission = ++admissions_};
      change_log_.Record(++revision_, uid);
      ++changes_;
      ++admitted;
    }
  }
  if (admitted > 0) {
    DEVMGR_LOG(logger_, warn,
               "Pods other state names after the pod record was lost: admitted again", "count",
               admitted);
  }
  if (!lost) return absl::OkStatus();
  // A record in place of the lost one, even with no pod admitted again: until one is written,
  // a start takes the record as lost (Load), and would admit again the claims of a first
  // admission a crash cut short.
  if (absl::Status written = WriteRecord(); !written.ok()) return written;
  absl::MutexLock lock(&mu_);
  record_lost_ = false;
  return absl::OkStatus();
}

absl::Status PodRegistry::BeginAdmission(const Pod& pod) {
  std::string entry = InFlightEntry(pod);
  absl::MutexLock lock(&mu_);
  if (pods_.contains(pod.uid) || admitting_.contains(pod.uid)) {
    return absl::AlreadyExistsError(absl::StrCat("pod ", pod.uid, " is already admitted"));
  }
  if (leaving_.contains(pod.uid)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pod ", pod.uid, " left before, and the release of its devices is not yet durable"));
  }
  admitting_[pod.uid] = Admitting{pod, std::move(entry)};
  ++changes_;
  return absl::OkStatus();
}

void PodRegistry::StageAdmission(const std::string& pod_uid, bool holds_devices) {
  absl::MutexLock lock(&mu_);
  auto it = admitting_.find(pod_uid);
  if (it == admitting_.end()) return;
  Admitting& admitting = it->second;
  admitting.staged_entry = EncodePodRecordEntry({admitting.pod, holds_devices});
  admitting.staged = true;
  admitting.holds_devices = holds_devices;
  admitting.staged_change = ++changes_;
}

absl::Status PodRegistry::CommitAdmission(const std::string& pod_uid) {
  absl::MutexLock write_lock(&write_mu_);
  bool written = false;
  {
    absl::MutexLock lock(&mu_);
    auto admitting = admitting_.find(pod_uid);
    if (admitting == admitting_.end() || !admitting->second.staged) {
      return absl::FailedPreconditionError(absl::StrCat("pod ", pod_uid, " is not staged"));
    }
    written = WrittenAdmittedLocked(admitting->second);
  }
  if (!written) {
    if (absl::Status status = WriteRecord(); !status.ok()) return status;
  }
  absl::MutexLock lock(&mu_);
  auto admitting = admitting_.find(pod_uid);
  if (!WrittenAdmittedLocked(admitting->second)) {
    // Holding devices, it is written admitted only beside a checkpoint taken after it was
    // staged, and none was written.
    return absl::FailedPreconditionError(absl::StrCat(
        "pod ", pod_uid, ": no checkpoint with its devices was written after it was staged"));
  }
  pods_[pod_uid] = Held{.registered = RegisteredPod{std::move(admitting->second.pod), false},
                        .record_entry = std::move(admitting->second.staged_entry),
                        .admission = ++admissions_};
  admitting_.erase(admitting);
  ++revision_;
  change_log_.Record(revision_, pod_uid);
  return absl::OkStatus();
}

void PodRegistry::AbortAdmission(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = admitting_.find(pod_uid);
  if (it == admitting_.end()) return;
  Admitting& admitting = it->second;
  if (admitting.staged) refused_change_ = ++changes_;
  leaving_[pod_uid] = std::move(admitting.in_flight_entry);
  admitting_.erase(it);
  ++abandoned_;
}

void PodRegistry::Released(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  leaving_.erase(pod_uid);
}

bool PodRegistry::IsLeaving(const std::string& pod_uid) const {
  absl::MutexLock lock(&mu_);
  return leaving_.contains(pod_uid);
}

std::vector<std::string> PodRegistry::Leaving() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> uids;
  uids.reserve(leaving_.size());
  for (const auto& [uid, entry] : leaving_) uids.push_back(uid);
  return uids;
}

absl::Status PodRegistry::FlushRecord() {
  absl::MutexLock write_lock(&write_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (refused_change_ <= written_) return absl::OkStatus();
  }
  return WriteRecord();
}

absl::Status PodRegistry::BeginRemoval(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end() || it->second.removing) {
    return absl::NotFoundError(absl::StrCat("pod ", pod_uid, " not found"));
  }
  Held& held = it->second;
  held.removing = true;
  // A recovered pod is not in the record: removing it changes nothing there.
  if (held.registered.recovered) {
    held.removal_change = 0;
  } else {
    held.in_flight_entry = InFlightEntry(held.registered.pod);
    held.removal_change = ++changes_;
  }
  return absl::OkStatus();
}

absl::Status PodRegistry::FinishRemoval(const std::string& pod_uid) {
  absl::MutexLock write_lock(&write_mu_);
  bool written = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find(pod_uid);
    if (it == pods_.end() || !it->second.removing) {
      return absl::FailedPreconditionError(absl::StrCat("pod ", pod_uid, " is not being removed"));
    }
    written = written_ >= it->second.removal_change;
  }
  if (!written) {
    if (absl::Status status = WriteRecord(); !status.ok()) return status;
  }
  absl::MutexLock lock(&mu_);
  pods_.erase(pod_uid);
  ++revision_;
  change_log_.Record(revision_, pod_uid);
  return absl::OkStatus();
}

void PodRegistry::AbortRemoval(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end() || !it->second.removing) return;
  it->second.removing = false;
  it->second.in_flight_entry = std::string();
  if (!it->second.registered.recovered) ++changes_;
}

void PodRegistry::AbandonRemoval(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end() || !it->second.removing) return;
  leaving_.emplace(pod_uid, InFlightEntry(it->second.registered.pod));
  pods_.erase(it);
  ++revision_;
  change_log_.Record(revision_, pod_uid);
  refused_change_ = ++changes_;
}

PodRegistry::RecordSnapshot PodRegistry::SnapshotLocked(uint64_t mark) const {
  std::vector<absl::string_view> entries;
  entries.reserve(pods_.size() + admitting_.size() + leaving_.size());
  for (const auto& [uid, held] : pods_) {
    if (held.registered.recovered) continue;
    entries.push_back(held.removing ? held.in_flight_entry : held.record_entry);
  }
  uint64_t deferred = 0;
  for (const auto& [uid, admitting] : admitting_) {
    if (!admitting.staged) {
      entries.push_back(admitting.in_flight_entry);
    } else if (AdmittedBeside(admitting, mark)) {
      entries.push_back(admitting.staged_entry);
    } else {
      entries.push_back(admitting.in_flight_entry);
      if (deferred == 0 || admitting.staged_change < deferred) deferred = admitting.staged_change;
    }
  }
  for (const auto& [uid, entry] : leaving_) entries.push_back(entry);
  return {JoinPodRecord(entries), changes_, mark, deferred};
}

bool PodRegistry::AdmittedBeside(const Admitting& admitting, uint64_t mark) {
  // Staged after the checkpoint's state was taken, its devices may be there only in part.
  return !admitting.holds_devices || admitting.staged_change <= mark;
}

bool PodRegistry::WrittenAdmittedLocked(const Admitting& admitting) const {
  return written_ >= admitting.staged_change && AdmittedBeside(admitting, written_mark_);
}

uint64_t PodRegistry::CheckpointMark() const {
  absl::MutexLock lock(&mu_);
  return changes_;
}

absl::Status PodRegistry::WriteRecord() {
  RecordSnapshot record;
  {
    absl::MutexLock lock(&mu_);
    record = SnapshotLocked(checkpoint_mark_);
  }
  absl::Status status = WriteThrough(next_, {{&store_, kPodRecordName, record.bytes}});
  if (!status.ok()) return status;
  absl::MutexLock lock(&mu_);
  WroteLocked(record);
  return absl::OkStatus();
}

absl::Status PodRegistry::WriteWithCheckpoint(absl::string_view name, absl::string_view bytes,
                                              uint64_t mark) {
  absl::MutexLock write_lock(&write_mu_);
  std::optional<RecordSnapshot> record;
  {
    absl::MutexLock lock(&mu_);
    // Changed, or a pod the last record wrote in flight for want of its devices is now held.
    if (changes_ > written_ || (deferred_ != 0 && mark >= deferred_)) {
      record = SnapshotLocked(mark);
    }
  }
  absl::Status status =
      record.has_value()
          ? WriteThrough(next_, {{&store_, name, bytes}, {&store_, kPodRecordName, record->bytes}})
          : WriteThrough(next_, {{&store_, name, bytes}});
  if (!status.ok()) return status;
  absl::MutexLock lock(&mu_);
  checkpoint_mark_ = std::max(checkpoint_mark_, mark);
  if (record.has_value()) WroteLocked(*record);
  return absl::OkStatus();
}

void PodRegistry::CarryWith(DurableWriter* next) {
  absl::MutexLock write_lock(&write_mu_);
  next_ = next;
}

void PodRegistry::WroteLocked(const RecordSnapshot& record) {
  written_ = std::max(written_, record.change);
  written_mark_ = std::max(written_mark_, record.mark);
  deferred_ = record.deferred;
}

std::optional<RegisteredPod> PodRegistry::Find(const std::string& pod_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second.registered;
}

std::vector<RegisteredPod> PodRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<RegisteredPod> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, held] : pods_) pods.push_back(held.registered);
  return pods;
}

size_t PodRegistry::Count() const {
  absl::MutexLock lock(&mu_);
  return pods_.size();
}

std::vector<std::string> PodRegistry::ActiveUids() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> uids;
  uids.reserve(pods_.size() + admitting_.size());
  // Both maps are ordered by UID: merged, the list is ordered too.
  auto admitting = admitting_.begin();
  for (const auto& [uid, held] : pods_) {
    for (; admitting != admitting_.end() && admitting->first < uid; ++admitting) {
      uids.push_back(admitting->first);
    }
    uids.push_back(uid);
  }
  for (; admitting != admitting_.end(); ++admitting) uids.push_back(admitting->first);
  return uids;
}

podresources::Pod PodRegistry::ToPodResources(const Pod& pod) {
  podresources::Pod out;
  out.uid = pod.uid;
  out.name = pod.name;
  out.namespace_name = pod.namespace_name;
  for (const auto& container : pod.init_containers) {
    out.init_containers.push_back(
        {container.name, container.type == devicemanager::ContainerType::kSidecar ? "Always" : ""});
  }
  for (const auto& container : pod.containers) out.containers.push_back({container.name, ""});
  return out;
}

uint64_t PodRegistry::ActiveUidsRevision() const {
  absl::MutexLock lock(&mu_);
  return revision_ + abandoned_;
}

std::vector<podresources::Pod> PodRegistry::GetPods() { return GetActivePods(); }

std::vector<podresources::Pod> PodRegistry::GetActivePods() {
  absl::MutexLock lock(&mu_);
  std::vector<podresources::Pod> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, held] : pods_) pods.push_back(ToPodResources(held.registered.pod));
  return pods;
}

std::optional<uint64_t> PodRegistry::ActivePodsRevision() {
  absl::MutexLock lock(&mu_);
  return revision_;
}

std::optional<std::vector<std::string>> PodRegistry::ActivePodsChangedSince(uint64_t revision) {
  absl::MutexLock lock(&mu_);
  return change_log_.Since(revision);
}

std::optional<podresources::Pod> PodRegistry::GetActivePod(const std::string& uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return ToPodResources(it->second.registered.pod);
}

std::optional<podresources::Pod> PodRegistry::GetPodByName(const std::string& namespace_name,
                                                           const std::string& name) {
  absl::MutexLock lock(&mu_);
  const Held* latest = nullptr;
  for (const auto& [uid, held] : pods_) {
    const RegisteredPod& registered = held.registered;
    // A pod recovered from a kubelet's checkpoint has no name to be found by.
    if (!registered.pod.name.empty() && registered.pod.namespace_name == namespace_name &&
        registered.pod.name == name && (latest == nullptr || held.admission > latest->admission)) {
      latest = &held;
    }
  }
  if (latest == nullptr) return std::nullopt;
  return ToPodResources(latest->registered.pod);
}

}  // namespace devmgr::node
