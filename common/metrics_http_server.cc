#include "common/metrics_http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/unix_socket.h"

namespace devmgr {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
// One acceptor and one socket type for unix and TCP alike.
using Protocol = asio::generic::stream_protocol;
using Acceptor = asio::basic_socket_acceptor<Protocol>;
using ErrorCode = boost::system::error_code;
using Response = http::response<http::string_body>;

constexpr int kListenBacklog = 64;
// After accept fails (out of descriptors, most likely), how long to leave the backlog alone
// instead of spinning on a listener that stays readable.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr absl::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr absl::string_view kPlainContentType = "text/plain; charset=utf-8";

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

// "127.0.0.1:PORT" or "[::1]:PORT" for a bound TCP endpoint.
std::string FormatTcpEndpoint(const Protocol::endpoint& endpoint) {
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  ::getnameinfo(endpoint.data(), static_cast<socklen_t>(endpoint.size()), host, sizeof(host), port,
                sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
  return endpoint.protocol().family() == AF_INET6 ? absl::StrCat("[", host, "]:", port)
                                                  : absl::StrCat(host, ":", port);
}

// The server's descriptors are not for programs a host may start.
void SetCloseOnExec(int fd) { ::fcntl(fd, F_SETFD, FD_CLOEXEC); }

Response Answer(http::status status, absl::string_view content_type, std::string body,
                bool with_body) {
  Response response(status, 11);
  response.set(http::field::content_type,
               boost::beast::string_view(content_type.data(), content_type.size()));
  response.keep_alive(false);
  response.content_length(body.size());
  if (with_body) response.body() = std::move(body);
  return response;
}

// "404 Not Found\n" and the like.
Response PlainAnswer(http::status status) {
  const boost::beast::string_view reason = http::obsolete_reason(status);
  return Answer(status, kPlainContentType,
                absl::StrCat(static_cast<unsigned>(status), " ",
                             absl::string_view(reason.data(), reason.size()), "\n"),
                /*with_body=*/true);
}

// A request Beast's parser refused, as opposed to one the client stopped sending.
bool IsMalformed(const ErrorCode& error) {
  return error.category() == http::make_error_code(http::error::bad_version).category() &&
         error != http::error::end_of_stream && error != http::error::partial_message;
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address) {
  if (address.empty()) return BadAddress(address, "empty");
  ListenAddress result;
  absl::string_view rest = address;
  if (absl::ConsumePrefix(&rest, "unix:") || absl::StartsWith(address, "/")) {
    result.kind = ListenAddress::Kind::kUnix;
    result.path = std::filesystem::path(std::string(rest));
    if (absl::Status status = ValidateSocketAddress(result.path); !status.ok()) {
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

// Impl: the server thread's state. Start sets it up before the thread starts; from then on it is
// used only on that thread, so it needs no lock.
class MetricsHttpServer::Impl {
 public:
  Impl(Options options, BodyFn body)
      : options_(std::move(options)), body_(std::move(body)), acceptor_(context_) {}

  asio::io_context& context() { return context_; }
  Acceptor& acceptor() { return acceptor_; }
  const Options& options() const { return options_; }

  // Accept takes the next connection, unless max_connections are open: then the backlog
  // waits until ConnectionClosed.
  void Accept();
  void ConnectionClosed();
  // Route answers one request.
  Response Route(const http::request_header<>& request) const;

 private:
  class Connection;

  const Options options_;
  const BodyFn body_;
  asio::io_context context_;
  // Keeps run() going while the accept is paused and no connection is open.
  asio::executor_work_guard<asio::io_context::executor_type> work_{context_.get_executor()};
  Acceptor acceptor_;
  asio::steady_timer accept_pause_{context_};
  int connections_ = 0;
  bool accepting_ = false;
};

// Connection: one client, from accept to close. Its handlers hold it (shared_ptr); a Stop
// destroys those handlers, and with them the connection and its socket.
class MetricsHttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl& server, Protocol::socket socket)
      : server_(server), socket_(std::move(socket)), deadline_(socket_.get_executor()) {}

  void Start() {
    SetCloseOnExec(socket_.native_handle());
    deadline_.expires_after(absl::ToChronoMilliseconds(server_.options().connection_timeout));
    deadline_.async_wait([self = shared_from_this()](const ErrorCode& error) {
      if (!error) self->Close();
    });
    parser_.header_limit(static_cast<std::uint32_t>(server_.options().max_request_bytes));
    // Only the head: no path takes a body, and what follows is drained after the answer.
    http::async_read_header(
        socket_, buffer_, parser_,
        [self = shared_from_this()](const ErrorCode& error, size_t) { self->OnRequest(error); });
  }

 private:
  void OnRequest(const ErrorCode& error) {
    if (closed_) return;
    if (error == http::error::header_limit) {
      Send(PlainAnswer(http::status::request_header_fields_too_large));
    } else if (IsMalformed(error)) {
      Send(PlainAnswer(http::status::bad_request));
    } else if (error) {
      Close();  // the client went away, or the connection failed
    } else {
      Send(server_.Route(parser_.get()));
    }
  }

  void Send(Response response) {
    response_ = std::move(response);
    http::async_write(socket_, response_,
                      [self = shared_from_this()](const ErrorCode& error, size_t) {
                        if (error) {
                          self->Close();
                        } else {
                          self->Drain();
                        }
                      });
  }

  // Half-close, then read until the client closes: closing with unread input would reset the
  // connection and could destroy the answer before the client has read it.
  void Drain() {
    if (closed_) return;
    ErrorCode ignored;
    socket_.shutdown(Protocol::socket::shutdown_send, ignored);
    socket_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](const ErrorCode& error, size_t) {
                              if (error) {
                                self->Close();
                              } else {
                                self->Drain();
                              }
                            });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    deadline_.cancel();
    ErrorCode ignored;
    socket_.close(ignored);
    server_.ConnectionClosed();
  }

  Impl& server_;
  Protocol::socket socket_;
  asio::steady_timer deadline_;
  boost::beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  Response response_;
  std::array<char, 4096> drain_{};
  bool closed_ = false;
};

void MetricsHttpServer::Impl::Accept() {
  accepting_ = connections_ < options_.max_connections;
  if (!accepting_) return;
  acceptor_.async_accept([this](const ErrorCode& error, Protocol::socket socket) {
    if (error == asio::error::operation_aborted) return;
    if (error) {
      accept_pause_.expires_after(kAcceptPause);
      accept_pause_.async_wait([this](const ErrorCode& paused) {
        if (!paused) Accept();
      });
      return;
    }
    ++connections_;
    std::make_shared<Connection>(*this, std::move(socket))->Start();
    Accept();
  });
}

void MetricsHttpServer::Impl::ConnectionClosed() {
  --connections_;
  if (!accepting_) Accept();
}

Response MetricsHttpServer::Impl::Route(const http::request_header<>& request) const {
  absl::string_view target(request.target().data(), request.target().size());
  // The absolute form (http://host/path) is allowed too; the query is not ours to read.
  if (absl::ConsumePrefix(&target, "http://")) {
    const size_t slash = target.find('/');
    target = slash == absl::string_view::npos ? "/" : target.substr(slash);
  }
  target = target.substr(0, target.find('?'));
  if (target != "/metrics" && target != "/healthz" && target != "/readyz") {
    return PlainAnswer(http::status::not_found);
  }
  const bool head = request.method() == http::verb::head;
  if (request.method() != http::verb::get && !head) {
    Response answer = PlainAnswer(http::status::method_not_allowed);
    answer.set(http::field::allow, "GET, HEAD");
    return answer;
  }
  if (target == "/metrics") return Answer(http::status::ok, kMetricsContentType, body_(), !head);
  if (target == "/readyz" && options_.ready) {
    if (const absl::Status ready = options_.ready(); !ready.ok()) {
      return Answer(http::status::internal_server_error, kPlainContentType,
                    absl::StrCat("readyz check failed: ", ready.message(), "\n"), !head);
    }
  }
  // As the kubelet's healthz handlers answer.
  return Answer(http::status::ok, kPlainContentType, "ok", !head);
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(Options options,
                                                                            BodyFn body) {
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(options.address);
  if (!parsed.ok()) return parsed.status();
  const std::string address = options.address;
  auto failed = [&](absl::StatusCode code, absl::string_view call, const ErrorCode& error) {
    return absl::Status(code, absl::StrCat("cannot serve metrics on \"", address, "\": ", call,
                                           ": ", error.message()));
  };
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): the constructor is private.
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->impl_ = std::make_unique<Impl>(std::move(options), std::move(body));
  Impl& impl = *server->impl_;
  Acceptor& acceptor = impl.acceptor();
  ErrorCode error;

  if (parsed->kind == ListenAddress::Kind::kUnix) {
    const std::filesystem::path& path = parsed->path;
    if (absl::Status status = RemoveStaleSocket(path); !status.ok()) return status;
    const Protocol::endpoint endpoint{asio::local::stream_protocol::endpoint(path.string())};
    acceptor.open(endpoint.protocol(), error);
    if (error) return failed(absl::StatusCode::kInternal, "socket", error);
    acceptor.bind(endpoint, error);
    if (error) return failed(absl::StatusCode::kUnavailable, "bind", error);
    // From here the file is ours: Stop (or the destructor, on the error paths below) removes it.
    server->socket_path_ = path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      return failed(absl::StatusCode::kInternal, "stat",
                    ErrorCode(errno, boost::system::system_category()));
    }
    server->socket_inode_ = st.st_ino;
    // Before listen: no client can connect while the mode is still the umask's.
    if (::chmod(path.c_str(), impl.options().socket_mode) != 0) {
      return failed(absl::StatusCode::kInternal, "chmod",
                    ErrorCode(errno, boost::system::system_category()));
    }
    server->address_ = absl::StrCat("unix:", path.string());
  } else {
    asio::ip::tcp::resolver resolver(impl.context());
    const asio::ip::tcp::resolver::results_type found =
        resolver.resolve(parsed->host, std::to_string(parsed->port),
                         asio::ip::resolver_base::numeric_service, error);
    if (error) return failed(absl::StatusCode::kInvalidArgument, "resolve " + parsed->host, error);
    ErrorCode last_error = asio::error::host_not_found;
    std::string last_call = "resolve " + parsed->host;
    for (const auto& entry : found) {
      const Protocol::endpoint endpoint{entry.endpoint()};
      acceptor.open(endpoint.protocol(), last_error);
      if (last_error) {
        last_call = "socket";
        continue;
      }
      // A restarted daemon must not wait for the old connections' TIME_WAIT to end.
      acceptor.set_option(asio::socket_base::reuse_address(true), error);
      acceptor.bind(endpoint, last_error);
      if (last_error) {
        last_call = "bind";
        acceptor.close(error);
        continue;
      }
      break;
    }
    if (!acceptor.is_open()) return failed(absl::StatusCode::kUnavailable, last_call, last_error);
    const Protocol::endpoint bound = acceptor.local_endpoint(error);
    if (error) return failed(absl::StatusCode::kInternal, "getsockname", error);
    server->address_ = FormatTcpEndpoint(bound);
  }
  SetCloseOnExec(acceptor.native_handle());
  acceptor.listen(kListenBacklog, error);
  if (error) return failed(absl::StatusCode::kUnavailable, "listen", error);

  impl.Accept();
  server->thread_ = std::thread([&impl] { impl.context().run(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  if (thread_.joinable()) {
    impl_->context().stop();
    thread_.join();
  }
  // Closes the listener, and destroys the handlers still pending with their connections.
  impl_.reset();
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
