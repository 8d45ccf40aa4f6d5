// The PodResources listener's accept loop when the process runs out of descriptors: it backs
// off (as grpc-go's server does) instead of spinning on the queued connection, and accepts it
// once descriptors are free again.
#include "podresources/peer_credentials.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::podresources {
namespace {

using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

// The lines `sink` holds that contain `text`; safe while the logger writes to it.
std::vector<std::string> LinesWith(spdlog::sinks::ringbuffer_sink_mt& sink,
                                   const std::string& text) {
  std::vector<std::string> found;
  for (std::string& line : sink.last_formatted()) {
    if (line.find(text) != std::string::npos) found.push_back(std::move(line));
  }
  return found;
}

TEST(CredentialsListenerTest, BacksOffWhileOutOfDescriptorsAndAcceptsOnceTheyAreFree) {
  TempDir dir;
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1024);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  auto listener = CredentialsListener::Listen(dir.Sub("pr.sock"), logger);
  ASSERT_TRUE(listener.ok()) << listener.status();
  grpc::CallbackGenericService service;  // a server needs one service; no call is made
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*listener)->Start(*server);
  // Before the server goes, on every path: a connection still queued when an assertion ends the
  // test would otherwise be handed to a server being destroyed.
  absl::Cleanup stop_listener = [&] { (*listener)->Stop(); };

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = dir.Sub("pr.sock").string();
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  // UBSan checks the dynamic type of an object the first time a call on it is seen, with a
  // pipe it cannot open while descriptors run out: the calls made then (a line logged and
  // read back, the accept loop's thread starting, a connection accepted) are made once first.
  DEVMGR_LOG(logger, err, "Accept failed, warming up", "server", std::string("PodResources"), "err",
             absl::OkStatus(), "retryIn", absl::FormatDuration(absl::Milliseconds(1)));
  ASSERT_EQ(LinesWith(*sink, "warming up").size(), 1u);
  // Kept open until the end: closed, the server would close its side at a moment of its own,
  // freeing a descriptor while they are meant to be out.
  const int early = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(early, 0);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API needs it.
  ASSERT_EQ(::connect(early, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  pollfd accepted = {early, POLLIN, 0};
  EXPECT_EQ(::poll(&accepted, 1, 10000), 1) << "the accept loop runs";

  // Every descriptor below a lowered limit taken, so that the listener's accept fails. Other
  // threads of this process (gRPC's) may close a descriptor of theirs meanwhile: the slots they
  // free are taken again while the test waits, and an attempt whose connection was accepted
  // through such a slot before any retry is made again, up to three times.
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  // Each attempt's client stays open until the end: closed, its accepted connection would be
  // closed by the server at a moment of its own, freeing a descriptor in a later attempt.
  std::vector<int> clients;
  absl::Cleanup close_clients = [&] {
    for (int fd : clients) ::close(fd);
  };
  std::vector<std::string> retries;
  std::chrono::steady_clock::duration backed_off_for{};
  for (int attempt = 0; attempt < 3 && retries.size() < 4; ++attempt) {
    const int client = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(client, 0);
    clients.push_back(client);
    const size_t earlier = LinesWith(*sink, "retrying").size();
    rlimit lowered = before;
    lowered.rlim_cur = static_cast<rlim_t>(client) + 64;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
    std::vector<int> fillers;
    const auto take_free_slots = [&] {
      for (int fd = ::dup(client); fd >= 0; fd = ::dup(client)) fillers.push_back(fd);
      return errno == EMFILE;
    };
    const bool exhausted = take_free_slots();
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API needs it.
    const int connected =
        ::connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    const auto connected_at = std::chrono::steady_clock::now();
    pollfd readable = {client, POLLIN, 0};
    const bool settled =
        exhausted && connected == 0 && WaitFor([&] {
          take_free_slots();
          retries = LinesWith(*sink, "retrying");
          retries.erase(retries.begin(), retries.begin() + static_cast<std::ptrdiff_t>(
                                                               std::min(earlier, retries.size())));
          return retries.size() >= 4 || ::poll(&readable, 1, 0) == 1;
        });
    backed_off_for = std::chrono::steady_clock::now() - connected_at;
    for (int fd : fillers) ::close(fd);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
    ASSERT_TRUE(exhausted);
    ASSERT_EQ(connected, 0) << std::strerror(errno);
    ASSERT_TRUE(settled) << "neither retried nor accepted";
  }
  ASSERT_GE(retries.size(), 4u) << "each attempt's connection was accepted without a retry";
  EXPECT_NE(retries[0].find("retryIn=\"5ms\""), std::string::npos) << retries[0];
  EXPECT_NE(retries[1].find("retryIn=\"10ms\""), std::string::npos) << retries[1];
  EXPECT_NE(retries[2].find("retryIn=\"20ms\""), std::string::npos) << retries[2];
  EXPECT_NE(retries[0].find("Too many open files"), std::string::npos) << retries[0];
  // The waits were made, not only logged: the fourth try comes after 5 + 10 + 20 ms of them
  // (a bound from below, which no slowness of the machine can break).
  EXPECT_GE(backed_off_for, std::chrono::milliseconds(35));

  // Accepted now: the server's HTTP/2 preface reaches the client.
  pollfd readable = {clients.back(), POLLIN, 0};
  EXPECT_EQ(::poll(&readable, 1, 10000), 1);
  ::close(early);
}

}  // namespace
}  // namespace devmgr::podresources
