// Faults injected into a running `devmgr serve` (issue 9), each from outside, as they happen on
// a node: plugins killed with SIGKILL in the middle of Allocate, GetPreferredAllocation and
// ListAndWatch, a hung plugin, a plugin socket deleted under its plugin, a registration storm,
// the daemon itself killed at random points of a stream of admissions (DEVMGR_FAULT_KILLS
// times, default 10), a checkpoint that cannot be written, whose disk is full or that is
// replaced by garbage, and PodResources clients that never read or come 500 at once. The
// promise under test: the daemon keeps serving, never hands a device out twice, and never
// loses an admission it reported as done.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::PodManifest;
using testing::ProcessResult;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "example.com/gpu";
constexpr char kNic[] = "example.com/nic";
// Logged by the daemon (debug) just before it calls a plugin's Allocate, and its
// GetPreferredAllocation.
constexpr char kAllocateCalled[] = "Making allocation request for device plugin";
constexpr char kPreferredCalled[] = "Asking device plugin for a preferred allocation";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// WriteFile puts `bytes` in place as a crash may leave a file: not through the daemon, and
// older than anything the daemon wrote since (a rename lost in a power cut leaves the file that
// was there).
void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) - 1h);
}

class FaultsTest : public ::testing::Test {
 protected:
  // StartServing starts the daemon (debug log, no admission wait unless `extra` sets one) and a
  // healthy plugin of `kGpu` with `gpus` devices, and waits until they are connected.
  void StartServing(std::vector<std::string> extra = {}, int gpus = 4) {
    if (std::find(extra.begin(), extra.end(), "--admission-wait") == extra.end()) {
      extra.insert(extra.end(), {"--admission-wait", "0s"});
    }
    extra.insert(extra.end(), {"--log-level", "debug"});
    serve_flags_ = extra;
    serve_ = h_.StartServe(serve_flags_);
    ASSERT_NE(serve_, nullptr);
    gpu_plugin_ = h_.StartPlugin(kGpu, gpus);
    ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == gpus; }, 20s)) << gpu_plugin_->err();
  }

  std::unique_ptr<BackgroundProcess> StartNicPlugin(const std::vector<std::string>& extra) {
    auto plugin = h_.StartPlugin(kNic, 2, extra);
    EXPECT_TRUE(WaitFor([&] { return h_.Allocatable(kNic) == 2; }, 20s)) << plugin->err();
    return plugin;
  }

  // ExpectServingGpuPods: the daemon still admits and removes a pod of the healthy resource.
  void ExpectServingGpuPods(const std::string& uid) {
    ProcessResult admitted = h_.Admit(PodManifest(uid, kGpu, 1));
    EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
    EXPECT_EQ(h_.PodDevices()[uid].size(), 1u);
    EXPECT_EQ(h_.Remove(uid).exit_code, 0);
  }

  // ExpectNothingHeldBy: `uid` is neither listed nor in the checkpoint.
  void ExpectNothingHeldBy(const std::string& uid) {
    EXPECT_EQ(h_.PodDevices().count(uid), 0u) << uid << " is listed";
    std::ifstream in(h_.CheckpointPath());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find(uid), std::string::npos) << uid << " is in the checkpoint: " << text;
  }

  // ExpectReleasedAtRestart: after a restart, the checkpoint verifies, `cut` (a pod recorded in
  // flight) holds nothing and is not in the checkpoint, and `kept` is the only pod, not
  // recovered.
  void ExpectReleasedAtRestart(const std::string& cut, const std::string& kept) {
    ASSERT_EQ(h_.VerifyCheckpoint(), "");
    ExpectNothingHeldBy(cut);
    const nlohmann::json pods = h_.ListPods().value("pods", nlohmann::json::array());
    ASSERT_EQ(pods.size(), 1u) << pods.dump();
    EXPECT_EQ(pods[0]["pod"].value("uid", ""), kept);
    EXPECT_FALSE(pods[0].value("recovered", false));
  }

  // ExpectAdmissionRefusedWhenKilledDuring admits a one-device pod of `nic`'s resource, kills
  // `nic` with SIGKILL once the daemon logs `called`, and expects the admission refused with
  // `reason` in its error, nothing held, and the other resource still served.
  void ExpectAdmissionRefusedWhenKilledDuring(BackgroundProcess& nic, const char* called,
                                              const std::string& reason) {
    auto admission =
        std::async(std::launch::async, [&] { return h_.Admit(PodManifest("victim", kNic, 1)); });
    ASSERT_TRUE(WaitFor([&] { return serve_->err().find(called) != std::string::npos; }));
    nic.Signal(SIGKILL);
    ASSERT_EQ(admission.wait_for(20s), std::future_status::ready) << "admission still waits";
    ProcessResult refused = admission.get();
    // Refused (1): the plugin's UNAVAILABLE is the daemon's answer, not an unreachable daemon.
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_NE(refused.err.find(reason), std::string::npos) << refused.err;
    ExpectNothingHeldBy("victim");
    ExpectServingGpuPods("after");
    EXPECT_EQ(h_.Allocatable(kGpu), 4);
  }

  // ExpectRepairedWriteKeepsEveryPod: once the checkpoint can be written again, the next
  // admission ("later") writes it with every pod kept ("kept") and none refused ("refused").
  void ExpectRepairedWriteKeepsEveryPod() {
    ProcessResult admitted = h_.Admit(PodManifest("later", kGpu, 1));
    EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
    ExpectNothingHeldBy("refused");
    std::ifstream in(h_.CheckpointPath());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("kept"), std::string::npos) << text;
    EXPECT_NE(text.find("later"), std::string::npos) << text;
  }

  // MakeCheckpointUnwritable makes the checkpoint's writes fail: its folder read-only, or, where
  // that does not bind (root), a folder where the checkpoint goes. Returns which, for
  // MakeCheckpointWritable.
  bool MakeCheckpointUnwritable() {
    const std::filesystem::path folder = h_.Path("device-plugins");
    std::filesystem::permissions(folder, std::filesystem::perms(0500));
    const bool chmod_binds = ::access(folder.c_str(), W_OK) != 0;
    if (!chmod_binds) {
      std::filesystem::permissions(folder, std::filesystem::perms(0750));
      std::filesystem::remove(h_.CheckpointPath());
      std::filesystem::create_directory(h_.CheckpointPath());
    }
    return chmod_binds;
  }
  void MakeCheckpointWritable(bool chmod_binds) {
    if (chmod_binds) {
      std::filesystem::permissions(h_.Path("device-plugins"), std::filesystem::perms(0750));
    } else {
      std::filesystem::remove(h_.CheckpointPath());
    }
  }

  void TearDown() override {
    if (serve_ != nullptr) {
      EXPECT_TRUE(h_.VerifyCheckpoint().empty()) << h_.VerifyCheckpoint();
      DaemonHarness::Stop(*serve_);
    }
  }

  DaemonHarness h_;
  std::vector<std::string> serve_flags_;
  std::unique_ptr<BackgroundProcess> serve_;
  std::unique_ptr<BackgroundProcess> gpu_plugin_;
};

TEST_F(FaultsTest, PluginKilledDuringAllocateFailsTheAdmissionCleanly) {
  StartServing();
  auto nic = StartNicPlugin({"--allocate-hang"});
  ExpectAdmissionRefusedWhenKilledDuring(*nic, kAllocateCalled, "AdmitPod failed");
}

TEST_F(FaultsTest, PluginKilledDuringGetPreferredAllocationFailsTheAdmissionCleanly) {
  StartServing();
  // The pod asks for one of two devices: a choice, so the daemon asks for the preference.
  auto nic = StartNicPlugin({"--preferred", "first", "--preferred-hang"});
  ExpectAdmissionRefusedWhenKilledDuring(*nic, kPreferredCalled, "GetPreferredAllocation");
}

TEST_F(FaultsTest, PluginKilledMidListAndWatchLeavesOtherResourcesServing) {
  StartServing();
  // Health flips keep its ListAndWatch stream busy when it dies.
  auto nic = StartNicPlugin({"--flip-every", "5ms"});
  nic->Signal(SIGKILL);
  ASSERT_TRUE(nic->Wait(10s).has_value());
  ProcessResult refused = h_.Admit(PodManifest("victim", kNic, 1));
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  ExpectNothingHeldBy("victim");
  ExpectServingGpuPods("after");
}

TEST_F(FaultsTest, HungPluginHitsTheDeadlineWhileOtherPodsAreAdmitted) {
  StartServing({"--plugin-call-timeout", "1s"});
  auto nic = StartNicPlugin({"--allocate-hang"});
  const auto started = std::chrono::steady_clock::now();
  auto hung =
      std::async(std::launch::async, [&] { return h_.Admit(PodManifest("hung", kNic, 1)); });
  ASSERT_TRUE(WaitFor([&] { return serve_->err().find(kAllocateCalled) != std::string::npos; }));
  // While the hung Allocate waits for its deadline, pods of the other resource get through.
  ProcessResult other = h_.Admit(PodManifest("other", kGpu, 2));
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(hung.wait_for(0ms), std::future_status::timeout)
      << "the hung admission ended before the other one: no deadline was tested";
  ASSERT_EQ(hung.wait_for(20s), std::future_status::ready);
  ProcessResult refused = hung.get();
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("eadline"), std::string::npos) << refused.err;
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s);
  ExpectNothingHeldBy("hung");
  EXPECT_EQ(h_.PodDevices()["other"].size(), 2u);
}

// SIGTERM while an admission waits for its plugin to come back (--admission-wait): the daemon
// refuses it and stops at once. Before, the admin server's shutdown, which waits for its calls,
// came before the device manager learnt of the stop, and the stop waited out the whole wait.
TEST_F(FaultsTest, SigtermEndsAnAdmissionsWaitForItsPlugin) {
  StartServing({"--admission-wait", "5m"});
  gpu_plugin_->Signal(SIGKILL);
  ASSERT_TRUE(gpu_plugin_->Wait(10s).has_value());
  ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 0; }, 20s));
  auto waiting =
      std::async(std::launch::async, [&] { return h_.Admit(PodManifest("waiting", kGpu, 1)); });
  ASSERT_TRUE(WaitFor([&] {
    return serve_->err().find("Waiting for device plugin to come back") != std::string::npos;
  }));
  serve_->Signal(SIGTERM);
  const std::optional<int> code = serve_->Wait(20s);
  EXPECT_EQ(code, std::optional<int>(0)) << "the daemon still waits: " << serve_->err();
  ASSERT_EQ(waiting.wait_for(20s), std::future_status::ready);
  ProcessResult refused = waiting.get();
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("the device manager is stopping"), std::string::npos) << refused.err;
}

// A plugin's error text reaches the user's terminal shown, not obeyed: an escape sequence in it
// is printed escaped. Before, the refusal wrote it raw to stderr.
TEST_F(FaultsTest, APluginsErrorTextIsShownEscaped) {
  StartServing();
  auto nic = StartNicPlugin({"--allocate-error", "bad\x1b[2Jnews"});
  ProcessResult refused = h_.Admit(PodManifest("victim", kNic, 1));
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_EQ(refused.err.find('\x1b'), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("bad\\x1b[2Jnews"), std::string::npos) << refused.err;
  ExpectNothingHeldBy("victim");
}

TEST_F(FaultsTest, PluginSocketDeletedUnderItIsServedAgain) {
  StartServing();
  const std::filesystem::path socket = h_.PluginSocket(kGpu);
  ASSERT_TRUE(std::filesystem::remove(socket));
  // The plugin notices at its next check, binds a fresh socket and registers again. (Only the
  // plugin can have made the file that appears: the inode number may be the old one's, reused.)
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(socket); }));
  ASSERT_TRUE(WaitFor([&] { return h_.Admit(PodManifest("again", kGpu, 1)).exit_code == 0; }));
  EXPECT_EQ(h_.Allocatable(kGpu), 4) << "one endpoint's devices, not two";
  EXPECT_EQ(h_.PodDevices()["again"].size(), 1u);
}

// The storm is sent all at once: 100 Register calls in flight together, so that it is a storm
// however fast the daemon answers (a timed bound on sequential calls failed under ASan).
TEST_F(FaultsTest, HundredRegistrationsInASecondEndWithOneEndpoint) {
  StartServing();
  auto registration = v1beta1::Registration::NewStub(grpc::CreateChannel(
      UnixTarget(h_.Path("device-plugins/kubelet.sock")), grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(h_.PluginSocket(kGpu).filename().string());
  request.set_resource_name(kGpu);
  constexpr int kCalls = 100;
  std::vector<grpc::ClientContext> contexts(kCalls);
  std::vector<v1beta1::Empty> replies(kCalls);
  std::mutex mu;
  int answered = 0;
  int accepted = 0;
  std::string refusal;
  for (int i = 0; i < kCalls; ++i) {
    contexts[i].set_deadline(std::chrono::system_clock::now() + 30s);
    registration->async()->Register(&contexts[i], &request, &replies[i], [&](grpc::Status status) {
      std::lock_guard<std::mutex> lock(mu);
      ++answered;
      if (status.ok()) {
        ++accepted;  // the newest replaces the endpoint
      } else {
        refusal = status.error_message();
      }
    });
  }
  // Every call ends by its deadline, so this wait is bounded too.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return answered == kCalls;
      },
      60s));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(accepted, kCalls) << refusal;
  }
  // However many replaced the endpoint, one serves, once.
  ASSERT_TRUE(WaitFor([&] { return h_.Admit(PodManifest("storm", kGpu, 1)).exit_code == 0; }));
  EXPECT_EQ(h_.Allocatable(kGpu), 4);
  ExpectServingGpuPods("after");
}

// The checkpoint cannot be written: its folder made read-only where that binds the daemon
// (not as root, which writes anyway), else a folder put where the file goes, so the rename
// that replaces it fails. Either way the admission is refused and rolled back.
TEST_F(FaultsTest, UnwritableCheckpointRefusesAndRollsBack) {
  StartServing();
  ASSERT_EQ(h_.Admit(PodManifest("kept", kGpu, 1)).exit_code, 0);
  const bool chmod_binds = MakeCheckpointUnwritable();
  ProcessResult refused = h_.Admit(PodManifest("refused", kGpu, 1));
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find(h_.CheckpointPath().string()), std::string::npos)
      << "the error names the checkpoint: " << refused.err;
  EXPECT_EQ(h_.PodDevices().count("refused"), 0u);
  EXPECT_EQ(h_.PodDevices()["kept"].size(), 1u);
  // Its release could not be written either: admitted again under its UID, the release is
  // tried again first, and the admission is refused while it fails.
  ProcessResult unreleased = h_.Admit(PodManifest("refused", kGpu, 1));
  EXPECT_EQ(unreleased.exit_code, 1) << unreleased.out;
  EXPECT_NE(unreleased.err.find("the devices of its earlier admission could not be released"),
            std::string::npos)
      << unreleased.err;

  MakeCheckpointWritable(chmod_binds);
  ExpectRepairedWriteKeepsEveryPod();
  // The refused pod's release failed with the write: admitted again, its release is made
  // durable first (PodRegistry::IsLeaving), and the admission goes on.
  ProcessResult again = h_.Admit(PodManifest("refused", kGpu, 1));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(h_.PodDevices()["refused"].size(), 1u);
}

// A removal whose checkpoint write fails has freed the pod's devices in memory: the pod cannot
// stay admitted beside them (the next admission may take them). It is gone, the error says its
// release is not durable yet, and the release is made durable by the next write; admitted again
// under its UID, its release is made durable first.
TEST_F(FaultsTest, ARemovalWhoseWriteFailsRemovesThePodAndReleasesItsDevicesLater) {
  StartServing();
  ASSERT_EQ(h_.Admit(PodManifest("kept", kGpu, 1)).exit_code, 0);
  ASSERT_EQ(h_.Admit(PodManifest("refused", kGpu, 1)).exit_code, 0);
  const bool chmod_binds = MakeCheckpointUnwritable();
  ProcessResult removed = h_.Remove("refused");
  EXPECT_EQ(removed.exit_code, 1) << removed.out;
  EXPECT_NE(removed.err.find("removed, but the release of its devices is not durable yet"),
            std::string::npos)
      << removed.err;
  EXPECT_EQ(h_.PodDevices().count("refused"), 0u) << "not listed beside devices it lost";

  MakeCheckpointWritable(chmod_binds);
  ExpectRepairedWriteKeepsEveryPod();
  ProcessResult again = h_.Admit(PodManifest("refused", kGpu, 1));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(h_.PodDevices()["refused"].size(), 1u);
}

// TmpfsMount: a small tmpfs mounted over a folder, detached at the end. Mounting needs
// CAP_SYS_ADMIN (root in the machine's own namespace); without it, mounted() is false.
class TmpfsMount {
 public:
  TmpfsMount(const std::filesystem::path& at, const std::string& size) : at_(at) {
    std::filesystem::create_directories(at_);
    const std::string options = "size=" + size + ",mode=0750";
    mounted_ =
        ::mount("devmgr-test", at_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0;
    error_ = std::strerror(errno);
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::filesystem::path at_;
  bool mounted_ = false;
  std::string error_;
};

// FillUp writes `path` until its file system has no space left; true when it got there.
bool FillUp(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string block(4096, 'x');
  bool full = false;
  for (int i = 0; i < (1 << 20) && !full; ++i) {
    full = ::write(fd, block.data(), block.size()) < 0 && errno == ENOSPC;
  }
  ::close(fd);
  return full;
}

// The checkpoint's disk is full: a small tmpfs under device-plugins/, filled up after one
// admission. The next admission cannot make its allocation durable, so it is refused and rolled
// back; once there is room again the daemon writes every pod it kept.
TEST_F(FaultsTest, FullDiskRefusesAndRollsBack) {
  TmpfsMount disk(h_.Path("device-plugins"), "256k");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.error();
  StartServing();
  ASSERT_EQ(h_.Admit(PodManifest("kept", kGpu, 1)).exit_code, 0);
  const std::filesystem::path filler = h_.Path("device-plugins/filler");
  ASSERT_TRUE(FillUp(filler));

  ProcessResult refused = h_.Admit(PodManifest("refused", kGpu, 1));
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find(std::strerror(ENOSPC)), std::string::npos)
      << "the error says why: " << refused.err;
  EXPECT_EQ(h_.PodDevices().count("refused"), 0u);
  EXPECT_EQ(h_.PodDevices()["kept"].size(), 1u);
  EXPECT_TRUE(h_.VerifyCheckpoint().empty()) << "the last good checkpoint stays";

  std::filesystem::remove(filler);
  ExpectRepairedWriteKeepsEveryPod();
  // Stopped before the tmpfs goes away, so that the daemon's last write lands on it.
  EXPECT_TRUE(h_.VerifyCheckpoint().empty()) << h_.VerifyCheckpoint();
  DaemonHarness::Stop(*serve_);
  serve_.reset();
}

TEST_F(FaultsTest, GarbageCheckpointIsReplacedByTheNextWrite) {
  StartServing();
  ASSERT_EQ(h_.Admit(PodManifest("first", kGpu, 1)).exit_code, 0);
  std::ofstream(h_.CheckpointPath(), std::ios::trunc) << "\x7f garbage {\"Data\":";
  ASSERT_FALSE(h_.VerifyCheckpoint().empty());
  EXPECT_EQ(h_.PodDevices()["first"].size(), 1u) << "the daemon keeps its state in memory";
  ProcessResult admitted = h_.Admit(PodManifest("second", kGpu, 1));
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(h_.VerifyCheckpoint().empty()) << h_.VerifyCheckpoint();
  std::ifstream in(h_.CheckpointPath());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("first"), std::string::npos) << text;
  EXPECT_NE(text.find("second"), std::string::npos) << text;
  EXPECT_FALSE(serve_->Wait(0ms).has_value()) << serve_->err();
}

// A checkpoint that does not verify at a restart loses its allocations (as a kubelet's does) but
// not the pods: those recorded admitted stay listed, holding nothing, until they are removed.
TEST_F(FaultsTest, GarbageCheckpointAtARestartKeepsThePodsListed) {
  StartServing();
  ASSERT_EQ(h_.Admit(PodManifest("first", kGpu, 1)).exit_code, 0);
  DaemonHarness::Stop(*serve_);
  serve_.reset();
  WriteFile(h_.CheckpointPath(), "\x7f garbage {\"Data\":");
  serve_ = h_.StartServe(serve_flags_);
  ASSERT_NE(serve_, nullptr);
  for (int start = 0; start < 2; ++start) {
    const nlohmann::json pods = h_.ListPods().value("pods", nlohmann::json::array());
    ASSERT_EQ(pods.size(), 1u) << pods.dump() << serve_->err();
    EXPECT_EQ(pods[0]["pod"].value("uid", ""), "first");
    EXPECT_TRUE(h_.PodDevices()["first"].empty());
    // And at the start after, beside a checkpoint that verifies.
    DaemonHarness::Stop(*serve_);
    serve_ = h_.StartServe(serve_flags_);
    ASSERT_NE(serve_, nullptr);
  }
  EXPECT_EQ(h_.Remove("first").exit_code, 0);
}

// ConnectAndNeverRead opens a raw connection to `socket` that sends nothing and reads nothing.
int ConnectAndNeverRead(const std::filesystem::path& socket) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socket.string().copy(address.sun_path, sizeof(address.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(FaultsTest, PodResourcesClientsThatNeverReadAndFiveHundredAtOnce) {
  StartServing({"--podresources-qps", "100000", "--podresources-burst", "100000"});
  ASSERT_EQ(h_.Admit(PodManifest("listed", kGpu, 1)).exit_code, 0);
  const std::filesystem::path socket = h_.Path("pod-resources/kubelet.sock");
  std::vector<int> silent;
  for (int i = 0; i < 100; ++i) {
    const int fd = ConnectAndNeverRead(socket);
    ASSERT_GE(fd, 0) << "connection " << i;
    silent.push_back(fd);
  }
  // Watch streams that are never read: the daemon keeps them open and goes on.
  std::vector<std::unique_ptr<BackgroundProcess>> watchers;
  for (int i = 0; i < 5; ++i) {
    watchers.push_back(std::make_unique<BackgroundProcess>(std::vector<std::string>{
        testing::DevmgrBinary(), "podresources", "watch", "--root-dir", h_.Root()}));
  }

  // 500 clients, each on its own connection, all at once.
  constexpr int kClients = 500;
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  std::vector<std::string> failures(kClients);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      grpc::ChannelArguments arguments;
      arguments.SetInt("devmgr.test.client", i);  // a distinct channel, so its own connection
      auto stub = v1::PodResourcesLister::NewStub(grpc::CreateCustomChannel(
          UnixTarget(socket), grpc::InsecureChannelCredentials(), arguments));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + 30s);
      v1::ListPodResourcesRequest request;
      v1::ListPodResourcesResponse response;
      const grpc::Status status = stub->List(&context, request, &response);
      if (status.ok() && response.pod_resources_size() == 1) {
        ++answered;
      } else {
        failures[i] = status.error_message();
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_EQ(answered.load(), kClients) << failures[0];
  ProcessResult listed = h_.Run({"podresources", "list", "--root-dir", h_.Root()});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("listed"), std::string::npos) << listed.out;
  ExpectServingGpuPods("after");
  for (int fd : silent) ::close(fd);
  for (auto& watcher : watchers) watcher->Signal(SIGKILL);
}

// An admission's checkpoint and pod record are made durable by one flush of the state journal,
// then renamed into place. A kill between the flush and the renames, or a power cut before the
// kernel wrote the renamed files back, leaves the files as they were before the admission: both
// are put back here, and the restart restores them from the journal, the pod admitted with its
// device.
TEST_F(FaultsTest, AnAdmissionWhoseFilesWereLostIsRestoredFromTheJournal) {
  // No compaction while the test runs: the files would then be durable by themselves.
  StartServing({"--state-journal-compaction", "0s"}, 2);
  const std::filesystem::path checkpoint = h_.CheckpointPath();
  const std::filesystem::path record = checkpoint.parent_path() / "devmgr_admitted_pods";
  ASSERT_EQ(h_.Admit(PodManifest("first", kGpu, 1)).exit_code, 0);
  const std::string checkpoint_before = ReadFile(checkpoint);
  const std::string record_before = ReadFile(record);
  ProcessResult second = h_.Admit(PodManifest("second", kGpu, 1));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  serve_->Signal(SIGKILL);
  ASSERT_TRUE(serve_->Wait(10s).has_value());
  ASSERT_NE(ReadFile(checkpoint), checkpoint_before);
  WriteFile(checkpoint, checkpoint_before);
  WriteFile(record, record_before);

  serve_ = h_.StartServe(serve_flags_);
  ASSERT_NE(serve_, nullptr);
  EXPECT_NE(serve_->err().find("Restored state files from the journal"), std::string::npos)
      << serve_->err();
  ASSERT_EQ(h_.VerifyCheckpoint(), "");
  std::map<std::string, std::vector<std::string>> held = h_.PodDevices();
  EXPECT_EQ(held["first"].size(), 1u);
  EXPECT_EQ(held["second"].size(), 1u);
  for (const auto& pod : h_.ListPods().value("pods", nlohmann::json::array())) {
    EXPECT_FALSE(pod.value("recovered", false)) << pod.dump();
  }
}

// Without the journal (files a devmgr before it wrote, or a journal lost with the disk's other
// blocks), the rules at start still hold for the states the two renames can leave: the
// checkpoint new and the record old (a kill between them), or only the later rename kept (a power
// cut on a file system that does not keep their order). Both are made here by putting back a
// file as it was before the admission and removing the journal: a pod whose devices are in the
// checkpoint without its record is recovered and keeps them; a recorded pod whose devices the
// checkpoint lacks was never admitted, and its device is free again.
TEST_F(FaultsTest, AKillBetweenTheTwoRenamesOfAnAdmissionLosesNothing) {
  StartServing({"--state-journal-compaction", "0s"}, 2);
  const std::filesystem::path checkpoint = h_.CheckpointPath();
  const std::filesystem::path record = checkpoint.parent_path() / "devmgr_admitted_pods";
  const std::filesystem::path journal = h_.Path("devmgr_state_journal");
  auto read = ReadFile;
  auto put_back = [&](const std::filesystem::path& path, const std::string& bytes) {
    WriteFile(path, bytes);
    std::filesystem::remove(journal);
  };
  auto listed = [&](const std::string& uid) {
    for (const auto& pod : h_.ListPods().value("pods", nlohmann::json::array())) {
      if (pod["pod"].value("uid", "") == uid) return pod;
    }
    return nlohmann::json();
  };
  ASSERT_EQ(h_.Admit(PodManifest("first", kGpu, 1)).exit_code, 0);
  const std::string checkpoint_before = read(checkpoint);
  const std::string record_before = read(record);
  ProcessResult second = h_.Admit(PodManifest("second", kGpu, 1));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const std::string checkpoint_after = read(checkpoint);
  const std::string record_after = read(record);
  ASSERT_NE(record_after, record_before);
  ASSERT_NE(checkpoint_after, checkpoint_before);

  // The checkpoint renamed, the record not: recovered, holding its device.
  serve_->Signal(SIGKILL);
  ASSERT_TRUE(serve_->Wait(10s).has_value());
  put_back(record, record_before);
  serve_ = h_.StartServe(serve_flags_);
  ASSERT_NE(serve_, nullptr);
  ASSERT_EQ(h_.VerifyCheckpoint(), "");
  std::map<std::string, std::vector<std::string>> held = h_.PodDevices();
  EXPECT_EQ(held["first"].size(), 1u);
  EXPECT_EQ(held["second"].size(), 1u) << "a recovered pod keeps its device";
  EXPECT_TRUE(listed("second").value("recovered", false)) << listed("second").dump();
  EXPECT_FALSE(listed("first").value("recovered", false));

  // The record renamed, the checkpoint not: never admitted.
  serve_->Signal(SIGKILL);
  ASSERT_TRUE(serve_->Wait(10s).has_value());
  put_back(checkpoint, checkpoint_before);
  put_back(record, record_after);
  serve_ = h_.StartServe(serve_flags_);
  ASSERT_NE(serve_, nullptr);
  held = h_.PodDevices();
  EXPECT_EQ(held["first"].size(), 1u);
  EXPECT_EQ(held.count("second"), 0u) << "a pod whose devices were not written is forgotten";
  ExpectNothingHeldBy("second");
  ProcessResult third = h_.Admit(PodManifest("third", kGpu, 1));
  EXPECT_EQ(third.exit_code, 0) << "the forgotten pod's device is free: " << third.err;
}

// Another pod's write can come between the steps of an admission, a refusal or a removal and
// carry the pod's devices (allocated, or not yet released) in its checkpoint: the record it
// carries lists that pod in flight. A crash right then is made here by marking a pod so in the
// record and removing the journal: at the restart the pod is neither admitted nor recovered,
// its device is released (the checkpoint rewritten without it) and admitted to the next pod.
TEST_F(FaultsTest, APodRecordedInFlightIsNotAdmittedAndItsDevicesAreReleasedAtStart) {
  StartServing({"--state-journal-compaction", "0s"}, 2);
  const std::filesystem::path record = h_.CheckpointPath().parent_path() / "devmgr_admitted_pods";
  ASSERT_EQ(h_.Admit(PodManifest("first", kGpu, 1)).exit_code, 0);
  ASSERT_EQ(h_.Admit(PodManifest("second", kGpu, 1)).exit_code, 0);
  serve_->Signal(SIGKILL);
  ASSERT_TRUE(serve_->Wait(10s).has_value());
  nlohmann::json recorded = nlohmann::json::parse(ReadFile(record));
  for (nlohmann::json& pod : recorded["pods"]) {
    if (pod["uid"] == "second") pod["inFlight"] = true;
  }
  WriteFile(record, recorded.dump());
  std::filesystem::remove(h_.Path("devmgr_state_journal"));
  ASSERT_NE(ReadFile(h_.CheckpointPath()).find("second"), std::string::npos);

  serve_ = h_.StartServe(serve_flags_);
  ASSERT_NE(serve_, nullptr);
  EXPECT_NE(serve_->err().find("Pod recorded while its admission or removal was under way"),
            std::string::npos)
      << serve_->err();
  ExpectReleasedAtRestart("second", "first");
  ProcessResult third = h_.Admit(PodManifest("third", kGpu, 1));
  EXPECT_EQ(third.exit_code, 0) << "the released device is free: " << third.err;
}

// The daemon is killed with SIGKILL at a random point of a stream of admissions and removals,
// then started again, FaultKillCount() times. An admission that exited 0 must be there after the
// restart with its device; a removal that exited 0 must stay removed; what was cut off may be
// either way (a cut removal may also leave the pod holding nothing), and is removed to start the
// next round clean.
TEST_F(FaultsTest, DaemonKilledDuringAdmissionsLosesNothing) {
  constexpr int kDevices = 16;
  StartServing({"--admission-wait", "30s"}, kDevices);
  std::mt19937 random(std::random_device{}());
  std::set<std::string> done;  // admissions reported done, not removed since
  int admissions_done = 0;
  int temporaries_left = 0;  // by the kills, removed at the restarts
  int next_uid = 0;
  const int kills = testing::FaultKillCount();
  for (int kill = 0; kill < kills; ++kill) {
    std::set<std::string> admitted_now;
    std::set<std::string> removed_now;
    std::string cut_removal;  // a removal the kill cut off: done or not
    // One command a call: admit while few devices are held (half stay free), else remove the
    // oldest; only the kill makes one fail.
    ASSERT_TRUE(testing::KillDuringCommands(*serve_, random, 40, [&] {
      if (done.size() + admitted_now.size() - removed_now.size() < kDevices / 2) {
        const std::string uid = "pod-" + std::to_string(next_uid++);
        if (testing::PodsCommand(h_, {"admit", "-"}, PodManifest(uid, kGpu, 1)) != 0) return false;
        admitted_now.insert(uid);
        return true;
      }
      for (const auto& uid : done) {
        if (removed_now.count(uid) != 0) continue;
        if (testing::PodsCommand(h_, {"remove", uid}) != 0) {
          cut_removal = uid;
          return false;
        }
        removed_now.insert(uid);
        return true;
      }
      return true;
    }));
    for (const auto& uid : removed_now) done.erase(uid);
    done.insert(admitted_now.begin(), admitted_now.end());
    admissions_done += static_cast<int>(admitted_now.size());

    // What the kill left of a write in flight is gone after the restart (a write of the new
    // daemon's would have a name of its own).
    const std::set<std::filesystem::path> left = h_.StateTemporaryFiles();
    temporaries_left += static_cast<int>(left.size());
    serve_ = h_.StartServe(serve_flags_);
    ASSERT_NE(serve_, nullptr) << "restart " << kill;
    ASSERT_EQ(h_.VerifyCheckpoint(), "") << "after kill " << kill;
    for (const std::filesystem::path& path : left) {
      EXPECT_FALSE(std::filesystem::exists(path)) << path << " outlived the restart " << kill;
    }
    std::map<std::string, std::vector<std::string>> held = h_.PodDevices();
    // A removal cut off between its two steps leaves the pod listed holding nothing
    // (PodAdmission::Remove releases the devices first); it is removed again below.
    if (!cut_removal.empty() && (held.count(cut_removal) == 0 || held[cut_removal].empty())) {
      done.erase(cut_removal);
    }
    std::map<std::string, std::string> owner;
    for (const auto& [uid, devices] : held) {
      for (const auto& device : devices) {
        auto [it, fresh] = owner.emplace(device, uid);
        EXPECT_TRUE(fresh) << device << " held by " << it->second << " and " << uid;
      }
    }
    for (const auto& uid : done) {
      ASSERT_EQ(held.count(uid), 1u) << "lost " << uid << " after kill " << kill;
      EXPECT_EQ(held[uid].size(), 1u) << uid;
    }
    for (const auto& uid : removed_now) {
      EXPECT_EQ(held.count(uid), 0u) << "removed " << uid << " came back after kill " << kill;
    }
    for (const auto& [uid, devices] : held) {
      if (done.count(uid) == 0) {
        ASSERT_EQ(h_.Remove(uid).exit_code, 0) << uid;
      }
    }
  }
  std::cout << "daemon kills survived: " << kills
            << ", admissions reported done: " << admissions_done << ", lost: 0"
            << ", temporary files the kills left and the restarts removed: " << temporaries_left
            << "\n";
  EXPECT_GT(admissions_done, 0) << "no admission finished between kills: nothing was tested";
}

// Another admission's write comes while a pod is half allocated: its first container holds a
// device, its second waits on a plugin that never answers Allocate. That write's checkpoint
// carries the first device, and its record lists the pod in flight; the daemon is killed before
// the pod's own write. At the restart the pod is neither admitted nor recovered, its device is
// released and the checkpoint rewritten without it, and the other pod keeps its device.
TEST_F(FaultsTest, AKillWhileAPodIsHalfAllocatedLeavesItNeitherAdmittedNorRecovered) {
  StartServing();
  auto nic = StartNicPlugin({"--allocate-hang"});
  const std::string half = absl::StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: half\n  namespace: default\n  uid: half\n",
      "spec:\n  containers:\n", "  - name: c1\n    resources:\n      limits:\n        ", kGpu,
      ": 1\n", "  - name: c2\n    resources:\n      limits:\n        ", kNic, ": 1\n");
  auto admission = std::async(std::launch::async, [&] { return h_.Admit(half); });
  // The second container's Allocate is under way: the first holds its device.
  const std::string nic_called = absl::StrCat("resourceName=\"", kNic, "\"");
  ASSERT_TRUE(WaitFor([&] {
    for (absl::string_view line : absl::StrSplit(serve_->err(), '\n')) {
      if (absl::StrContains(line, kAllocateCalled) && absl::StrContains(line, nic_called)) {
        return true;
      }
    }
    return false;
  }));
  ASSERT_EQ(h_.Admit(PodManifest("other", kGpu, 1)).exit_code, 0);
  ASSERT_NE(ReadFile(h_.CheckpointPath()).find("half"), std::string::npos)
      << "the other pod's write carried the half-allocated pod's device";
  const nlohmann::json recorded = nlohmann::json::parse(
      ReadFile(h_.CheckpointPath().parent_path() / "devmgr_admitted_pods"), nullptr, false);
  bool in_flight = false;
  for (const nlohmann::json& pod : recorded.value("pods", nlohmann::json::array())) {
    if (pod.value("uid", "") == "half") in_flight = pod.value("inFlight", false);
  }
  EXPECT_TRUE(in_flight) << recorded.dump();
  serve_->Signal(SIGKILL);
  ASSERT_TRUE(serve_->Wait(10s).has_value());
  ASSERT_EQ(admission.wait_for(20s), std::future_status::ready);
  // No answer, so no refusal (1): the daemon went down during the call, which it may have
  // finished. Before, the transport's UNAVAILABLE read as the daemon's refusal.
  const ProcessResult cut = admission.get();
  EXPECT_EQ(cut.exit_code, 2) << cut.err;
  EXPECT_TRUE(absl::StartsWith(cut.err, "devmgr: AdmitPod: no answer from the daemon ("))
      << cut.err;
  EXPECT_NE(cut.err.find(")); it may have gone down during the call, and one that changes"),
            std::string::npos)
      << cut.err;

  serve_ = h_.StartServe(serve_flags_);
  ASSERT_NE(serve_, nullptr);
  ExpectReleasedAtRestart("half", "other");
  EXPECT_EQ(h_.PodDevices()["other"].size(), 1u);
}

}  // namespace
}  // namespace devmgr
