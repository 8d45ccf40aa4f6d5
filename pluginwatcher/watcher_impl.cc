#include "pluginwatcher/watcher_impl.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/unix_socket.h"
#include "pluginwatcher/beneath.h"
#include "pluginwatcher/plugin_info_check.h"

namespace devmgr::pluginwatcher {
namespace {

WatcherOptions WithDefaults(WatcherOptions options) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(options.registry_dir, ec);
  // Without a trailing separator: "<registry>/" must begin exactly the paths under it, which
  // the removal of the registry folder looks for.
  options.registry_dir = NormalFolderPath(ec ? options.registry_dir : absolute);
  options.workers = std::max(1, options.workers);
  if (options.clock == nullptr) options.clock = &MonotonicClock();
  return options;
}

}  // namespace

WatcherOptions WatcherOptions::ForRootDir(const std::filesystem::path& root_dir) {
  WatcherOptions options;
  options.registry_dir = root_dir / "plugins_registry";
  return options;
}

WatcherPtr CreateWatcher(WatcherOptions options) {
  return std::make_unique<WatcherImpl>(std::move(options));
}

WatcherImpl::WatcherImpl(WatcherOptions options) : options_(WithDefaults(std::move(options))) {}

WatcherImpl::~WatcherImpl() { Stop(); }

void WatcherImpl::AddHandler(absl::string_view type, PluginHandler& handler) {
  absl::MutexLock lock(&mu_);
  handlers_[std::string(type)] = &handler;
}

absl::Status WatcherImpl::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_)
      return absl::FailedPreconditionError("plugin watcher already started");
  }
  // Checked once here: without it every socket would fail its dial, each as if nobody listened.
  if (absl::Status fd_folder = CheckFdFolder(kProcSelfFd); !fd_folder.ok()) {
    Stop();
    return fd_folder;
  }
  DEVMGR_LOG(options_.logger, info, "Plugin Watcher Start", "path", options_.registry_dir.string());
  loop_ = std::make_unique<EventLoop>();
  workers_ = std::make_unique<OperationThreads>(static_cast<size_t>(options_.workers));
  retry_timer_ = std::make_unique<boost::asio::steady_timer>(loop_->context());
  tree_ = std::make_unique<InotifyTree>(
      loop_->context(), options_.registry_dir,
      InotifyTreeCallbacks{
          [this](const std::string& path, const FileId& id) { OnSocket(path, id); },
          [this](const std::string& path) { OnRemoved(path); },
          [this](const TreeWalk& walk) { OnRescan(walk); },
      },
      options_.logger);
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
  }
  absl::Status status;
  absl::Notification done;
  loop_->Post([&] {
    status = tree_->Start();
    done.Notify();
  });
  done.WaitForNotification();
  if (!status.ok()) Stop();
  return status;
}

void WatcherImpl::Stop() {
  stop_once_.Run([this] { StopNow(); });
}

void WatcherImpl::StopNow() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (RegistrationClient* client : clients_) client->Cancel();
  }
  // Operations still queued see stopping_ and return at once; those running end within a
  // moment, their handshakes cancelled, unless a handler call is in progress.
  if (workers_ != nullptr) workers_->Join();
  if (loop_ != nullptr) loop_->Stop();
  tree_.reset();  // closes the inotify descriptor
  retry_timer_.reset();
  workers_.reset();
  loop_.reset();
}

std::vector<DesiredPlugin> WatcherImpl::GetPluginsToRegister() const {
  absl::MutexLock lock(&mu_);
  std::vector<DesiredPlugin> plugins;
  plugins.reserve(desired_.size());
  for (const auto& [path, entry] : desired_) plugins.push_back({path, entry.timestamp});
  return plugins;
}

std::vector<RegisteredPlugin> WatcherImpl::GetRegisteredPlugins() const {
  absl::MutexLock lock(&mu_);
  std::vector<RegisteredPlugin> plugins;
  plugins.reserve(actual_.size());
  for (const auto& [path, entry] : actual_) {
    plugins.push_back({path, entry.timestamp, entry.type, entry.name, entry.endpoint});
  }
  return plugins;
}

void WatcherImpl::OnSocket(const std::string& path, const FileId& id) {
  absl::MutexLock lock(&mu_);
  AddOrUpdateDesiredLocked(path, id);
}

void WatcherImpl::AddOrUpdateDesiredLocked(const std::string& path, const FileId& id) {
  auto it = desired_.find(path);
  // Upstream refreshes the timestamp on every create event; the same socket reported twice (by
  // an event and by the walk that follows a new watch), or found by the walk after lost events
  // with its mode or owner changed (upstream never sees those), is not a new plugin here.
  if (it != desired_.end() && it->second.file.SameCreation(id)) return;
  DEVMGR_LOG(options_.logger, info,
             "Adding socket path or updating timestamp to desired state cache", "path", path);
  desired_[path] = DesiredEntry{options_.clock->Now(), next_generation_++, id};
  RequestReconcileLocked();
}

void WatcherImpl::OnRemoved(const std::string& path) {
  absl::MutexLock lock(&mu_);
  // What lies under a folder sorts after names that extend the folder's ("dir.sock" comes
  // between "dir" and "dir/a.sock"), so the walk starts at "dir/", after the path itself.
  const std::string folder = path + "/";
  std::vector<std::string> gone;
  if (desired_.contains(path)) gone.push_back(path);
  for (auto it = desired_.lower_bound(folder);
       it != desired_.end() && absl::StartsWith(it->first, folder); ++it) {
    gone.push_back(it->first);
  }
  for (const std::string& socket : gone) {
    DEVMGR_LOG(options_.logger, info, "Removing socket path from desired state cache", "path",
               socket);
    desired_.erase(socket);
  }
  RequestReconcileLocked();
}

void WatcherImpl::OnRescan(const TreeWalk& walk) {
  absl::MutexLock lock(&mu_);
  // A plugin under a folder the walk could not read is kept: its socket may well be there.
  for (auto it = desired_.begin(); it != desired_.end();) {
    const bool kept = walk.sockets.contains(it->first) || walk.Unknown(it->first);
    it = kept ? std::next(it) : desired_.erase(it);
  }
  for (const auto& [path, id] : walk.sockets) AddOrUpdateDesiredLocked(path, id);
  RequestReconcileLocked();
}

void WatcherImpl::RequestReconcileLocked() {
  if (!started_ || stopping_ || reconcile_posted_) return;
  reconcile_posted_ = true;
  loop_->Post([this] { Reconcile(); });
}

void WatcherImpl::Reconcile() {
  absl::Time next_retry = absl::InfiniteFuture();
  {
    absl::MutexLock lock(&mu_);
    reconcile_posted_ = false;
    if (stopping_) return;
    const absl::Time now = options_.clock->Now();
    // Unregistrations first: plugins whose socket is gone, or was re-created.
    for (const auto& [path, actual] : actual_) {
      auto desired = desired_.find(path);
      if (desired != desired_.end() && desired->second.generation == actual.generation) continue;
      StartOperationLocked(path, now, next_retry,
                           [this, path = path] { return UnregisterPlugin(path); });
    }
    for (const auto& [path, desired] : desired_) {
      auto actual = actual_.find(path);
      if (actual != actual_.end() && actual->second.generation == desired.generation) continue;
      StartOperationLocked(path, now, next_retry, [this, path = path, desired = desired] {
        return RegisterPlugin(path, desired);
      });
    }
    // Back-offs of sockets that are gone, once expired, would only accumulate.
    for (auto it = backoff_.begin(); it != backoff_.end();) {
      const bool forgotten = it->second.RetryAt() <= now && !desired_.contains(it->first) &&
                             !actual_.contains(it->first) && !in_flight_.contains(it->first);
      it = forgotten ? backoff_.erase(it) : std::next(it);
    }
  }
  if (next_retry != absl::InfiniteFuture()) ArmRetryTimer(next_retry);
}

template <typename Operation>
void WatcherImpl::StartOperationLocked(const std::string& path, absl::Time now,
                                       absl::Time& next_retry, Operation operation) {
  if (in_flight_.contains(path)) return;
  if (auto backoff = backoff_.find(path); backoff != backoff_.end()) {
    const absl::Time retry_at = backoff->second.RetryAt();
    if (now < retry_at) {
      next_retry = std::min(next_retry, retry_at);
      return;
    }
  }
  in_flight_.insert(path);
  workers_->Post(
      [this, path, operation = std::move(operation)] { FinishOperation(path, operation()); });
}

void WatcherImpl::ArmRetryTimer(absl::Time when) {
  if (when >= retry_at_) return;  // an earlier wake-up is already set
  retry_at_ = when;
  // The timer waits in real time for what the clock says is left. A clock moved by hand does not
  // wake it early; when it fires, Reconcile asks the clock again and re-arms it if the back-off
  // has not expired by then.
  const absl::Duration delay = std::max(absl::ZeroDuration(), when - options_.clock->Now());
  retry_timer_->expires_after(absl::ToChronoNanoseconds(delay));
  retry_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or stopped
    retry_at_ = absl::InfiniteFuture();
    Reconcile();
  });
}

void WatcherImpl::FinishOperation(const std::string& path, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(path);
  if (stopping_) return;
  if (status.ok()) {
    backoff_.erase(path);
  } else {
    DEVMGR_LOG(options_.logger, err, "Plugin operation failed", "path", path, "err", status);
    auto [it, inserted] =
        backoff_.try_emplace(path, options_.initial_backoff, options_.max_backoff);
    it->second.Update(options_.clock->Now());
  }
  RequestReconcileLocked();
}

absl::Status WatcherImpl::RegisterPlugin(const std::string& path, const DesiredEntry& desired) {
  RegistrationClient client(options_.registry_dir, path);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("plugin watcher stopping");
    clients_.insert(&client);
  }
  absl::Status status = Handshake(client, path, desired);
  absl::MutexLock lock(&mu_);
  clients_.erase(&client);
  return status;
}

absl::Status WatcherImpl::Handshake(RegistrationClient& client, const std::string& path,
                                    const DesiredEntry& desired) {
  // A socket deep in sub-folders can have a path that no unix socket address holds.
  absl::Status status = ValidateSocketPath(path);
  if (status.ok()) status = client.Dial(options_.dial_timeout);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("RegisterPlugin error -- dial failed at socket ", path,
                                     ", err: ", status.message()));
  }
  absl::StatusOr<pluginregistration::PluginInfo> info = client.GetInfo(options_.get_info_timeout);
  if (!info.ok()) {
    return absl::Status(
        info.status().code(),
        absl::StrCat(
            "RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ", path,
            ", err: ", info.status().message()));
  }
  PluginHandler* handler = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = handlers_.find(info->type()); it != handlers_.end()) handler = it->second;
  }
  if (handler == nullptr) {
    return NotifyFailure(client, path, absl::StatusCode::kFailedPrecondition,
                         absl::StrCat("RegisterPlugin error -- no handler registered for plugin "
                                      "type: ",
                                      info->type(), " at socket ", path));
  }
  if (info->endpoint().empty()) info->set_endpoint(path);
  absl::Status valid = CheckPluginInfo(*info, options_.max_name_bytes);
  const std::vector<std::string> versions(info->supported_versions().begin(),
                                          info->supported_versions().end());
  if (valid.ok()) valid = handler->ValidatePlugin(info->name(), info->endpoint(), versions);
  if (!valid.ok()) {
    return NotifyFailure(client, path, absl::StatusCode::kInvalidArgument,
                         absl::StrCat("RegisterPlugin error -- plugin validation failed with err: ",
                                      valid.message()));
  }
  {
    // In the actual state before RegisterPlugin, as upstream: a socket deleted meanwhile then
    // leads to DeRegisterPlugin.
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("plugin watcher stopping");
    actual_[path] = ActualEntry{desired.timestamp, desired.generation, handler,
                                info->type(),      info->name(),       info->endpoint()};
  }
  status = handler->RegisterPlugin(info->name(), info->endpoint(), versions);
  if (!status.ok()) {
    {
      // Upstream keeps it and deregisters it by name and endpoint when the socket goes, which
      // drops the plugin registered under them (a second socket naming a working driver's
      // endpoint is refused, then removed). It stays, so that it is not retried before its
      // socket changes, as upstream; but only marked refused.
      absl::MutexLock lock(&mu_);
      if (auto it = actual_.find(path);
          it != actual_.end() && it->second.generation == desired.generation) {
        it->second.refused = true;
      }
    }
    return NotifyFailure(
        client, path, absl::StatusCode::kAborted,
        absl::StrCat("RegisterPlugin error -- plugin registration failed with err: ",
                     status.message()));
  }
  DEVMGR_LOG(options_.logger, info, "Registered plugin", "path", path, "type", info->type(),
             "pluginName", info->name(), "endpoint", info->endpoint());
  // Notified after RegisterPlugin, as upstream: a failed notification still leaves the plugin
  // registered with its handler.
  status = client.NotifyRegistrationStatus(true, "", options_.notify_timeout);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("RegisterPlugin error -- failed to send registration status "
                                     "at socket ",
                                     path, ", err: ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status WatcherImpl::NotifyFailure(RegistrationClient& client, const std::string& path,
                                        absl::StatusCode code, const std::string& message) {
  if (absl::Status status =
          client.NotifyRegistrationStatus(false, message, options_.notify_timeout);
      !status.ok()) {
    return absl::Status(
        status.code(), absl::StrCat("RegisterPlugin error -- failed to send error at socket ", path,
                                    ", err: ", message, ": ", status.message()));
  }
  return absl::Status(code, message);
}

absl::Status WatcherImpl::UnregisterPlugin(const std::string& path) {
  ActualEntry entry;
  {
    // Out of the actual state before DeRegisterPlugin, as upstream: a socket re-created
    // meanwhile then leads to a fresh registration.
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("plugin watcher stopping");
    auto it = actual_.find(path);
    if (it == actual_.end()) return absl::OkStatus();
    entry = std::move(it->second);
    actual_.erase(it);
  }
  if (entry.refused) return absl::OkStatus();
  entry.handler->DeRegisterPlugin(entry.name, entry.endpoint);
  DEVMGR_LOG(options_.logger, info, "DeRegisterPlugin called", "path", path, "type", entry.type,
             "pluginName", entry.name, "endpoint", entry.endpoint);
  return absl::OkStatus();
}

}  // namespace devmgr::pluginwatcher
