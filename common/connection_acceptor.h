// ConnectionAcceptor: the accept loop of a gRPC server whose listening socket gRPC does not
// make itself. It accepts connections on a socket it is given, on a thread of its own, and hands
// each to a started server with grpc::AddInsecureChannelFromFd: the PodResources server, which
// reads each client's credentials first, and a DRA driver's servers on a socket the driver made
// (upstream's PluginListener and RegistrarListener).
//
// A connection that could not be accepted for want of descriptors or memory stays queued; the
// loop waits, doubling from 5 ms up to 1 s as grpc-go's server does, and tries again. Other
// errors of one connection (a client that gave up) are skipped. A listening socket that fails
// for good (closed, shut down, not a listening socket) ends the loop, and on_failure says why,
// as Go's Server.Serve returns the listener's error.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/logging.h"

namespace grpc {
class Server;
}

namespace devmgr {

class ConnectionAcceptor {
 public:
  struct Options {
    // What the socket serves, for the log ("PodResources", "DRA gRPC server").
    std::string name;
    // Told of each accepted connection before the server gets it; false: it is closed instead.
    // Null: every connection goes to the server.
    std::function<bool(int fd)> on_accept;
    // Told once, on the acceptor's thread, when the listening socket fails for good; the loop
    // has ended. It must not destroy the acceptor (Stop waits for that thread). Null: logged.
    std::function<void(const absl::Status& error)> on_failure;
    LoggerPtr logger;
  };

  // Create takes `listen_fd`, a socket that listens for stream connections, and owns it from
  // then on, even when it fails (it is made non-blocking). Accepts nothing until Start.
  static absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> Create(int listen_fd, Options options);
  // Stops (Stop).
  ~ConnectionAcceptor();
  ConnectionAcceptor(const ConnectionAcceptor&) = delete;
  ConnectionAcceptor& operator=(const ConnectionAcceptor&) = delete;

  // Start accepts on the acceptor's thread and hands each connection to `server`, which must
  // have been started and must outlive Stop. Call once.
  void Start(grpc::Server& server);

  // Stop ends accepting and closes the listening socket, so that a client is refused at once
  // instead of waiting in its queue (connections handed over stay with the server); idempotent.
  void Stop();

 private:
  ConnectionAcceptor(int listen_fd, int wake_fd, Options options);
  void AcceptLoop(grpc::Server* server);
  // AcceptOne accepts one connection (`hung_up`: poll said the socket hung up) and returns how
  // long to wait before the next (zero but after a failure for want of resources, which grows
  // `retry_delay`), or why the loop ends.
  absl::StatusOr<absl::Duration> AcceptOne(grpc::Server* server, bool hung_up,
                                           absl::Duration& retry_delay);
  // WaitForStop: true once Stop was called, waiting up to `timeout` for it.
  bool WaitForStop(absl::Duration timeout) const;

  // The bounds of the wait after an accept that failed for want of descriptors or memory.
  static constexpr absl::Duration kMinAcceptRetry = absl::Milliseconds(5);
  static constexpr absl::Duration kMaxAcceptRetry = absl::Seconds(1);

  int listen_fd_;      // -1 once Stop closed it
  const int wake_fd_;  // an eventfd that wakes the accept thread to stop
  const Options options_;
  // Last: joins first.
  std::thread thread_;
};

}  // namespace devmgr
