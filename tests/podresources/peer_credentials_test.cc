// The PodResources listener's accept loop when the process runs out of descriptors: it backs
// off (as grpc-go's server does) instead of spinning on the queued connection, and accepts it
// once descriptors are free again.
#include "podresources/peer_credentials.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::podresources {
namespace {

using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

// The lines of `log` that contain `text`.
std::vector<std::string> LinesWith(const std::string& log, const std::string& text) {
  std::vector<std::string> found;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (line.find(text) != absl::string_view::npos) found.emplace_back(line);
  }
  return found;
}

TEST(CredentialsListenerTest, BacksOffWhileOutOfDescriptorsAndAcceptsOnceTheyAreFree) {
  TempDir dir;
  auto log = std::make_shared<std::ostringstream>();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*log);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  auto listener = CredentialsListener::Listen(dir.Sub("pr.sock"), logger);
  ASSERT_TRUE(listener.ok()) << listener.status();
  grpc::CallbackGenericService service;  // a server needs one service; no call is made
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*listener)->Start(*server);

  const int client = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = dir.Sub("pr.sock").string();
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  // Every descriptor below a lowered limit taken, so that the listener's accept fails.
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit lowered = before;
  lowered.rlim_cur = static_cast<rlim_t>(client) + 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  std::vector<int> fillers;
  for (int fd = ::dup(client); fd >= 0; fd = ::dup(client)) fillers.push_back(fd);
  const bool exhausted = errno == EMFILE;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API needs it.
  const int connected =
      ::connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const bool backed_off = exhausted && connected == 0 &&
                          WaitFor([&] { return LinesWith(log->str(), "retrying").size() >= 4; });
  for (int fd : fillers) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  ASSERT_TRUE(exhausted);
  ASSERT_EQ(connected, 0) << std::strerror(errno);
  ASSERT_TRUE(backed_off) << log->str();

  const std::vector<std::string> retries = LinesWith(log->str(), "retrying");
  EXPECT_NE(retries[0].find("retryIn=\"5ms\""), std::string::npos) << retries[0];
  EXPECT_NE(retries[1].find("retryIn=\"10ms\""), std::string::npos) << retries[1];
  EXPECT_NE(retries[2].find("retryIn=\"20ms\""), std::string::npos) << retries[2];
  EXPECT_NE(retries[0].find("Too many open files"), std::string::npos) << retries[0];

  // Accepted now: the server's HTTP/2 preface reaches the client.
  pollfd readable = {client, POLLIN, 0};
  EXPECT_EQ(::poll(&readable, 1, 10000), 1);
  ::close(client);
  (*listener)->Stop();
  server->Shutdown();
}

}  // namespace
}  // namespace devmgr::podresources
