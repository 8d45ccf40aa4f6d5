// The modes of the daemon's sockets and files (as a kubelet's or stricter, docs/RELIABILITY.md),
// and symlinks planted in its folders before it starts, pointing out of its root: the daemon
// cleans sockets and writes files without ever following one, so their targets stay untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/daemon_harness.h"
#include "tests/testlib/scoped_umask.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::PodManifest;
using testing::ScopedUmask;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "example.com/gpu";

// Mode: the permission bits of `path` itself (not of a symlink's target), -1 if missing.
int Mode(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return -1;
  return static_cast<int>(info.st_mode & 07777);
}

TEST(ModesTest, SocketsAndFilesAreTheKubeletsOrStricter) {
  // A kubelet runs with umask 022; with it, what the daemon leaves to the umask is a kubelet's.
  ScopedUmask umask(022);
  DaemonHarness h;
  auto serve = h.StartServe({"--metrics-address", "unix:" + h.Path("metrics.sock").string()});
  ASSERT_NE(serve, nullptr);
  auto plugin = h.StartPlugin(kGpu, 2);
  ASSERT_TRUE(WaitFor([&] { return h.Allocatable(kGpu) == 2; }, 20s)) << plugin->err();
  ASSERT_EQ(h.Admit(PodManifest("p", kGpu, 1)).exit_code, 0);

  EXPECT_EQ(Mode(h.Path("device-plugins")), 0750);
  EXPECT_EQ(Mode(h.Path("plugins_registry")), 0750);
  EXPECT_EQ(Mode(h.Path("pod-resources")), 0750);
  EXPECT_EQ(Mode(h.CheckpointPath()), 0600);
  EXPECT_EQ(Mode(h.Path("device-plugins/devmgr_admitted_pods")), 0600);
  EXPECT_EQ(Mode(h.Path("devmgr_state_journal")), 0600);
  EXPECT_EQ(Mode(h.Path("devmgr.sock")), 0600);
  EXPECT_EQ(Mode(h.Path("devmgr.lock")), 0600);
  EXPECT_EQ(Mode(h.Path("metrics.sock")), 0600);
  // As a kubelet's: only its owner may connect (connect(2) needs write permission), and the
  // service only reads.
  EXPECT_EQ(Mode(h.Path("pod-resources/kubelet.sock")), 0755);
  DaemonHarness::Stop(*serve);
  DaemonHarness::Stop(*plugin);
}

// ExpectTargetsUntouched: every file under `outside` is one of `targets`, with its content and
// mode.
void ExpectTargetsUntouched(const std::filesystem::path& outside,
                            const std::map<std::filesystem::path, std::string>& targets) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(outside)) {
    if (!entry.is_directory()) ++files;
  }
  EXPECT_EQ(files, targets.size()) << "nothing created or removed outside the root";
  for (const auto& [target, content] : targets) {
    EXPECT_EQ(Mode(target), 0644) << target << " (its mode changed, or it is gone)";
    std::ifstream in(target);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, content) << target;
  }
}

TEST(ModesTest, SymlinksOutOfTheRootAreNeverFollowed) {
  ScopedUmask umask(022);
  DaemonHarness h;
  TempDir outside;
  std::filesystem::create_directory(outside.Sub("folder"));
  std::ofstream(outside.Sub("folder/kept")) << "kept";
  std::map<std::filesystem::path, std::string> targets = {{outside.Sub("folder/kept"), "kept"}};
  std::filesystem::create_directory(h.Path("device-plugins"));
  std::filesystem::create_directory(h.Path("pod-resources"));
  std::filesystem::create_directory(h.Path("plugins_registry"));
  std::filesystem::create_directory_symlink(outside.Sub("folder"), h.Path("device-plugins/dir"));
  auto plant = [&](const std::string& name) {
    const std::filesystem::path target = outside.Sub("victim" + std::to_string(targets.size()));
    targets[target] = "victim of " + name;
    std::ofstream(target) << targets[target];
    std::filesystem::create_symlink(target, h.Path(name));
  };
  // The daemon may not remove these (its journal, its own sockets, its record): a symlink there
  // is not what it left behind, so it refuses to start and says which. The journal first: a
  // start refused later has created it.
  const std::vector<std::string> refused = {
      "devmgr_state_journal", "devmgr.sock", "pod-resources/kubelet.sock",
      "device-plugins/kubelet.sock", "device-plugins/devmgr_admitted_pods"};
  // These it cleans or replaces while serving: stale sockets, and the checkpoint it rewrites.
  for (const std::string name : {"device-plugins/stale.sock", "plugins_registry/stale.sock",
                                 "device-plugins/kubelet_internal_checkpoint"}) {
    plant(name);
  }
  for (const auto& name : refused) {
    plant(name);
    BackgroundProcess serve({testing::DevmgrBinary(), "serve", "--root-dir", h.Root()});
    const std::optional<int> code = serve.Wait(20s);
    EXPECT_TRUE(code.has_value() && *code != 0) << name << " did not stop the daemon";
    EXPECT_NE(serve.err().find(h.Path(name).string()), std::string::npos)
        << "the error names " << name << ": " << serve.err();
    std::filesystem::remove(h.Path(name));
  }

  auto serve = h.StartServe();
  ASSERT_NE(serve, nullptr);
  auto plugin = h.StartPlugin(kGpu, 2);
  ASSERT_TRUE(WaitFor([&] { return h.Allocatable(kGpu) == 2; }, 20s)) << plugin->err();
  ASSERT_EQ(h.Admit(PodManifest("p", kGpu, 1)).exit_code, 0);
  ASSERT_EQ(h.Remove("p").exit_code, 0);
  DaemonHarness::Stop(*plugin);
  DaemonHarness::Stop(*serve);
  EXPECT_FALSE(std::filesystem::is_symlink(h.CheckpointPath())) << "replaced, not written through";
  ExpectTargetsUntouched(outside.path(), targets);
}

}  // namespace
}  // namespace devmgr
