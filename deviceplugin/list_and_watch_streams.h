// ListAndWatchStreams: the open v1beta1.DevicePlugin/ListAndWatch streams of one device plugin
// server, each served by one ServerWriteReactor (callback API) of the method's raw form. Every
// message is a full snapshot of the devices, serialized once and sent as those bytes to every
// stream; each stream has at most one write in flight, and a newer snapshot replaces an unsent
// older one, so a slow reader costs one snapshot of memory, not a queue.
//
// Used by DevicePluginService, and by the test fake plugin (tests/testlib), which streams wire
// snapshots as they are given, malformed ones included. Not part of the SDK's public surface.
//
// Thread-safety: every method is thread-safe and never blocks, except WaitForAllDone. gRPC calls
// (StartWrite, Finish) are made with the internal lock released, and no method calls back into
// its caller.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::deviceplugin {

class ListAndWatchStreams {
 public:
  // The bytes of one v1beta1.ListAndWatchResponse.
  using Snapshot = std::shared_ptr<const grpc::ByteBuffer>;
  using Reactor = grpc::ServerWriteReactor<grpc::ByteBuffer>;

  // SnapshotOf makes a snapshot of `bytes` as they are, for callers that serialize their own
  // message (or send bytes that do not parse, as a test's plugin may).
  static Snapshot SnapshotOf(const std::string& bytes);

  // `current` is the first message of every stream until the next Publish. `device_type` names
  // the streams in the logs, which go to `logger` (null logs nothing).
  ListAndWatchStreams(Snapshot current, std::string device_type, LoggerPtr logger);
  // Requires every stream done: Close then WaitForAllDone, or no stream ever opened.
  ~ListAndWatchStreams();
  ListAndWatchStreams(const ListAndWatchStreams&) = delete;
  ListAndWatchStreams& operator=(const ListAndWatchStreams&) = delete;

  // Open serves one ListAndWatch call with the bytes of its `request` (a v1beta1.Empty): the
  // service's raw ListAndWatch returns this reactor, which deletes itself after OnDone. It sends
  // the current snapshot first; after Close it finishes at once with UNAVAILABLE, and for a
  // request that does not parse with INTERNAL, as a Go plugin's gRPC does.
  Reactor* Open(const grpc::ByteBuffer& request) ABSL_LOCKS_EXCLUDED(mu_);

  // Publish makes `snapshot` current and sends it to every open stream.
  void Publish(Snapshot snapshot) ABSL_LOCKS_EXCLUDED(mu_);

  // EndAll finishes every open stream with `status`, each once its write in flight is done.
  // Streams opened later are served as usual: a plugin can drop its streams and stay up.
  void EndAll(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // Close finishes every open stream with OK and refuses new ones (UNAVAILABLE). Does not wait.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // WaitForAllDone blocks until every stream's OnDone has run. Call after Close.
  void WaitForAllDone() ABSL_LOCKS_EXCLUDED(mu_);

  // OpenCount is the number of streams opened and not yet done.
  int OpenCount() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class StreamReactor;
  // What to do with a reactor once mu_ is released. Deciding under mu_ pins the reactor: it
  // cannot reach OnDone before the chosen write or Finish has been started.
  struct Action {
    StreamReactor* reactor = nullptr;
    const grpc::ByteBuffer* write = nullptr;  // StartWrite this, or
    std::optional<grpc::Status> finish;       // Finish with this
  };

  Action NextActionLocked(StreamReactor& reactor) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Run(const Action& action);
  void Pump(StreamReactor& reactor) ABSL_LOCKS_EXCLUDED(mu_);
  void EndAllLocked(const grpc::Status& status, std::vector<Action>& actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnStreamDone(StreamReactor* reactor) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string device_type_;
  const LoggerPtr logger_;

  mutable absl::Mutex mu_;
  Snapshot current_ ABSL_GUARDED_BY(mu_);
  std::set<StreamReactor*> streams_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace devmgr::deviceplugin
