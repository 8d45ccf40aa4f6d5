// ConnectionMonitor: tells when gRPC channels become ready for calls or stop being ready, from
// gRPC's connectivity events (the C++ counterpart of the connection stats handler through which
// the kubelet sees a DRA driver's endpoint connect and disconnect). A channel that is not ready
// is asked to connect again, so that a driver that comes back is seen without a call, at once
// even while gRPC's reconnect backoff would have it wait (common/channel_reconnect.h).
//
// One thread and one completion queue for every channel watched. Each watch wakes at least
// every `poll` to notice that it was stopped; the destructor waits for that.
//
// Thread-safety: every method may be called from any thread at once. Reports run on the
// monitor's thread, never with its lock held; one may still arrive just after Unwatch returns,
// so the receiver must ignore reports about what it no longer knows.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/file_id.h"

namespace devmgr::dra {

class ConnectionMonitor {
 public:
  using OnChange = std::function<void(bool ready)>;

  explicit ConnectionMonitor(absl::Duration poll = absl::Milliseconds(250));
  ~ConnectionMonitor();
  ConnectionMonitor(const ConnectionMonitor&) = delete;
  ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;

  // Watch reports every change of `channel`, which dials the unix socket `socket`, between ready
  // and not ready to `on_change`; a channel that is ready when the watch starts is reported at
  // once, from the monitor's thread as every report. Returns the watch's id.
  uint64_t Watch(std::shared_ptr<grpc::Channel> channel, std::filesystem::path socket,
                 OnChange on_change) ABSL_LOCKS_EXCLUDED(mu_);
  // Unwatch stops reports of watch `id`. Unknown ids are ignored.
  void Unwatch(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::shared_ptr<grpc::Channel> channel;
    std::filesystem::path socket;
    OnChange on_change;
    grpc_connectivity_state last = GRPC_CHANNEL_IDLE;
    std::optional<FileId> backoff_cut_for;  // CutBackoffOncePerSocketFile's
    bool stopped = false;
  };

  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Arm asks gRPC for the next change of `entry`'s state (or the poll deadline).
  void Arm(uint64_t id, Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration poll_;
  grpc::CompletionQueue queue_;
  absl::Mutex mu_;
  // Entries stay until their pending notification has come back after they were stopped.
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace devmgr::dra
