// MetricsHttpServer: the HTTP/1.1 server behind the daemon's `--metrics-address`, on
// Boost.Beast and Asio. prometheus-cpp's own exposer (civetweb) cannot listen on a unix socket,
// nor give one its mode before the first client can connect, so it serves the text the node's
// prometheus-cpp registry renders instead. Paths, as a kubelet's:
//   GET|HEAD /metrics  200, the body a callback renders, `text/plain; version=0.0.4; charset=utf-8`
//   GET|HEAD /healthz  200 "ok" while the server runs
//   GET|HEAD /readyz   200 "ok" when the readiness callback says so, else 500 with its reason
// 404 for any other path, 405 (with Allow) for any other method, 400 for a request that is not
// HTTP/1.x (lines ending in a bare LF included: Beast takes only CRLF, as RFC 9112 allows), 431
// for a request line plus headers larger than max_request_bytes. Every answer closes its
// connection.
//
// It listens on a unix socket (`unix:/path` or an absolute path; the file gets the mode asked
// for, 0600 by default, before it listens, and is removed at Stop) or on TCP (`host:port`;
// `:port` or a bare `port` mean 127.0.0.1, so nothing is exposed beyond the node unless a host
// is named; port 0 lets the system pick, see address()).
//
// One thread serves every connection, each asynchronously: no connection can hold the others
// up. A connection that has not sent its request and taken its answer within
// connection_timeout is closed. Connections beyond max_connections wait in the listen backlog.
// The callbacks run on the server thread, one scrape at a time.
//
//   auto server = MetricsHttpServer::Start({.address = flag}, [&] { return metrics.Render(); });
//   if (!server.ok()) return server.status();   // InvalidArgument / Unavailable / ...
//   DEVMGR_LOG(log, info, "Serving metrics", "address", (*server)->address());
//   ...
//   (*server)->Stop();
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace devmgr {

// ListenAddress: a parsed metrics address.
struct ListenAddress {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kTcp;
  // kUnix: the socket file.
  std::filesystem::path path;
  // kTcp: a host name or IP literal (IPv6 without brackets), and the port (0: any free one).
  std::string host;
  uint16_t port = 0;
};

// ParseListenAddress reads `unix:/abs/path`, `/abs/path`, `host:port`, `[v6]:port`, `:port`
// or `port`. InvalidArgument, naming the address, for anything else (a relative socket path, a
// port that is not a number in 0..65535, an IPv6 host without brackets, a path of 108 bytes or
// more).
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address);

class MetricsHttpServer {
 public:
  // ReadyFn: OK when the host is ready (/readyz answers 200), else why not (500, the message).
  using ReadyFn = std::function<absl::Status()>;

  struct Options {
    // See ParseListenAddress.
    std::string address;
    // Mode of the unix socket file; set before the socket accepts connections.
    mode_t socket_mode = 0600;
    // A connection must have sent its request and taken the answer within this.
    absl::Duration connection_timeout = absl::Seconds(10);
    // Largest request line plus headers.
    size_t max_request_bytes = 8192;
    // Connections served at once.
    int max_connections = 16;
    // Asked at each GET /readyz; none: ready whenever the server runs.
    ReadyFn ready = nullptr;
  };
  // Body: the text served at /metrics.
  using BodyFn = std::function<std::string()>;

  // Start listens (connections are accepted from the moment it returns) and starts the
  // thread. Errors: InvalidArgument for a bad address, FailedPrecondition when something that
  // is not a socket is at the unix path, Unavailable when the address cannot be bound (in
  // use, not local), Internal for other system failures. Each names the address.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(Options options, BodyFn body);

  // Stops if still running.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The address actually bound: "unix:/path", "127.0.0.1:PORT" or "[::1]:PORT", with the port
  // the system picked when 0 was asked for.
  const std::string& address() const { return address_; }

  // Stop closes the listener and every connection (an answer being written is cut short),
  // joins the thread and removes the socket file if it is still ours. Idempotent; blocks
  // only for the callback in progress, if any. Not from a callback.
  void Stop();

 private:
  class Impl;
  MetricsHttpServer() = default;

  std::string address_;
  // The unix socket file to remove at Stop (empty for TCP), with its inode at bind time, so
  // that a socket someone else has bound there since is left alone.
  std::filesystem::path socket_path_;
  ino_t socket_inode_ = 0;
  // The io_context, the listener and the connections; its thread is `thread_`.
  std::unique_ptr<Impl> impl_;
  // Last: joined before the state it runs on is destroyed.
  std::thread thread_;
};

}  // namespace devmgr
