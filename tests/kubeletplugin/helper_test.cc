// The helper's publishing of ResourceSlices: what goes wrong reaches the driver's error handler,
// as upstream's HandleError.
#include "kubeletplugin/helper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "resourceslice/memory_store.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::kubeletplugin {
namespace {

using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
using ::testing::HasSubstr;

// A driver that is never asked to prepare anything here.
class IdleDriver final : public DriverPlugin {
 public:
  absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& /*claims*/) override {
    return std::map<std::string, PrepareResult>();
  }
  absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
      const std::vector<NamespacedObject>& /*claims*/) override {
    return std::map<std::string, absl::Status>();
  }
};

TEST(HelperTest, PublishingErrorsReachTheDriversHandler) {
  TempDir dir;
  resourceslice::MemoryStore store;
  store.SetNode("node-1", "node-uid");
  IdleDriver driver;
  absl::Mutex mu;
  std::vector<std::string> errors;
  HelperOptions options;
  options.driver_name = "gpu.example.com";
  options.kubelet_dir = dir.path();
  options.claim_lookup = [](const std::string&, const std::string&) {
    return absl::StatusOr<dra::ResourceClaim>(absl::NotFoundError("no claims here"));
  };
  options.slice_store = &store;
  options.node_name = "node-1";
  options.handle_error = [&](const resourceslice::ControllerError& error) {
    absl::MutexLock lock(&mu);
    errors.push_back(error.ToString());
  };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();

  // One device listed twice: the pool does not validate.
  resourceslice::DriverResources resources;
  kubeapi::Device device;
  device.name = "gpu-0";
  resources.pools["node-1"].slices.emplace_back().devices = {device, device};
  ASSERT_TRUE((*helper)->PublishResources(resources).ok());
  ASSERT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return !errors.empty();
  }));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(errors[0],
            "pool validation failed: found duplicate device \"gpu-0\" in pool \"node-1\"");
}

}  // namespace
}  // namespace devmgr::kubeletplugin
