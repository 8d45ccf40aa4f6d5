// Registrations from plugins that try to make the manager dial, or delete, something outside
// its folders: kubelet.sock endpoints that climb out, symlinks planted in the folders, sockets
// replaced by files or folders. The manager refuses each one with upstream's text (its dial
// failure, for what upstream does not check), never dials the plugin behind it, and its
// stale-socket cleanup at Start never follows a symlink. Probe mode dials any socket path, as
// upstream, and touches nothing there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"
#include "devicemanager/manager_impl.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/raw_call.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

namespace fs = std::filesystem;
using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::RawCall;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kResource[] = "example.com/gpu";

std::string Contents(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

class HostileRegistrationTest : public ::testing::Test {
 protected:
  HostileRegistrationTest() {
    fs::create_directory(PluginDir());
    fs::create_directory(Registry());
    fs::create_directory(Outside());
    outside_ = std::make_unique<FakeDevicePlugin>(Outside() / "p.sock", kResource,
                                                  std::vector<v1beta1::Device>{MakeDevice("a")});
    EXPECT_TRUE(outside_->Start().ok());
  }

  // The plugin folder (kubelet.sock's), the registry folder, and a folder outside both where a
  // real plugin serves: what a hostile registration would like the manager to dial.
  fs::path PluginDir() const { return dir_.Sub("dp"); }
  fs::path Registry() const { return dir_.Sub("reg"); }
  fs::path Outside() const { return dir_.Sub("out"); }
  fs::path KubeletSocket() const { return PluginDir() / "kubelet.sock"; }

  void StartManager(absl::Duration dial_timeout = absl::Seconds(5)) {
    ManagerOptions options;
    options.plugin_dir = PluginDir();
    options.dial_timeout = dial_timeout;
    options.plugin_call_timeout = absl::Seconds(5);
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(
        manager_->Start([] { return std::vector<std::string>(); }, [] { return true; }).ok());
  }

  // Register on kubelet.sock with `endpoint`, from a client that is not the plugin there.
  absl::Status Register(const std::string& endpoint) const {
    return outside_->Register(KubeletSocket(), "v1beta1", kResource, endpoint);
  }

  TempDir dir_;
  std::unique_ptr<FakeDevicePlugin> outside_;
  std::unique_ptr<ManagerImpl> manager_;
};

TEST_F(HostileRegistrationTest, EndpointThatLeavesThePluginFolder) {
  StartManager();
  const std::string up = "../out/p.sock";
  for (const std::string& endpoint : {up, (Outside() / "p.sock").string(), std::string(".."),
                                      std::string("."), std::string("sub/p.sock")}) {
    const absl::Status status = Register(endpoint);
    // Refusals go out as the kubelet's plain Go errors do.
    EXPECT_EQ(status.code(), absl::StatusCode::kUnknown) << endpoint;
    EXPECT_EQ(status.message(),
              absl::StrCat("failed to dial device plugin: invalid endpoint \"", endpoint,
                           "\": must be the file name of a socket in ", PluginDir().string()));
  }
  EXPECT_EQ(outside_->get_options_calls(), 0) << "the plugin outside was dialled";
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

// Names that are not text are quoted as Go's %q quotes them, so the refusal stays one line
// whatever the plugin sent.
TEST_F(HostileRegistrationTest, NamesInRefusalsAreQuotedAsGoQuotesThem) {
  StartManager(absl::Milliseconds(200));
  const absl::Status name = outside_->Register(KubeletSocket(), "v1beta1", "bad\"name\n", "p.sock");
  EXPECT_EQ(name.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(name.message(), "the ResourceName \"bad\\\"name\\n\" is invalid");
  const absl::Status version =
      outside_->Register(KubeletSocket(), "v1\tbeta1", kResource, "p.sock");
  EXPECT_EQ(
      version.message(),
      "requested API version \"v1\\tbeta1\" is not supported by kubelet. Supported version is "
      "[\"v1beta1\"]");
  const absl::Status endpoint = Register("sub/\x01.sock");
  EXPECT_EQ(endpoint.message(),
            absl::StrCat("failed to dial device plugin: invalid endpoint \"sub/\\x01.sock\": must "
                         "be the file name of a socket in ",
                         PluginDir().string()));
  // A socket that never comes: its path, a newline and all, on one line.
  const absl::Status never = Register("x\ny.sock");
  EXPECT_EQ(never.message(), absl::StrCat("failed to dial device plugin: no socket at \"",
                                          PluginDir().string(), "/x\\ny.sock\" within 200ms"));
  EXPECT_EQ(outside_->get_options_calls(), 0);
}

// A Register request whose bytes do not parse is refused with INTERNAL, as a kubelet's grpc-go
// refuses it, and nothing is registered.
TEST_F(HostileRegistrationTest, ARequestThatDoesNotParseIsRefusedWithInternal) {
  StartManager();
  const auto channel =
      grpc::CreateChannel(UnixTarget(KubeletSocket()), grpc::InsecureChannelCredentials());
  const testing::RawAnswer answer = RawCall(channel, "/v1beta1.Registration/Register", "\xff");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INTERNAL)
      << answer.status.error_message();
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

// gRPC reads a target as a URI: it decodes %XX in the path and ends the path at '?' or '#'.
// A socket whose name holds them is dialled at its own path, never at the one its name
// decodes to (here the plugin outside).
TEST_F(HostileRegistrationTest, EndpointNamesThatDecodeToAnotherPath) {
  StartManager();
  for (const std::string& name :
       {std::string("%2E%2E%2Fout%2Fp.sock"), std::string("x?y.sock"), std::string("x#y.sock")}) {
    SCOPED_TRACE(name);
    FakeDevicePlugin decoy(PluginDir() / name, kResource,
                           std::vector<v1beta1::Device>{MakeDevice("d1"), MakeDevice("d2")});
    ASSERT_TRUE(decoy.Start().ok());
    ASSERT_TRUE(IsSocket(PluginDir() / name)) << "bound at its own path";
    ASSERT_TRUE(Register(name).ok());
    EXPECT_TRUE(WaitFor([&] { return manager_->GetCapacity().capacity[kResource] == 2; }));
    EXPECT_EQ(decoy.get_options_calls(), 1);
  }
  EXPECT_EQ(outside_->get_options_calls(), 0) << "the plugin outside was dialled";
}

// gRPC's unix resolver splits a decoded path at ',' into a list of addresses and dials the first:
// "v.sock,x" would reach the plugin at v.sock, which did not ask to be registered again. Such an
// endpoint is refused before anything is dialled, whatever socket carries its name.
TEST_F(HostileRegistrationTest, EndpointNamesWithACommaAreRefused) {
  StartManager();
  FakeDevicePlugin victim(PluginDir() / "v.sock", "example.com/other",
                          std::vector<v1beta1::Device>{MakeDevice("v1")});
  ASSERT_TRUE(victim.Start().ok());
  FakeDevicePlugin decoy(PluginDir() / "decoy.sock", kResource,
                         std::vector<v1beta1::Device>{MakeDevice("d1")});
  ASSERT_TRUE(decoy.Start().ok());
  const fs::path named = PluginDir() / "v.sock,x";
  fs::rename(PluginDir() / "decoy.sock", named);
  ASSERT_TRUE(IsSocket(named));

  const absl::Status status = Register("v.sock,x");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(status.message(),
            absl::StrCat("failed to dial device plugin: socket path \"", named.string(),
                         "\" contains ',', which gRPC reads as a separator between addresses"));
  EXPECT_EQ(victim.get_options_calls(), 0) << "the plugin at the name's first part was dialled";
  EXPECT_EQ(decoy.get_options_calls(), 0);
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

TEST_F(HostileRegistrationTest, SymlinkPlantedInThePluginFolder) {
  StartManager();
  fs::create_symlink(Outside() / "p.sock", PluginDir() / "link.sock");
  const absl::Status status = Register("link.sock");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(status.message(),
            absl::StrCat("failed to dial device plugin: ", (PluginDir() / "link.sock").string(),
                         " is not a unix socket"));
  EXPECT_EQ(outside_->get_options_calls(), 0) << "the symlink was followed";
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

TEST_F(HostileRegistrationTest, SocketReplacedByARegularFileOrAFolder) {
  StartManager();
  FakeDevicePlugin plugin(PluginDir() / "p.sock", kResource, {MakeDevice("a")});
  ASSERT_TRUE(plugin.Start().ok());
  ASSERT_TRUE(plugin.Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource] == 1; }));
  plugin.Stop();

  const fs::path path = PluginDir() / "p.sock";
  for (const bool folder : {false, true}) {
    SCOPED_TRACE(folder ? "folder" : "regular file");
    fs::remove_all(path);
    if (folder) {
      fs::create_directory(path);
    } else {
      std::ofstream(path) << "kept";
    }
    const absl::Status status = Register("p.sock");
    EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
    EXPECT_EQ(status.message(), absl::StrCat("failed to dial device plugin: ", path.string(),
                                             " is not a unix socket"));

    // A restart cleans stale sockets only: the file or folder in the socket's place stays.
    manager_->Stop();
    StartManager();
    if (folder) {
      EXPECT_TRUE(fs::is_directory(path));
    } else {
      EXPECT_EQ(Contents(path), "kept");
    }
  }
  EXPECT_EQ(outside_->get_options_calls(), 0);
}

// Probe mode, as upstream: the endpoint a plugin names in GetInfo may be any absolute path of a
// unix socket (plugins keep theirs in plugins/<name>/), and the manager dials it. What cannot be
// dialled is refused at once, with the dial-failure text upstream gives, and dialling is all
// the manager does with the path: the files there stay as they were.
TEST_F(HostileRegistrationTest, ProbeModeEndpointAnywhereAsUpstream) {
  StartManager();
  const fs::path service_dir = dir_.Sub("plugins/reg");
  fs::create_directories(service_dir);
  FakeDevicePlugin service(service_dir / "reg.sock", "example.com/reg", {MakeDevice("a")});
  ASSERT_TRUE(service.Start().ok());
  ASSERT_TRUE(
      manager_->RegisterPlugin("example.com/reg", (service_dir / "reg.sock").string(), {"v1beta1"})
          .ok());
  EXPECT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable["example.com/reg"] == 1; }));

  // A symlink is followed, as the dial follows it; ".." is resolved the same way.
  fs::create_symlink(Outside() / "p.sock", Registry() / "link.sock");
  ASSERT_TRUE(
      manager_->RegisterPlugin(kResource, (Registry() / "link.sock").string(), {"v1beta1"}).ok());
  EXPECT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource] == 1; }));
  EXPECT_EQ(outside_->get_options_calls(), 1);

  std::ofstream(Registry() / "file.sock") << "kept";
  const std::string file = (Registry() / "file.sock").string();
  const std::string under_file = file + "/missing.sock";
  const std::string long_path = "/" + std::string(199, 'x');
  const std::string nul = (service_dir / "reg.sock").string() + std::string("\0/x", 3);
  struct Case {
    std::string endpoint;
    absl::StatusCode code;
    std::string why;
  };
  for (const Case& c : {
           Case{"plugins/reg/reg.sock", absl::StatusCode::kInvalidArgument,
                "socket path must be absolute: \"plugins/reg/reg.sock\""},
           Case{file, absl::StatusCode::kFailedPrecondition, file + " is not a unix socket"},
           Case{under_file, absl::StatusCode::kFailedPrecondition,
                absl::StrCat("cannot stat ", under_file, ": Not a directory")},
           Case{long_path, absl::StatusCode::kInvalidArgument,
                absl::StrCat("socket path is 200 bytes, over the limit of 107: ", long_path)},
           Case{nul, absl::StatusCode::kInvalidArgument,
                absl::StrCat("invalid endpoint \"", (service_dir / "reg.sock").string(),
                             "\\x00/x\": contains a NUL byte")},
       }) {
    const absl::Status status =
        manager_->RegisterPlugin("example.com/bad", c.endpoint, {"v1beta1"});
    EXPECT_EQ(status.code(), c.code) << c.endpoint;
    EXPECT_EQ(status.message(), "failed to dial device plugin: " + c.why);
  }
  EXPECT_EQ(service.get_options_calls(), 1) << "a path with a NUL byte was dialled";
  EXPECT_EQ(manager_->GetCapacity().capacity.count("example.com/bad"), 0);

  manager_->DeRegisterPlugin(kResource, (Registry() / "link.sock").string());
  manager_->Stop();
  EXPECT_TRUE(IsSocket(Outside() / "p.sock"));
  EXPECT_TRUE(IsSocket(service_dir / "reg.sock"));
  EXPECT_EQ(Contents(file), "kept");
}

TEST_F(HostileRegistrationTest, StartCleanupNeverFollowsASymlink) {
  // Planted before Start, beside a stale socket that Start should remove.
  FakeDevicePlugin stale(PluginDir() / "stale.sock", kResource, {});
  ASSERT_TRUE(stale.Start().ok());
  fs::create_symlink(Outside() / "p.sock", PluginDir() / "link.sock");
  fs::create_symlink(Outside(), PluginDir() / "dirlink");
  fs::create_directory(PluginDir() / "dir.sock");
  std::ofstream(PluginDir() / "file.sock") << "kept";

  StartManager();
  EXPECT_FALSE(fs::exists(fs::symlink_status(PluginDir() / "stale.sock")));
  EXPECT_TRUE(fs::is_symlink(PluginDir() / "link.sock"));
  EXPECT_TRUE(fs::is_symlink(PluginDir() / "dirlink"));
  EXPECT_TRUE(IsSocket(Outside() / "p.sock")) << "the symlink's target was removed";
  EXPECT_TRUE(fs::is_directory(PluginDir() / "dir.sock"));
  EXPECT_EQ(Contents(PluginDir() / "file.sock"), "kept");
  EXPECT_TRUE(IsSocket(KubeletSocket()));
}

}  // namespace
}  // namespace devmgr::devicemanager
