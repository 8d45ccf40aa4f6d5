// `devmgr serve` speaks systemd's notify protocol itself: one datagram per message to the
// socket NOTIFY_SOCKET names (a file, or an abstract socket after "@"), and the watchdog only
// when WATCHDOG_USEC asks it of this process. The daemon's whole conversation with a socket
// file is ServeTest.TellsSystemdWhenItIsReadyAliveAndStopping.
#include "cmd/devmgr/service_notifier.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace devmgr::cli {
namespace {

// Environment: sets the variables for one test (before any thread starts) and clears them.
class ServiceNotifierTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) ::unsetenv(name);
  }
};

TEST_F(ServiceNotifierTest, SendsEachMessageToAnAbstractSocket) {
  const std::string name = absl::StrCat("devmgr-notify-test-", ::getpid());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  name.copy(address.sun_path + 1, name.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())),
            0);
  ::setenv("NOTIFY_SOCKET", absl::StrCat("@", name).c_str(), 1);

  const ServiceNotifier notifier;
  notifier.Ready("Serving");
  notifier.Watchdog();
  notifier.Stopping();
  std::vector<std::string> received;
  char buffer[256];
  for (int i = 0; i < 3; ++i) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    ASSERT_GT(n, 0) << "message " << i;
    received.emplace_back(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_EQ(received, (std::vector<std::string>{"READY=1\nSTATUS=Serving", "WATCHDOG=1",
                                                "STOPPING=1\nSTATUS=Stopping"}));
}

TEST_F(ServiceNotifierTest, WithoutASocketNothingIsSent) {
  const ServiceNotifier notifier;
  notifier.Ready("Serving");  // nowhere to send: no error, no crash
  ::setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
  const ServiceNotifier other_kind;
  other_kind.Ready("Serving");
  EXPECT_FALSE(notifier.WatchdogInterval().has_value());
}

TEST_F(ServiceNotifierTest, TheWatchdogIsHalfOfWhatSystemdAsksOfThisProcess) {
  ::setenv("WATCHDOG_USEC", "3000000", 1);
  EXPECT_EQ(ServiceNotifier().WatchdogInterval(), absl::Milliseconds(1500));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_EQ(ServiceNotifier().WatchdogInterval(), absl::Milliseconds(1500));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  EXPECT_FALSE(ServiceNotifier().WatchdogInterval().has_value()) << "asked of another process";
  ::unsetenv("WATCHDOG_PID");
  for (const char* bad : {"0", "-5", "soon"}) {
    ::setenv("WATCHDOG_USEC", bad, 1);
    EXPECT_FALSE(ServiceNotifier().WatchdogInterval().has_value()) << bad;
  }
}

}  // namespace
}  // namespace devmgr::cli
