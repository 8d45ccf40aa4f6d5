// Node::Start on a root another process serves: a kubelet takes no devmgr lock, so the node
// looks at the kubelet's two sockets before it owns anything there. A root where a process
// listens on either is refused, and the socket is left as it was; a socket its process left
// behind is taken over as before.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/file_id.h"
#include "common/unix_socket.h"
#include "node/node.h"
#include "node/process_settings.h"
#include "node/root_held.h"
#include "tests/testlib/listening_socket.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::ListeningSocket;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

absl::StatusOr<std::unique_ptr<Node>> StartOn(const std::filesystem::path& root) {
  NodeOptions options;
  options.root_dir = root;
  return Node::Start(options);
}

TEST(NodeStartTest, ARootWhoseKubeletSocketsAProcessServesIsRefused) {
  TempDir dir;
  const NodePaths paths(dir.Sub("root"));
  for (const std::filesystem::path& socket :
       {paths.plugin_dir / "kubelet.sock", paths.podresources_socket}) {
    SCOPED_TRACE(socket.string());
    ListeningSocket kubelet(socket);
    ASSERT_TRUE(kubelet.listening());
    const std::optional<FileId> before = StatId(socket);
    ASSERT_TRUE(before.has_value());
    absl::StatusOr<std::unique_ptr<Node>> node = StartOn(paths.root);
    ASSERT_EQ(node.status().code(), absl::StatusCode::kFailedPrecondition) << node.status();
    EXPECT_TRUE(IsRootHeld(node.status())) << node.status();
    EXPECT_NE(node.status().message().find(absl::StrCat("a process serves ", socket.string())),
              std::string::npos)
        << node.status();
    // Its socket is the one it bound, and it still accepts.
    EXPECT_EQ(StatId(socket), before);
    EXPECT_TRUE(SomeoneListens(socket));
    EXPECT_FALSE(std::filesystem::exists(paths.plugin_dir / "kubelet_internal_checkpoint"));
    std::filesystem::remove(socket);
  }
}

// A root whose sockets cannot be looked at for a fault of its own (a symlink loop where a folder
// must be) is refused, but not as held by another process: `devmgr serve` answers that as bad
// usage (2), not "no" (1). Before, every failed look was taken for a kubelet's socket.
TEST(NodeStartTest, ARootThatLoopsIsRefusedButNotAsHeld) {
  TempDir dir;
  const NodePaths paths(dir.Sub("root"));
  std::filesystem::create_directories(paths.root);
  std::filesystem::create_symlink(paths.plugin_dir, paths.plugin_dir);
  absl::StatusOr<std::unique_ptr<Node>> node = StartOn(paths.root);
  ASSERT_FALSE(node.ok());
  EXPECT_FALSE(IsRootHeld(node.status())) << node.status();
  EXPECT_NE(node.status().message().find("Too many levels of symbolic links"), std::string::npos)
      << node.status();
}

// A node without a name is refused before it touches its root: its name selects its
// ResourceSlices and the wipes of a driver's, which without one would reach every node's.
TEST(NodeStartTest, ANodeWithoutANameIsRefused) {
  TempDir dir;
  NodeOptions options;
  options.root_dir = dir.Sub("root");
  options.node_name = "";
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  EXPECT_EQ(node.status(), absl::InvalidArgumentError("the node's name is empty"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("root")));
}

// A metrics address that cannot be one is refused before the node touches its root. Before, the
// node started its device manager and PodResources server, then stopped them when the address
// came to be served (`devmgr serve --metrics-address x::1` logged both).
TEST(NodeStartTest, AMalformedMetricsAddressIsRefusedBeforeAnythingStarts) {
  TempDir dir;
  NodeOptions options;
  options.root_dir = dir.Sub("root");
  options.metrics_address = "bogus::x";
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  EXPECT_EQ(node.status(),
            absl::InvalidArgumentError("invalid metrics address \"bogus::x\": an IPv6 host goes "
                                       "in brackets: [host]:port"));
  EXPECT_FALSE(std::filesystem::exists(options.root_dir));
}

// Device classes the node cannot read, or would never read, are refused before the node touches
// its root. Before, a path with a typo started the node, and every claim it allocated was then
// refused for the missing file.
TEST(NodeStartTest, DeviceClassesItCannotUseAreRefusedBeforeAnythingStarts) {
  TempDir dir;
  const std::filesystem::path broken = dir.Sub("broken.yaml");
  std::ofstream(broken) << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n"
                           "  name: gpu\nspec:\n  selectors:\n  - cel:\n"
                           "      expression: 'device.driver =='\n";
  struct Case {
    std::string name;
    std::filesystem::path classes;
    bool cluster;
    std::string refusal;
  };
  for (const Case& c : {
           Case{"missing", dir.Sub("nowhere"), false,
                absl::StrCat("device classes ", dir.Sub("nowhere").string(),
                             ": No such file or directory")},
           Case{"undecodable", broken, false, absl::StrCat("device classes: ", broken.string())},
           Case{"with a cluster", dir.Sub("nowhere"), true,
                "device classes are read only by a node without a cluster"},
       }) {
    SCOPED_TRACE(c.name);
    NodeOptions options;
    options.root_dir = dir.Sub("root");
    options.device_classes = c.classes;
    if (c.cluster) options.cluster = kubeclient::RestConfig{};
    absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
    ASSERT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument) << node.status();
    EXPECT_EQ(node.status().message().rfind(c.refusal, 0), 0u) << node.status();
    EXPECT_FALSE(std::filesystem::exists(options.root_dir));
  }
  // A folder of valid classes starts.
  std::filesystem::create_directory(dir.Sub("classes"));
  std::ofstream(dir.Sub("classes") / "gpu.yaml")
      << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu\n";
  NodeOptions options;
  options.root_dir = dir.Sub("root");
  options.device_classes = dir.Sub("classes");
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  ASSERT_TRUE(node.ok()) << node.status();
}

// A root so deep that its sockets' paths are longer than a socket address holds is refused
// before the node touches it, with the reason. Before, the device manager refused it after
// the root held a lock file and a 4 MiB journal, saying the path was not absolute.
TEST(NodeStartTest, ARootTooDeepForItsSocketsIsRefusedBeforeItIsTouched) {
  TempDir dir;
  const std::filesystem::path root = dir.Sub(std::string(110, 'r'));
  absl::StatusOr<std::unique_ptr<Node>> node = StartOn(root);
  ASSERT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument) << node.status();
  EXPECT_NE(node.status().message().find("over the limit of 107"), std::string::npos)
      << node.status();
  EXPECT_FALSE(std::filesystem::exists(root));
}

TEST(NodeStartTest, SocketsLeftByAProcessThatIsGoneAreTakenOver) {
  TempDir dir;
  const NodePaths paths(dir.Sub("root"));
  for (const std::filesystem::path& socket :
       {paths.plugin_dir / "kubelet.sock", paths.podresources_socket}) {
    ListeningSocket gone(socket);
    ASSERT_TRUE(gone.listening());
  }
  absl::StatusOr<std::unique_ptr<Node>> node = StartOn(paths.root);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(SomeoneListens(paths.plugin_dir / "kubelet.sock"));
  EXPECT_TRUE(SomeoneListens(paths.podresources_socket));
}

// ReadUmask: the process's umask as the kernel reports it, read without changing it (umask(2)
// reads it only by setting it); nullopt if /proc does not say.
std::optional<mode_t> ReadUmask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Umask:", 0) == 0)
      return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  }
  return std::nullopt;
}

// A host embedding the node shares its umask with the node's start, and its other threads may
// be creating files meanwhile: the start leaves the umask alone, and the admin socket is still
// the daemon's user's alone whatever the umask (here none). Before, the start set the umask to
// 077 while the admin server bound its socket, and a file a host's thread created then lost
// its group and other bits. A thread reads the umask all through the start.
TEST(NodeStartTest, StartLeavesTheProcessUmaskAlone) {
  ASSERT_TRUE(ReadUmask().has_value()) << "/proc/self/status has no Umask line";
  TempDir dir;
  const NodePaths paths(dir.Sub("root"));
  const mode_t previous = ::umask(0);
  std::atomic<bool> started{false};
  std::atomic<int> reads{0};
  std::atomic<int> changed{0};
  std::thread reader([&] {
    while (!started) {
      if (ReadUmask().value_or(0) != 0) ++changed;
      ++reads;
    }
  });
  // The reader reads before the start begins, and all through it.
  const bool reading = WaitFor([&] { return reads.load() > 0; });
  absl::StatusOr<std::unique_ptr<Node>> node = StartOn(paths.root);
  started = true;
  reader.join();
  ::umask(previous);
  ASSERT_TRUE(reading);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(changed.load(), 0) << "the umask was changed in " << changed << " of " << reads
                               << " reads during the start";
  struct stat socket {};
  ASSERT_EQ(::lstat(paths.admin_socket.c_str(), &socket), 0);
  EXPECT_EQ(socket.st_mode & 07777, 0600u);
  EXPECT_TRUE(SomeoneListens(paths.admin_socket));
}

// What `devmgr serve` sets in its process before the node starts (node/process_settings.h).
// The soft limit on open files is raised to the hard one (in a child: it changes the process).
// Before, the daemon kept systemd's 1,024, which one client holding connections could use up.
TEST(ProcessSettingsTest, TheOpenFileLimitIsRaisedToTheHardOne) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max <= 256) GTEST_SKIP() << "the hard limit leaves nothing to raise";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit low = before;
    low.rlim_cur = 256;
    if (::setrlimit(RLIMIT_NOFILE, &low) != 0) ::_exit(2);
    RaiseOpenFileLimit();
    rlimit after{};
    if (::getrlimit(RLIMIT_NOFILE, &after) != 0) ::_exit(3);
    ::_exit(after.rlim_cur == before.rlim_max ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not raised to the hard limit; 2, 3: a call failed";
}

}  // namespace
}  // namespace devmgr::node
