#include "dra/connection_monitor.h"

#include <utility>

#include "common/channel_reconnect.h"

namespace devmgr::dra {
namespace {

// The completion queue's tags are watch ids.
void* Tag(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }
uint64_t Id(void* tag) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(tag)); }

}  // namespace

ConnectionMonitor::ConnectionMonitor(absl::Duration poll)
    : poll_(poll), thread_([this] { Run(); }) {}

ConnectionMonitor::~ConnectionMonitor() {
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, entry] : entries_) entry.stopped = true;
  }
  // Pending notifications still come back (by their deadline at the latest); then Next ends.
  queue_.Shutdown();
  thread_.join();
}

void ConnectionMonitor::Arm(uint64_t id, Entry& entry) {
  entry.channel->NotifyOnStateChange(entry.last, absl::ToChronoTime(absl::Now() + poll_), &queue_,
                                     Tag(id));
}

uint64_t ConnectionMonitor::Watch(std::shared_ptr<grpc::Channel> channel,
                                  std::filesystem::path socket, OnChange on_change) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = ++next_id_;
  Entry& entry = entries_[id];
  entry.channel = std::move(channel);
  entry.socket = std::move(socket);
  entry.on_change = std::move(on_change);
  entry.channel->GetState(/*try_to_connect=*/true);
  // Taken as idle, so not ready yet: armed against that, the watch wakes at once unless the
  // channel is idle still, and that first wake reports it if it is ready. A ready channel is
  // then reported from the monitor's thread like every later change, so never after a change
  // that came later (reported from here, outside the lock, it could be).
  entry.last = GRPC_CHANNEL_IDLE;
  Arm(id, entry);
  return id;
}

void ConnectionMonitor::Unwatch(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (auto it = entries_.find(id); it != entries_.end()) it->second.stopped = true;
}

void ConnectionMonitor::Run() {
  void* tag = nullptr;
  bool changed = false;
  while (queue_.Next(&tag, &changed)) {
    OnChange report;
    bool ready = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(Id(tag));
      if (it == entries_.end()) continue;
      Entry& entry = it->second;
      if (entry.stopped) {
        entries_.erase(it);
        continue;
      }
      // On a timeout (changed == false) the state is read again all the same: an idle channel
      // is asked to connect, and a failed one whose driver is back connects without waiting out
      // its backoff (the state changes then), once per socket file it binds.
      const grpc_connectivity_state state = entry.channel->GetState(/*try_to_connect=*/true);
      CutBackoffOncePerSocketFile(*entry.channel, entry.socket, entry.backoff_cut_for);
      ready = state == GRPC_CHANNEL_READY;
      if (ready != (entry.last == GRPC_CHANNEL_READY)) report = entry.on_change;
      entry.last = state;
      Arm(it->first, entry);
    }
    if (report) report(ready);
  }
}

}  // namespace devmgr::dra
