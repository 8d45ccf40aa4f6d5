// WatcherImpl: the production Watcher (see watcher.h for the behaviour). Internal to
// pluginwatcher/; hosts use CreateWatcher.
//
// Threads and state: the desired state, the actual state, the operations in flight, the back-offs
// and the handlers sit behind one mutex, mu_. The loop thread runs inotify, the retry timer and
// Reconcile. Operations (handshakes, handler calls) run on the worker pool; mu_ is never held while
// one talks to a plugin or calls a handler. An operation's end posts a reconcile to the loop.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "common/operation_threads.h"
#include "common/stop_once.h"
#include "pluginwatcher/backoff.h"
#include "pluginwatcher/inotify_tree.h"
#include "pluginwatcher/registration_client.h"
#include "pluginwatcher/watcher.h"

namespace devmgr::pluginwatcher {

class WatcherImpl final : public Watcher {
 public:
  explicit WatcherImpl(WatcherOptions options);
  ~WatcherImpl() override;

  void AddHandler(absl::string_view type, PluginHandler& handler) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Start() override ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() override ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<DesiredPlugin> GetPluginsToRegister() const override ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<RegisteredPlugin> GetRegisteredPlugins() const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void StopNow() ABSL_LOCKS_EXCLUDED(mu_);
  // A socket in the registry. `generation` identifies this appearance of the socket: a
  // re-created socket gets a new one, and the actual state remembers which one it registered.
  struct DesiredEntry {
    absl::Time timestamp;
    uint64_t generation = 0;
    FileId file;
  };
  struct ActualEntry {
    absl::Time timestamp;
    uint64_t generation = 0;
    PluginHandler* handler = nullptr;
    std::string type;
    std::string name;
    std::string endpoint;
    // The handler refused it: nothing to deregister when its socket goes (the name and
    // endpoint may be those of a plugin the handler did register, from another socket).
    bool refused = false;
  };

  // inotify callbacks (loop thread).
  void OnSocket(const std::string& path, const FileId& id) ABSL_LOCKS_EXCLUDED(mu_);
  void OnRemoved(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);
  void OnRescan(const TreeWalk& walk) ABSL_LOCKS_EXCLUDED(mu_);
  void AddOrUpdateDesiredLocked(const std::string& path, const FileId& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // RequestReconcileLocked posts one Reconcile to the loop unless one is already pending.
  void RequestReconcileLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reconcile: upstream's reconciler.reconcile (loop thread).
  void Reconcile() ABSL_LOCKS_EXCLUDED(mu_);
  // StartOperationLocked queues `operation` for `path` on the workers, unless an operation on
  // `path` is in flight or in back-off (then it lowers `next_retry` to the back-off's end).
  template <typename Operation>
  void StartOperationLocked(const std::string& path, absl::Time now, absl::Time& next_retry,
                            Operation operation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ArmRetryTimer makes Reconcile run again at `when` (loop thread).
  void ArmRetryTimer(absl::Time when);

  // Operations (worker threads). Each returns what upstream's generated functions return.
  absl::Status RegisterPlugin(const std::string& path, const DesiredEntry& desired)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Handshake(RegistrationClient& client, const std::string& path,
                         const DesiredEntry& desired) ABSL_LOCKS_EXCLUDED(mu_);
  // NotifyFailure sends `message` to the plugin and returns it as the operation's error.
  absl::Status NotifyFailure(RegistrationClient& client, const std::string& path,
                             absl::StatusCode code, const std::string& message);
  absl::Status UnregisterPlugin(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);
  void FinishOperation(const std::string& path, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);

  const WatcherOptions options_;

  mutable absl::Mutex mu_;
  std::map<std::string, PluginHandler*> handlers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, DesiredEntry> desired_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ActualEntry> actual_ ABSL_GUARDED_BY(mu_);
  // Socket paths with an operation queued or running: at most one each.
  std::set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
  // Socket paths whose last operation failed.
  std::map<std::string, ExponentialBackoff> backoff_ ABSL_GUARDED_BY(mu_);
  // Handshakes in progress, for Stop to cancel.
  std::set<RegistrationClient*> clients_ ABSL_GUARDED_BY(mu_);
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  bool reconcile_posted_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Runs StopNow once (common/stop_once.h).
  StopOnce stop_once_;

  // Lifetime order: the loop outlives the timer and the inotify descriptor that live on it; the
  // workers are joined before the loop stops. All are created by Start and released by Stop.
  std::unique_ptr<EventLoop> loop_;
  // Loop thread only.
  std::unique_ptr<boost::asio::steady_timer> retry_timer_;
  absl::Time retry_at_ = absl::InfiniteFuture();
  std::unique_ptr<InotifyTree> tree_;
  std::unique_ptr<OperationThreads> workers_;
};

}  // namespace devmgr::pluginwatcher
