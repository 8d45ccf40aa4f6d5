#include "common/metrics_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/unix_socket.h"

namespace devmgr {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

constexpr int kListenBacklog = 64;
// After accept fails for want of descriptors, how long to leave the backlog alone instead of
// spinning on a listener that stays readable.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr size_t kReadChunk = 4096;

std::string ErrnoText(absl::string_view call, int error) {
  return absl::StrCat(call, ": ", std::error_code(error, std::system_category()).message());
}

// FileDescriptor: closes what it holds.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~FileDescriptor() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

absl::Status BadAddress(absl::string_view address, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid metrics address \"", address, "\": ", why));
}

bool ParsePort(absl::string_view text, uint16_t* port) {
  if (text.empty() || text.size() > 5) return false;
  uint32_t value = 0;
  for (const char c : text) {
    if (!absl::ascii_isdigit(c)) return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

std::string FormatSocketAddress(const sockaddr_storage& storage) {
  char host[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return absl::StrCat("[", host, "]:", ntohs(in6->sin6_port));
  }
  const auto* in4 = reinterpret_cast<const sockaddr_in*>(&storage);
  ::inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
  return absl::StrCat(host, ":", ntohs(in4->sin_port));
}

std::string Response(int code, absl::string_view reason, absl::string_view content_type,
                     absl::string_view body, bool with_body, absl::string_view extra_headers = "") {
  std::string out = absl::StrCat("HTTP/1.1 ", code, " ", reason, "\r\nContent-Type: ", content_type,
                                 "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n",
                                 extra_headers, "\r\n");
  if (with_body) out.append(body.data(), body.size());
  return out;
}

std::string PlainResponse(int code, absl::string_view reason, absl::string_view extra = "") {
  return Response(code, reason, "text/plain; charset=utf-8", absl::StrCat(code, " ", reason, "\n"),
                  /*with_body=*/true, extra);
}

// The request head ends with an empty line; bare LF line ends are accepted too (RFC 9112
// allows it). npos while incomplete.
size_t HeadLength(absl::string_view data) {
  const size_t crlf = data.find("\r\n\r\n");
  const size_t lf = data.find("\n\n");
  if (crlf == absl::string_view::npos && lf == absl::string_view::npos) {
    return absl::string_view::npos;
  }
  if (lf == absl::string_view::npos || (crlf != absl::string_view::npos && crlf < lf)) {
    return crlf + 4;
  }
  return lf + 2;
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address) {
  if (address.empty()) return BadAddress(address, "empty");
  ListenAddress result;
  absl::string_view rest = address;
  if (absl::ConsumePrefix(&rest, "unix:") || absl::StartsWith(address, "/")) {
    result.kind = ListenAddress::Kind::kUnix;
    result.path = std::filesystem::path(std::string(rest));
    if (absl::Status status = ValidateSocketPath(result.path); !status.ok()) {
      return BadAddress(address, status.message());
    }
    return result;
  }
  absl::string_view host;
  absl::string_view port = rest;
  if (absl::ConsumePrefix(&rest, "[")) {
    const size_t close = rest.find("]:");
    if (close == absl::string_view::npos || close == 0) {
      return BadAddress(address, "expected [host]:port");
    }
    host = rest.substr(0, close);
    port = rest.substr(close + 2);
  } else if (const size_t colon = rest.rfind(':'); colon != absl::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (absl::StrContains(host, ':')) {
      return BadAddress(address, "an IPv6 host goes in brackets: [host]:port");
    }
  }
  if (!ParsePort(port, &result.port)) {
    return BadAddress(address, "the port must be a number from 0 to 65535");
  }
  result.kind = ListenAddress::Kind::kTcp;
  // Loopback unless the caller names a host: metrics are not for the whole network by default.
  result.host = host.empty() ? "127.0.0.1" : std::string(host);
  return result;
}

// Loop: the server thread's state. Only Wake is called from another thread.
class MetricsHttpServer::Loop {
 public:
  Loop(FileDescriptor listener, FileDescriptor wake_read, FileDescriptor wake_write,
       const Options& options, BodyFn body)
      : listener_(std::move(listener)),
        wake_read_(std::move(wake_read)),
        wake_write_(std::move(wake_write)),
        options_(options),
        body_(std::move(body)) {}

  // Wake makes Run return soon. Thread-safe; never blocks (the pipe is non-blocking, and one
  // byte in it is enough).
  void Wake() {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_write_.get(), &byte, 1);
  }

  void Run();

 private:
  enum class Phase { kReading, kWriting, kDraining };
  struct Connection {
    FileDescriptor fd;
    SteadyTime deadline;
    Phase phase = Phase::kReading;
    std::string in;
    std::string out;
    size_t sent = 0;
  };

  void Accept(SteadyTime now);
  // Each returns false when the connection is finished and must be closed.
  bool OnReadable(Connection& connection);
  bool OnWritable(Connection& connection);
  std::string Answer(absl::string_view head);

  FileDescriptor listener_;
  FileDescriptor wake_read_;
  FileDescriptor wake_write_;
  const Options options_;
  const BodyFn body_;
  std::vector<Connection> connections_;
  SteadyTime accept_paused_until_;
};

void MetricsHttpServer::Loop::Run() {
  std::vector<pollfd> fds;
  while (true) {
    const SteadyTime before = std::chrono::steady_clock::now();
    const bool accepting = static_cast<int>(connections_.size()) < options_.max_connections &&
                           before >= accept_paused_until_;
    fds.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    // poll ignores a negative descriptor: the backlog waits while we are full.
    fds.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
    SteadyTime wake_at = accepting ? SteadyTime::max() : before + kAcceptPause;
    for (const Connection& connection : connections_) {
      fds.push_back({connection.fd.get(),
                     static_cast<short>(connection.phase == Phase::kWriting ? POLLOUT : POLLIN),
                     0});
      wake_at = std::min(wake_at, connection.deadline);
    }
    int timeout_ms = -1;
    if (wake_at != SteadyTime::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - before);
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      break;  // EFAULT/EINVAL/ENOMEM: nothing sensible is left to do; Stop still joins
    }
    if (fds[0].revents != 0) break;

    const SteadyTime now = std::chrono::steady_clock::now();
    std::vector<bool> keep(connections_.size(), true);
    for (size_t i = 0; i < connections_.size(); ++i) {
      Connection& connection = connections_[i];
      const short events = fds[i + 2].revents;
      if ((events & (POLLERR | POLLNVAL)) != 0) {
        keep[i] = false;
      } else if (connection.phase == Phase::kWriting) {
        // After a hang-up the answer has nowhere to go.
        keep[i] = (events & POLLHUP) == 0 && ((events & POLLOUT) == 0 || OnWritable(connection));
      } else if ((events & (POLLIN | POLLHUP)) != 0) {
        keep[i] = OnReadable(connection);  // a hang-up reads as end of file
      }
      if (now >= connection.deadline) keep[i] = false;
    }
    size_t kept = 0;
    for (size_t i = 0; i < connections_.size(); ++i) {
      if (keep[i]) connections_[kept++] = std::move(connections_[i]);
    }
    connections_.resize(kept);
    if (accepting && (fds[1].revents & POLLIN) != 0) Accept(now);
  }
  connections_.clear();
}

void MetricsHttpServer::Loop::Accept(SteadyTime now) {
  while (static_cast<int>(connections_.size()) < options_.max_connections) {
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) accept_paused_until_ = now + kAcceptPause;
      return;
    }
    Connection connection;
    connection.fd = FileDescriptor(fd);
    connection.deadline = now + absl::ToChronoMilliseconds(options_.connection_timeout);
    connections_.push_back(std::move(connection));
  }
}

bool MetricsHttpServer::Loop::OnReadable(Connection& connection) {
  char buffer[kReadChunk];
  while (true) {
    const ssize_t n = ::recv(connection.fd.get(), buffer, sizeof(buffer), 0);
    if (n == 0) return false;  // the client went away (or finished, when draining)
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (connection.phase == Phase::kDraining) continue;  // what follows our answer is dropped
    connection.in.append(buffer, static_cast<size_t>(n));
    const size_t head = HeadLength(connection.in);
    if (head == std::string::npos && connection.in.size() <= options_.max_request_bytes) continue;
    connection.out = head > options_.max_request_bytes
                         ? PlainResponse(431, "Request Header Fields Too Large")
                         : Answer(absl::string_view(connection.in).substr(0, head));
    connection.in.clear();
    connection.phase = Phase::kWriting;
    return OnWritable(connection);
  }
}

bool MetricsHttpServer::Loop::OnWritable(Connection& connection) {
  while (connection.sent < connection.out.size()) {
    // MSG_NOSIGNAL: a client that hangs up early must not kill the daemon with SIGPIPE.
    const ssize_t n = ::send(connection.fd.get(), connection.out.data() + connection.sent,
                             connection.out.size() - connection.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    connection.sent += static_cast<size_t>(n);
  }
  // Half-close, then read until the client closes: closing with unread input would reset the
  // connection and could destroy the answer before the client has read it.
  ::shutdown(connection.fd.get(), SHUT_WR);
  connection.phase = Phase::kDraining;
  connection.out.clear();
  return true;
}

std::string MetricsHttpServer::Loop::Answer(absl::string_view head) {
  const absl::string_view request_line = head.substr(0, head.find('\n'));
  std::vector<absl::string_view> parts =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(request_line), ' ');
  if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.")) {
    return PlainResponse(400, "Bad Request");
  }
  const absl::string_view method = parts[0];
  absl::string_view target = parts[1];
  // The absolute form (http://host/path) is allowed too; the query is not ours to read.
  if (absl::ConsumePrefix(&target, "http://")) {
    const size_t slash = target.find('/');
    target = slash == absl::string_view::npos ? "/" : target.substr(slash);
  }
  target = target.substr(0, target.find('?'));
  if (target != "/metrics") return PlainResponse(404, "Not Found");
  if (method != "GET" && method != "HEAD") {
    return PlainResponse(405, "Method Not Allowed", "Allow: GET, HEAD\r\n");
  }
  return Response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body_(),
                  /*with_body=*/method == "GET");
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(Options options,
                                                                            BodyFn body) {
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(options.address);
  if (!parsed.ok()) return parsed.status();
  auto failed = [&](absl::StatusCode code, absl::string_view why) {
    return absl::Status(code,
                        absl::StrCat("cannot serve metrics on \"", options.address, "\": ", why));
  };
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): the constructor is private.
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  FileDescriptor listener;

  if (parsed->kind == ListenAddress::Kind::kUnix) {
    const std::filesystem::path& path = parsed->path;
    if (absl::Status status = RemoveStaleSocket(path); !status.ok()) return status;
    listener = FileDescriptor(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener.valid()) return failed(absl::StatusCode::kInternal, ErrnoText("socket", errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.native().size() + 1);
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      return failed(absl::StatusCode::kUnavailable, ErrnoText("bind", errno));
    }
    // From here the file is ours: Stop (or the destructor, on the error paths below) removes it.
    server->socket_path_ = path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      return failed(absl::StatusCode::kInternal, ErrnoText("stat", errno));
    }
    server->socket_inode_ = st.st_ino;
    // Before listen: no client can connect while the mode is still the umask's.
    if (::chmod(path.c_str(), options.socket_mode) != 0) {
      return failed(absl::StatusCode::kInternal, ErrnoText("chmod", errno));
    }
    server->address_ = absl::StrCat("unix:", path.string());
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(parsed->port);
    if (const int rc = ::getaddrinfo(parsed->host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return failed(absl::StatusCode::kInvalidArgument,
                    absl::StrCat("cannot resolve ", parsed->host, ": ", ::gai_strerror(rc)));
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
    std::string last_error = "no address";
    for (const addrinfo* ai = addresses.get(); ai != nullptr; ai = ai->ai_next) {
      FileDescriptor fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!fd.valid()) {
        last_error = ErrnoText("socket", errno);
        continue;
      }
      // A restarted daemon must not wait for the old connections' TIME_WAIT to end.
      const int on = 1;
      ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
        last_error = ErrnoText("bind", errno);
        continue;
      }
      listener = std::move(fd);
      break;
    }
    if (!listener.valid()) return failed(absl::StatusCode::kUnavailable, last_error);
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      return failed(absl::StatusCode::kInternal, ErrnoText("getsockname", errno));
    }
    server->address_ = FormatSocketAddress(bound);
  }
  if (::listen(listener.get(), kListenBacklog) != 0) {
    return failed(absl::StatusCode::kUnavailable, ErrnoText("listen", errno));
  }

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return failed(absl::StatusCode::kInternal, ErrnoText("pipe", errno));
  }
  server->loop_ = std::make_unique<Loop>(std::move(listener), FileDescriptor(pipe_fds[0]),
                                         FileDescriptor(pipe_fds[1]), options, std::move(body));
  server->thread_ = std::thread([loop = server->loop_.get()] { loop->Run(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  if (thread_.joinable()) {
    loop_->Wake();
    thread_.join();
  }
  loop_.reset();
  if (!socket_path_.empty()) {
    struct stat st {};
    if (::lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_ino == socket_inode_) {
      ::unlink(socket_path_.c_str());
    }
    socket_path_.clear();
  }
}

}  // namespace devmgr
