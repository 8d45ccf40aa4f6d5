#include "podresources/watch_hub.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/synchronization/notification.h"
#include "common/deterministic_bytes.h"
#include "podresources/pod_resources.h"

namespace devmgr::podresources {
WatchHub::WatchHub(const Providers& providers, const WatchOptions& options, const Clock& clock,
                   LoggerPtr logger)
    : providers_(providers),
      options_(options),
      logger_(std::move(logger)),
      revision_(static_cast<uint64_t>(absl::ToUnixMicros(clock.Now()))) {}

WatchHub::~WatchHub() { loop_.Stop(); }

void WatchHub::Start() {
  loop_.Post([this] { ScheduleResync(); });
}

void WatchHub::ScheduleResync() {
  if (options_.resync_period <= absl::ZeroDuration()) return;
  loop_.PostAfter(options_.resync_period, [this] {
    ResyncOnLoop();
    ScheduleResync();
  });
}

void WatchHub::PodUpdated(const Pod& pod) {
  if (!tracking_) return;
  loop_.Post([this, pod] { UpdatePodOnLoop(pod); });
}

void WatchHub::PodRemoved(const std::string& pod_uid) {
  if (!tracking_) return;
  loop_.Post([this, pod_uid] { RemovePodOnLoop(pod_uid); });
}

void WatchHub::PodChanged(const Pod& pod) {
  if (!tracking_) return;
  loop_.Post([this, pod] {
    if (pods_.contains(pod.uid)) UpdatePodOnLoop(pod);
  });
}

void WatchHub::Resync() {
  loop_.Post([this] { ResyncOnLoop(); });
}

void WatchHub::Subscribe(WatchSink* sink, uint64_t resume_revision) {
  loop_.Post([this, sink, resume_revision] {
    sinks_.insert(sink);
    if (ending_) {
      sink->End();
      return;
    }
    TrackOnLoop();
    if (resume_revision != 0 && resume_revision == revision_) return;  // nothing was missed
    // The history covers resume_revision if it holds every change after it.
    const bool covered = resume_revision != 0 && resume_revision < revision_ && !history_.empty() &&
                         history_.front().revision <= resume_revision + 1;
    std::vector<WatchEventPtr> missed;
    std::unordered_set<std::string> missed_pods;
    if (covered) {
      for (const PastEvent& past : history_) {
        if (past.revision <= resume_revision) continue;
        auto event = std::make_shared<WatchResponse>();
        // Bytes this hub serialized: they parse.
        event->ParseFromString(past.bytes);
        missed_pods.insert(event->pod_uid());
        missed.push_back(std::move(event));
      }
    }
    // More missed pods than a stream may hold pending would end the stream at once; a
    // snapshot says the same in one message.
    if (!covered || missed_pods.size() > options_.max_pending_per_stream) {
      sink->Deliver(Snapshot());
      return;
    }
    for (WatchEventPtr& event : missed) sink->Deliver(std::move(event));
  });
}

void WatchHub::Unsubscribe(WatchSink* sink, std::function<void()> done) {
  loop_.Post([this, sink, done = std::move(done)] {
    sinks_.erase(sink);
    done();
  });
}

void WatchHub::EndAllStreams() {
  loop_.Post([this] {
    ending_ = true;
    for (WatchSink* sink : sinks_) sink->End();
  });
}

void WatchHub::After(absl::Duration delay, std::function<void()> fn) {
  loop_.PostAfter(delay, std::move(fn));
}

void WatchHub::Drain() {
  absl::Notification drained;
  loop_.Post([&drained] { drained.Notify(); });
  drained.WaitForNotification();
}

size_t WatchHub::SubscriberCountForTest() {
  size_t count = 0;
  absl::Notification counted;
  loop_.Post([&] {
    count = sinks_.size();
    counted.Notify();
  });
  counted.WaitForNotification();
  return count;
}

uint64_t WatchHub::RevisionForTest() {
  uint64_t revision = 0;
  absl::Notification read;
  loop_.Post([&] {
    revision = revision_;
    read.Notify();
  });
  read.WaitForNotification();
  return revision;
}

WatchHub::PodState WatchHub::StateOf(const Pod& pod) const {
  ::v1::PodResources resources;
  FillPodResources(pod, providers_, resources);
  ::devmgr::podresources::v1::PodDevicesHealth health;
  FillPodDevicesHealth(pod, providers_, health);
  return {DeterministicBytes(resources), DeterministicBytes(health)};
}

void WatchHub::TrackOnLoop() {
  if (tracking_) return;
  // Set before the pods are read: a host that changed a pod and then found tracking_ unset
  // changed it before this read, which sees the change.
  tracking_ = true;
  // The state every later change is compared with; nobody has seen an earlier one, so
  // nothing is published for it and the revision stays.
  for (const Pod& pod : providers_.pods->GetActivePods()) pods_[pod.uid] = StateOf(pod);
}

void WatchHub::UpdatePodOnLoop(const Pod& pod) {
  PodState state = StateOf(pod);
  auto it = pods_.find(pod.uid);
  if (it != pods_.end() && it->second.resources == state.resources &&
      it->second.health == state.health) {
    return;
  }
  const WatchResponse::Kind kind =
      it == pods_.end() ? WatchResponse::ADDED : WatchResponse::UPDATED;
  PodState& kept = pods_[pod.uid];
  kept = std::move(state);
  Publish(kind, pod.uid, kept);
}

void WatchHub::RemovePodOnLoop(const std::string& pod_uid) {
  auto it = pods_.find(pod_uid);
  if (it == pods_.end()) return;
  const PodState last = std::move(it->second);
  pods_.erase(it);
  Publish(WatchResponse::DELETED, pod_uid, last);
}

void WatchHub::ResyncOnLoop() {
  if (!tracking_) return;
  const std::vector<Pod> pods = providers_.pods->GetActivePods();
  std::unordered_set<std::string> active;
  for (const Pod& pod : pods) {
    active.insert(pod.uid);
    UpdatePodOnLoop(pod);
  }
  std::vector<std::string> gone;
  for (const auto& [uid, state] : pods_) {
    if (!active.contains(uid)) gone.push_back(uid);
  }
  for (const std::string& uid : gone) RemovePodOnLoop(uid);
}

void WatchHub::Publish(WatchResponse::Kind kind, const std::string& pod_uid,
                       const PodState& state) {
  auto event = std::make_shared<WatchResponse>();
  event->set_kind(kind);
  event->set_revision(++revision_);
  event->set_pod_uid(pod_uid);
  // Bytes this hub serialized: they parse.
  event->add_pod_resources()->ParseFromString(state.resources);
  event->add_pod_health()->ParseFromString(state.health);
  history_.push_back({event->revision(), DeterministicBytes(*event)});
  history_bytes_ += history_.back().bytes.size();
  WatchEventPtr published = std::move(event);
  while (!history_.empty() &&
         (history_.size() > options_.history_events || history_bytes_ > options_.history_bytes)) {
    history_bytes_ -= history_.front().bytes.size();
    history_.pop_front();
  }
  for (WatchSink* sink : sinks_) sink->Deliver(published);
}

WatchEventPtr WatchHub::Snapshot() const {
  // Ordered by namespace and name, as a reader would sort them, then UID (two pods may share a
  // name); each pod's health and UID beside it.
  struct Entry {
    ::v1::PodResources resources;
    const std::string* health;
    const std::string* uid;
  };
  std::vector<Entry> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, state] : pods_) {
    pods.push_back({::v1::PodResources(), &state.health, &uid});
    pods.back().resources.ParseFromString(state.resources);
  }
  std::sort(pods.begin(), pods.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.resources.namespace_(), a.resources.name(), *a.uid) <
           std::tie(b.resources.namespace_(), b.resources.name(), *b.uid);
  });
  auto snapshot = std::make_shared<WatchResponse>();
  snapshot->set_kind(WatchResponse::SNAPSHOT);
  snapshot->set_revision(revision_);
  snapshot->mutable_pod_resources()->Reserve(static_cast<int>(pods.size()));
  snapshot->mutable_pod_health()->Reserve(static_cast<int>(pods.size()));
  snapshot->mutable_pod_uids()->Reserve(static_cast<int>(pods.size()));
  for (Entry& pod : pods) {
    *snapshot->add_pod_resources() = std::move(pod.resources);
    snapshot->add_pod_health()->ParseFromString(*pod.health);
    snapshot->add_pod_uids(*pod.uid);
  }
  return snapshot;
}

}  // namespace devmgr::podresources
