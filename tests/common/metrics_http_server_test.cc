// MetricsHttpServer over a unix socket in a temporary folder and over TCP on a port the system
// picks: the answers (200 with the exposition content type, /healthz and /readyz, 404, 405,
// HEAD, 400, 431), the socket file's mode and removal, address parsing and its errors, and that
// a client that connects and never writes neither blocks another scrape nor outlives its
// timeout.
#include "common/metrics_http_server.h"

#include <gtest/gtest.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/metrics_scrape.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

using ::devmgr::testing::TempDir;

constexpr char kBody[] = "# HELP x X.\n# TYPE x counter\nx 1\n";

// A socket bound at `path` (as another program would leave one there); -1 on failure.
int BindUnixSocket(const std::filesystem::path& path) {
  sockaddr_un addr{};
  if (path.native().size() >= sizeof(addr.sun_path)) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.native().size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A client socket connected to `address` (as MetricsHttpServer::address() prints it), with a
// receive timeout so that a test fails instead of hanging. -1 on failure.
int Connect(const std::string& address) {
  int fd = -1;
  absl::string_view rest = address;
  if (absl::ConsumePrefix(&rest, "unix:")) {
    sockaddr_un addr{};
    if (rest.size() >= sizeof(addr.sun_path)) return -1;
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, rest.data(), rest.size());
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      return -1;
    }
  } else {
    const size_t colon = rest.rfind(':');
    std::string host(absl::StripSuffix(absl::StripPrefix(rest.substr(0, colon), "["), "]"));
    std::string port(rest.substr(colon + 1));
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
    fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
    ::freeaddrinfo(found);
    if (rc != 0) {
      ::close(fd);
      return -1;
    }
  }
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// Everything the server sends until it closes its side; "<timeout>" if it never does.
std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) return out;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "<timeout>";
    out.append(buffer, static_cast<size_t>(n));
  }
}

struct Reply {
  int code = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};

Reply Parse(const std::string& raw) {
  Reply reply;
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return reply;
  reply.body = raw.substr(end + 4);
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, end), "\r\n");
  std::vector<std::string> status = absl::StrSplit(lines[0], ' ');
  if (status.size() < 2 || status[0] != "HTTP/1.1" || !absl::SimpleAtoi(status[1], &reply.code)) {
    return reply;
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    reply.headers[lines[i].substr(0, colon)] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  return reply;
}

Reply Request(const std::string& address, const std::string& request) {
  const int fd = Connect(address);
  if (fd < 0) return Reply();
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  Reply reply = Parse(ReadAll(fd));
  ::close(fd);
  return reply;
}

Reply Get(const std::string& address, const std::string& path = "/metrics") {
  return Request(address, absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: x\r\n\r\n"));
}

std::unique_ptr<MetricsHttpServer> StartOrDie(MetricsHttpServer::Options options) {
  auto server = MetricsHttpServer::Start(std::move(options), [] { return std::string(kBody); });
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

TEST(ParseListenAddressTest, ReadsUnixAndTcpForms) {
  auto unix_prefixed = ParseListenAddress("unix:/run/devmgr/metrics.sock");
  ASSERT_TRUE(unix_prefixed.ok());
  EXPECT_EQ(unix_prefixed->kind, ListenAddress::Kind::kUnix);
  EXPECT_EQ(unix_prefixed->path, "/run/devmgr/metrics.sock");
  auto bare_path = ParseListenAddress("/tmp/m.sock");
  ASSERT_TRUE(bare_path.ok());
  EXPECT_EQ(bare_path->kind, ListenAddress::Kind::kUnix);

  struct Case {
    std::string address;
    std::string host;
    uint16_t port;
  };
  for (const Case& c : {Case{"10250", "127.0.0.1", 10250}, Case{":9100", "127.0.0.1", 9100},
                        Case{"0.0.0.0:80", "0.0.0.0", 80}, Case{"localhost:0", "localhost", 0},
                        Case{"[::1]:65535", "::1", 65535}}) {
    auto parsed = ParseListenAddress(c.address);
    ASSERT_TRUE(parsed.ok()) << c.address << ": " << parsed.status();
    EXPECT_EQ(parsed->kind, ListenAddress::Kind::kTcp) << c.address;
    EXPECT_EQ(parsed->host, c.host) << c.address;
    EXPECT_EQ(parsed->port, c.port) << c.address;
  }
}

TEST(ParseListenAddressTest, RejectsBadAddressesNamingThem) {
  for (const std::string& address : std::vector<std::string>{
           "", "unix:relative.sock", "unix:", "host:", "host:http", "65536", ":-1", "::1:80",
           "[::1]80", "[]:80", "unix:/" + std::string(200, 'x')}) {
    auto parsed = ParseListenAddress(address);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_TRUE(absl::StrContains(parsed.status().message(), "\"" + address + "\""))
        << parsed.status();
  }
}

// The metrics socket is served and scraped without gRPC, so a comma in its path is only a
// character (gRPC's unix resolver would split the path there).
TEST(MetricsHttpServerTest, ServesAndIsScrapedAtAPathWithAComma) {
  TempDir dir;
  const std::filesystem::path socket = dir.Sub("metrics,1.sock");
  auto server = StartOrDie({.address = "unix:" + socket.string()});
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::string> body = ScrapeMetrics(socket);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, kBody);
}

TEST(MetricsHttpServerTest, ServesMetricsOnUnixSocketWithMode0600AndRemovesIt) {
  TempDir dir;
  const std::filesystem::path socket = dir.Sub("metrics.sock");
  auto server = StartOrDie({.address = "unix:" + socket.string()});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->address(), "unix:" + socket.string());
  struct stat st {};
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Reply reply = Get(server->address());
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(reply.headers["Content-Length"], std::to_string(std::strlen(kBody)));
  EXPECT_EQ(reply.headers["Connection"], "close");
  EXPECT_EQ(reply.body, kBody);

  server->Stop();
  EXPECT_FALSE(std::filesystem::exists(socket));
  server->Stop();  // idempotent
}

TEST(MetricsHttpServerTest, BarePathTakesTheModeAskedForAndReplacesAStaleSocket) {
  TempDir dir;
  const std::filesystem::path socket = dir.Sub("m.sock");
  {
    auto first = StartOrDie({.address = socket.string()});
    ASSERT_NE(first, nullptr);
  }
  // A socket file left behind by a crash is replaced.
  const int stale = BindUnixSocket(socket);
  ASSERT_GE(stale, 0);
  ::close(stale);
  auto server = StartOrDie({.address = socket.string(), .socket_mode = 0660});
  ASSERT_NE(server, nullptr);
  struct stat st {};
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(Get(server->address()).body, kBody);
}

TEST(MetricsHttpServerTest, StopLeavesASocketSomeoneElseBoundAtThePath) {
  TempDir dir;
  const std::filesystem::path socket = dir.Sub("m.sock");
  auto server = StartOrDie({.address = socket.string()});
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(::unlink(socket.c_str()), 0);
  const int other = BindUnixSocket(socket);
  ASSERT_GE(other, 0);
  server->Stop();
  EXPECT_TRUE(std::filesystem::exists(socket));
  ::close(other);
}

TEST(MetricsHttpServerTest, ServesOverTcpOnAPortTheSystemPicks) {
  for (const char* address : {"127.0.0.1:0", ":0", "0"}) {
    auto server = StartOrDie({.address = address});
    ASSERT_NE(server, nullptr);
    ASSERT_TRUE(absl::StartsWith(server->address(), "127.0.0.1:")) << server->address();
    int port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(server->address().substr(10), &port)) << server->address();
    EXPECT_GT(port, 0);
    Reply reply = Get(server->address());
    EXPECT_EQ(reply.code, 200) << address;
    EXPECT_EQ(reply.body, kBody);
  }
}

TEST(MetricsHttpServerTest, AnswersOtherPathsMethodsAndMalformedRequests) {
  TempDir dir;
  auto server = StartOrDie({.address = "unix:" + dir.Sub("m.sock").string()});
  ASSERT_NE(server, nullptr);
  const std::string& address = server->address();

  EXPECT_EQ(Get(address, "/").code, 404);
  EXPECT_EQ(Get(address, "/metrics/extra").code, 404);
  // A query string does not change the path, nor does the absolute form.
  EXPECT_EQ(Get(address, "/metrics?name[]=x").body, kBody);
  EXPECT_EQ(Get(address, "http://localhost/metrics").body, kBody);
  // HTTP/1.0 is fine. Lines ending in a bare LF are not: Beast takes only CRLF, as RFC 9112
  // allows a server to.
  EXPECT_EQ(Request(address, "GET /metrics HTTP/1.0\r\n\r\n").body, kBody);
  EXPECT_EQ(Request(address, "GET /metrics HTTP/1.0\n\n").code, 400);

  Reply post = Request(address, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.code, 405);
  EXPECT_EQ(post.headers["Allow"], "GET, HEAD");

  Reply head = Request(address, "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.code, 200);
  EXPECT_EQ(head.headers["Content-Length"], std::to_string(std::strlen(kBody)));
  EXPECT_EQ(head.body, "");

  EXPECT_EQ(Request(address, "HELLO\r\n\r\n").code, 400);
  EXPECT_EQ(Request(address, "GET /metrics SPDY/3\r\n\r\n").code, 400);
  const std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(10000, 'a') + "\r\n\r\n";
  EXPECT_EQ(Request(address, huge).code, 431);
  // The server is still fine after all that.
  EXPECT_EQ(Get(address).body, kBody);
}

TEST(MetricsHttpServerTest, ServesHealthzAndReadyzAsTheKubelet) {
  TempDir dir;
  std::atomic<bool> ready{false};
  auto server = MetricsHttpServer::Start(
      {.address = "unix:" + dir.Sub("m.sock").string(),
       .ready =
           [&ready] {
             return ready ? absl::OkStatus() : absl::UnavailableError("the node is starting");
           }},
      [] { return std::string(kBody); });
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string& address = (*server)->address();

  Reply health = Get(address, "/healthz");
  EXPECT_EQ(health.code, 200);
  EXPECT_EQ(health.headers["Content-Type"], "text/plain; charset=utf-8");
  EXPECT_EQ(health.body, "ok");
  Reply not_ready = Get(address, "/readyz");
  EXPECT_EQ(not_ready.code, 500);
  EXPECT_EQ(not_ready.body, "readyz check failed: the node is starting\n");
  ready = true;
  Reply now_ready = Get(address, "/readyz");
  EXPECT_EQ(now_ready.code, 200);
  EXPECT_EQ(now_ready.body, "ok");

  Reply head = Request(address, "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.code, 200);
  EXPECT_EQ(head.headers["Content-Length"], "2");
  EXPECT_EQ(head.body, "");
  Reply post = Request(address, "POST /readyz HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.code, 405);
  EXPECT_EQ(post.headers["Allow"], "GET, HEAD");
  EXPECT_EQ(Get(address, "/livez").code, 404);
}

TEST(MetricsHttpServerTest, ReadyzWithoutACheckIsReadyWhileServing) {
  auto server = StartOrDie({.address = "127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(server->address(), "/readyz").code, 200);
  EXPECT_EQ(Get(server->address(), "/healthz").body, "ok");
}

TEST(MetricsHttpServerTest, SilentClientBlocksNeitherAScrapeNorPastItsTimeout) {
  TempDir dir;
  auto server = StartOrDie(
      {.address = "unix:" + dir.Sub("m.sock").string(), .connection_timeout = absl::Seconds(1)});
  ASSERT_NE(server, nullptr);
  const int silent = Connect(server->address());
  ASSERT_GE(silent, 0);
  // Served while the silent client is still connected, well within its timeout's reach.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Get(server->address()).body, kBody);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // And the silent one is closed once its time is up.
  EXPECT_EQ(ReadAll(silent), "");
  ::close(silent);
}

TEST(MetricsHttpServerTest, ScrapesWhileSilentClientsHoldManyConnections) {
  auto server = StartOrDie({.address = "127.0.0.1:0", .connection_timeout = absl::Seconds(60)});
  ASSERT_NE(server, nullptr);
  std::vector<int> silent(5);
  for (int& fd : silent) fd = Connect(server->address());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Get(server->address()).body, kBody);
  // Stop does not wait for them.
  server->Stop();
  for (const int fd : silent) {
    EXPECT_EQ(ReadAll(fd), "");
    ::close(fd);
  }
}

TEST(MetricsHttpServerTest, RendersTheBodyAtEachScrape) {
  std::atomic<int> scrapes{0};
  auto server = MetricsHttpServer::Start({.address = "127.0.0.1:0"},
                                         [&] { return absl::StrCat("scrape ", ++scrapes, "\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Get((*server)->address()).body, "scrape 1\n");
  EXPECT_EQ(Get((*server)->address()).body, "scrape 2\n");
}

TEST(MetricsHttpServerTest, ReportsWhyItCannotListen) {
  TempDir dir;
  auto bad = MetricsHttpServer::Start({.address = "unix:x.sock"}, [] { return std::string(); });
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);

  // Something that is not a socket is never removed.
  const std::filesystem::path file = dir.Sub("not-a-socket");
  std::ofstream(file) << "keep me";
  auto blocked = MetricsHttpServer::Start({.address = file.string()}, [] { return std::string(); });
  EXPECT_EQ(blocked.status().code(), absl::StatusCode::kFailedPrecondition) << blocked.status();
  EXPECT_TRUE(std::filesystem::exists(file));

  auto first = StartOrDie({.address = "127.0.0.1:0"});
  ASSERT_NE(first, nullptr);
  auto taken =
      MetricsHttpServer::Start({.address = first->address()}, [] { return std::string(); });
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable) << taken.status();
  EXPECT_TRUE(absl::StrContains(taken.status().message(), first->address())) << taken.status();

  auto missing_folder = MetricsHttpServer::Start(
      {.address = dir.Sub("no/such/folder.sock").string()}, [] { return std::string(); });
  EXPECT_EQ(missing_folder.status().code(), absl::StatusCode::kUnavailable)
      << missing_folder.status();
}

}  // namespace
}  // namespace devmgr
