// The endpoint against a device plugin written with Python's grpcio (Debian's python3-grpcio),
// with stubs generated from our protos at test time: the endpoint makes ListAndWatch in gRPC's
// generic form and reads the messages' bytes itself, so a second gRPC implementation serving
// the method the usual way must be read as the kubelet reads it.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/endpoint_impl.h"
#include "tests/deviceplugin/source_root.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using testing::BackgroundProcess;
using testing::RunProcess;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kProtoc[] = "/usr/bin/protoc";
constexpr char kGrpcPythonPlugin[] = "/usr/bin/grpc_python_plugin";

class Recorder : public EndpointCallbacks {
 public:
  void OnDevicesUpdated(const Endpoint& /*endpoint*/, std::vector<Device>&& devices) override {
    absl::MutexLock lock(&mu_);
    snapshots_.push_back(std::move(devices));
  }
  void OnStreamEnded(const Endpoint& /*endpoint*/, const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    ended_ = status;
  }
  std::vector<std::vector<Device>> snapshots() const {
    absl::MutexLock lock(&mu_);
    return snapshots_;
  }
  std::optional<absl::Status> ended() const {
    absl::MutexLock lock(&mu_);
    return ended_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::vector<Device>> snapshots_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);
};

class PythonPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {kPython, kProtoc, kGrpcPythonPlugin}) {
      if (!std::filesystem::exists(tool)) GTEST_SKIP() << tool << " is not installed";
    }
    auto probe = RunProcess({kPython, "-c", "import grpc, google.protobuf"});
    if (probe.exit_code != 0) {
      GTEST_SKIP() << "Debian's python3-grpcio and python3-protobuf are not installed: "
                   << probe.err;
    }
    std::filesystem::create_directories(stubs_);
    auto generated =
        RunProcess({kProtoc, "--proto_path=" + (source_ / "proto").string(),
                    "--python_out=" + stubs_.string(), "--grpc_python_out=" + stubs_.string(),
                    std::string("--plugin=protoc-gen-grpc_python=") + kGrpcPythonPlugin,
                    "deviceplugin/v1beta1/api.proto"});
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
  }

  // Starts the Python plugin and connects an endpoint to it, its stream open.
  void Connect(const std::vector<std::string>& extra_args) {
    std::vector<std::string> argv = {kPython,
                                     (source_ / "tests/devicemanager/python_plugin.py").string(),
                                     stubs_.string(), socket_.string()};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    plugin_ = std::make_unique<BackgroundProcess>(argv);
    ASSERT_TRUE(plugin_->started());
    ASSERT_TRUE(WaitFor([&] { return absl::StrContains(plugin_->out(), "serving"); }, 30s))
        << plugin_->err();
    EndpointOptions options;
    options.dial_timeout = absl::Seconds(10);
    options.call_timeout = absl::Seconds(10);
    auto endpoint = EndpointImpl::Connect("example.com/py", socket_, options, recorder_);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoint_ = *endpoint;
    EXPECT_TRUE(endpoint_->plugin_options().pre_start_required());
    endpoint_->StartListAndWatch();
  }

  void TearDown() override {
    if (endpoint_ == nullptr) return;
    endpoint_->CancelStream();
    EXPECT_TRUE(WaitFor([&] { return recorder_.ended().has_value(); }));
  }

  TempDir dir_;
  const std::filesystem::path source_ = DEVMGR_SOURCE_ROOT;
  const std::filesystem::path stubs_ = dir_.Sub("stubs");
  const std::filesystem::path socket_ = dir_.Sub("py.sock");
  std::unique_ptr<BackgroundProcess> plugin_;
  Recorder recorder_;
  EndpointSharedPtr endpoint_;
};

TEST_F(PythonPluginTest, ReadsEverySnapshotOfAGrpcioPlugin) {
  Connect({});
  ASSERT_TRUE(WaitFor([&] { return recorder_.snapshots().size() == 2; }, 30s)) << plugin_->err();
  const auto snapshots = recorder_.snapshots();
  EXPECT_EQ(snapshots[0], (std::vector<Device>{{"d0", Health::kHealthy, {0}},
                                               {"d1", Health::kUnhealthy, {}},
                                               {"d\xc3\xa9", Health::kHealthy, {1, 0}}}));
  EXPECT_EQ(snapshots[1], (std::vector<Device>{{"d0", Health::kUnhealthy, {}}}));
  EXPECT_FALSE(recorder_.ended().has_value());
}

TEST_F(PythonPluginTest, AMessageThatDoesNotParseEndsTheStream) {
  Connect({"malformed"});
  ASSERT_TRUE(WaitFor([&] { return recorder_.ended().has_value(); }, 30s)) << plugin_->err();
  EXPECT_EQ(recorder_.snapshots().size(), 2u);
  EXPECT_EQ(recorder_.ended()->code(), absl::StatusCode::kInternal) << *recorder_.ended();
}

}  // namespace
}  // namespace devmgr::devicemanager
