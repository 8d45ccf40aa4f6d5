// WatchHub: the state behind the Watch stream. It keeps the last published PodResources of
// every active pod, numbers each change with a revision, keeps a bounded history of changes
// for clients that resume, and fans changes out to the open streams.
//
// How it learns of changes. The providers are pull interfaces, so the hub is told, and also
// looks: (1) the host calls PodUpdated / PodRemoved (the PodResourcesNotifier) after it admits
// a pod, changes its resources, or removes it; the hub then re-reads that pod from the
// providers. This is immediate and costs one pod. (2) Every `resync_period` the hub re-reads all
// active pods and publishes what differs, which catches what no one signalled (a device freed
// by garbage collection, a CPU manager change, a host that does not notify at all) within a
// bounded delay, at the cost of one List's worth of provider calls per period. Both paths
// publish only real differences (compared by serialized content), so a redundant
// notification costs nothing on the wire.
//
// A node nobody watches pays nothing for it: the hub reads no pod, keeps no state and wakes
// its thread for no notification until the first Subscribe, which reads every active pod as the
// state later changes are compared with (publishing nothing for it). From then on it follows every
// change, with or without streams open, so that a client that comes back can resume by revision.
//
// Threading: the hub's state is confined to its own event loop thread (a sequence, not a
// lock): notifications, resyncs, subscriptions and unsubscriptions are posted to it, so events
// reach every stream in revision order and no lock is shared between the hub and the streams.
// The providers are called on that thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/event_loop.h"
#include "common/logging.h"
#include "podresources/providers.h"
#include "podresources/watch_backlog.h"

namespace devmgr::podresources {

struct WatchOptions {
  // Changes kept for clients that resume by revision: the last `history_events`, fewer when
  // their bytes would pass `history_bytes` (a pod's event carries all its devices, and plugins
  // choose their IDs' length). A client that resumes from before them gets a snapshot.
  size_t history_events = 4096;
  size_t history_bytes = size_t{64} << 20;
  // Pods with pending changes a stream may hold before it is ended (see WatchBacklog).
  size_t max_pending_per_stream = 4096;
  // How often all active pods are re-read and compared; zero turns the periodic resync off.
  absl::Duration resync_period = absl::Seconds(10);
  // Open Watch streams per client (see ClientGate).
  int max_streams_per_client = 8;
  // How long a stream ended for falling behind may wait for the write it has in flight: a
  // client that stopped reading never takes it, and its stream is then cancelled.
  absl::Duration last_write_grace = absl::Seconds(30);
};

// PodResourcesNotifier: what the host calls when a pod's resources may have changed. Both
// methods are thread-safe, never block (they post to the hub's thread) and may be called from
// any thread, including while the host holds its own locks.
class PodResourcesNotifier {
 public:
  virtual ~PodResourcesNotifier() = default;
  // PodUpdated: `pod` was admitted, or its resources changed.
  virtual void PodUpdated(const Pod& pod) = 0;
  // PodRemoved: the pod with `pod_uid` is gone (or terminal).
  virtual void PodRemoved(const std::string& pod_uid) = 0;
  // PodChanged: what is reported of a pod announced with PodUpdated changed (its devices'
  // health). Nothing is published for a pod not announced, or removed since: a host that read
  // the pod before its removal and calls after it does not bring it back.
  virtual void PodChanged(const Pod& pod) = 0;
};

// WatchSink: one open stream, as the hub sees it. Deliver is called on the hub's thread only,
// in revision order, and must not block (it queues).
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void Deliver(WatchEventPtr event) = 0;
  // End finishes the stream with UNAVAILABLE (the server is shutting down).
  virtual void End() = 0;
};

class WatchHub final : public PodResourcesNotifier {
 public:
  // `providers` (pods and devices required) and `clock` must outlive the hub. The first
  // revision is the clock's time in microseconds, so revisions keep increasing across restarts
  // of the server (unless it published more than one change per microsecond of downtime).
  WatchHub(const Providers& providers, const WatchOptions& options, const Clock& clock,
           LoggerPtr logger);
  // Stops the thread; every sink must have been unsubscribed.
  ~WatchHub() override;
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Start starts the periodic resync (which, as every change, is ignored until the first
  // Subscribe). Call once.
  void Start();

  void PodUpdated(const Pod& pod) override;
  void PodRemoved(const std::string& pod_uid) override;
  void PodChanged(const Pod& pod) override;

  // Resync re-reads all active pods now (asynchronously), as the periodic resync does.
  void Resync();

  // Subscribe adds `sink` (not owned; it stays alive until Unsubscribe's `done` ran). Its first
  // delivery is a SNAPSHOT, or, if `resume_revision` is still covered by the history and the
  // changes after it touch no more pods than a stream may hold pending, those changes.
  // Thread-safe, never blocks.
  void Subscribe(WatchSink* sink, uint64_t resume_revision);
  // Unsubscribe removes `sink`; `done` runs on the hub's thread afterwards, when no delivery to
  // the sink can follow (typically it deletes the sink). Thread-safe, never blocks.
  void Unsubscribe(WatchSink* sink, std::function<void()> done);

  // EndAllStreams ends every subscribed stream (see WatchSink::End), and every stream that
  // subscribes later at once. Thread-safe, never blocks.
  void EndAllStreams();

  // After runs `fn` on the hub's thread once `delay` has passed, unless the hub goes first.
  // Thread-safe, never blocks.
  void After(absl::Duration delay, std::function<void()> fn);

  // Drain returns once everything posted before it has run. Not from the hub's thread.
  void Drain();

  // Subscribers currently registered, and the latest revision, for tests and benchmarks
  // (both drain first). Not from the hub's thread.
  size_t SubscriberCountForTest();
  uint64_t RevisionForTest();

  const WatchOptions& options() const { return options_; }

 private:
  // All below run on the loop thread only.
  void UpdatePodOnLoop(const Pod& pod);
  void RemovePodOnLoop(const std::string& pod_uid);
  void ResyncOnLoop();
  // TrackOnLoop: on the first Subscribe, reads the state every later change is compared with.
  void TrackOnLoop();
  // What is kept of one pod: its last published PodResources and device health, serialized.
  struct PodState {
    std::string resources;
    std::string health;
  };
  PodState StateOf(const Pod& pod) const;
  void Publish(WatchResponse::Kind kind, const std::string& pod_uid, const PodState& state);
  WatchEventPtr Snapshot() const;
  void ScheduleResync();

  const Providers providers_;
  const WatchOptions options_;
  const LoggerPtr logger_;
  // Loop-confined state.
  uint64_t revision_;
  // Pod UID -> its last published state: what changes are compared with, and all that is kept
  // per pod (a snapshot or an event decodes it again).
  std::unordered_map<std::string, PodState> pods_;
  // The last changes published, serialized: a resume that needs them decodes them again, and
  // a parsed event takes several times the room of its bytes.
  struct PastEvent {
    uint64_t revision;
    std::string bytes;
  };
  std::deque<PastEvent> history_;
  size_t history_bytes_ = 0;  // of the events in history_
  std::unordered_set<WatchSink*> sinks_;
  bool ending_ = false;  // EndAllStreams came
  // Whether the first Subscribe came: changes before it are not followed, and not even posted
  // to the loop. Set on the loop before it reads the pods it tracks from, read by any thread.
  std::atomic<bool> tracking_ = false;
  // Last: its thread stops first.
  EventLoop loop_;
};

}  // namespace devmgr::podresources
