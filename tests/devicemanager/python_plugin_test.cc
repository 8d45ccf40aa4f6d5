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
#include "devicemanager/endpoint_impl.h"
#include "tests/devicemanager/recording_callbacks.h"
#include "tests/deviceplugin/source_root.h"
#include "tests/testlib/python_grpc.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using testing::BackgroundProcess;
using testing::GeneratePythonStubs;
using testing::kPython;
using testing::MissingPythonGrpc;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

class PythonPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto missing = MissingPythonGrpc(); missing.has_value()) GTEST_SKIP() << *missing;
    auto generated =
        GeneratePythonStubs(source_ / "proto", "deviceplugin/v1beta1/api.proto", stubs_);
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
    EXPECT_TRUE(WaitFor([&] { return recorder_.ended(); }));
  }

  TempDir dir_;
  const std::filesystem::path source_ = DEVMGR_SOURCE_ROOT;
  const std::filesystem::path stubs_ = dir_.Sub("stubs");
  const std::filesystem::path socket_ = dir_.Sub("py.sock");
  std::unique_ptr<BackgroundProcess> plugin_;
  RecordingCallbacks recorder_;
  EndpointSharedPtr endpoint_;
};

TEST_F(PythonPluginTest, ReadsEverySnapshotOfAGrpcioPlugin) {
  Connect({});
  ASSERT_TRUE(WaitFor([&] { return recorder_.snapshot_count() == 2; }, 30s)) << plugin_->err();
  EXPECT_EQ(recorder_.snapshot(0), (std::vector<Device>{{"d0", Health::kHealthy, {0}},
                                                        {"d1", Health::kUnhealthy, {}},
                                                        {"d\xc3\xa9", Health::kHealthy, {1, 0}}}));
  EXPECT_EQ(recorder_.snapshot(1), (std::vector<Device>{{"d0", Health::kUnhealthy, {}}}));
  EXPECT_FALSE(recorder_.ended());
}

TEST_F(PythonPluginTest, AMessageThatDoesNotParseEndsTheStream) {
  Connect({"malformed"});
  ASSERT_TRUE(WaitFor([&] { return recorder_.ended(); }, 30s)) << plugin_->err();
  EXPECT_EQ(recorder_.snapshot_count(), 2u);
  EXPECT_EQ(recorder_.end_status().code(), absl::StatusCode::kInternal) << recorder_.end_status();
}

}  // namespace
}  // namespace devmgr::devicemanager
