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
  loop_.Post([this] {
    started_ = true;
    ResyncOnLoop();
    ScheduleResync();
  });
}

void WatchHub::ScheduleResync() {
  if (options_.resync_period <= absl::ZeroDuration()) return;
  loop_.PostAfter(options_.resync_period, [this] {
    ResyncOnLoop();
    ScheduleResync();
  });
}

void WatchHub::PodUpdated(const Pod& pod) {
  loop_.Post([this, pod] { UpdatePodOnLoop(pod); });
}

void WatchHub::PodRemoved(const std::string& pod_uid) {
  loop_.Post([this, pod_uid] { RemovePodOnLoop(pod_uid); });
}

void WatchHub::Resync() {
  loop_.Post([this] { ResyncOnLoop(); });
}

void WatchHub::Subscribe(WatchSink* sink, uint64_t resume_revision) {
  loop_.Post([this, sink, resume_revision] {
    sinks_.insert(sink);
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
    for (WatchSink* sink : sinks_) sink->End();
  });
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

void WatchHub::UpdatePodOnLoop(const Pod& pod) {
  auto resources = std::make_shared<::v1::PodResources>();
  FillPodResources(pod, providers_, *resources);
  std::string serialized = DeterministicBytes(*resources);
  auto it = pods_.find(pod.uid);
  if (it != pods_.end() && it->second == serialized) return;
  const WatchResponse::Kind kind =
      it == pods_.end() ? WatchResponse::ADDED : WatchResponse::UPDATED;
  pods_[pod.uid] = std::move(serialized);
  if (started_) Publish(kind, pod.uid, std::move(resources));
}

void WatchHub::RemovePodOnLoop(const std::string& pod_uid) {
  auto it = pods_.find(pod_uid);
  if (it == pods_.end()) return;
  auto last = std::make_shared<::v1::PodResources>();
  last->ParseFromString(it->second);
  pods_.erase(it);
  if (started_) Publish(WatchResponse::DELETED, pod_uid, std::move(last));
}

void WatchHub::ResyncOnLoop() {
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
                       std::shared_ptr<const ::v1::PodResources> resources) {
  auto event = std::make_shared<WatchResponse>();
  event->set_kind(kind);
  event->set_revision(++revision_);
  event->set_pod_uid(pod_uid);
  *event->add_pod_resources() = *resources;
  history_.push_back({event->revision(), DeterministicBytes(*event)});
  WatchEventPtr published = std::move(event);
  while (history_.size() > options_.history_events) history_.pop_front();
  for (WatchSink* sink : sinks_) sink->Deliver(published);
}

WatchEventPtr WatchHub::Snapshot() const {
  auto snapshot = std::make_shared<WatchResponse>();
  snapshot->set_kind(WatchResponse::SNAPSHOT);
  snapshot->set_revision(revision_);
  auto* pods = snapshot->mutable_pod_resources();
  pods->Reserve(static_cast<int>(pods_.size()));
  // Bytes this hub serialised: they parse.
  for (const auto& [uid, serialized] : pods_) pods->Add()->ParseFromString(serialized);
  // Ordered by namespace and name, as a reader would sort them.
  std::sort(pods->pointer_begin(), pods->pointer_end(), [](const auto* a, const auto* b) {
    return std::tie(a->namespace_(), a->name()) < std::tie(b->namespace_(), b->name());
  });
  return snapshot;
}

}  // namespace devmgr::podresources
