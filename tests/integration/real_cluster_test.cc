// The API client and the ResourceSlice controller against a real Kubernetes cluster: runs only
// when KUBECONFIG names one (its current context), and is reported as skipped ("skipped: no
// cluster"), never as passed, otherwise. Everything it writes is a ResourceSlice of the driver
// e2e.devmgr.example.com for all nodes, in a pool of its own, deleted again at the end; the
// account needs get, list, watch, create, update, delete and deletecollection on
// resourceslices.resource.k8s.io. Nothing here schedules anything on those devices: no
// DeviceClass selects the driver.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "kubeclient/client.h"
#include "resourceslice/api_store.h"
#include "resourceslice/controller.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kDriver[] = "e2e.devmgr.example.com";

class RealClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* kubeconfig = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
    if (kubeconfig == nullptr || *kubeconfig == '\0') GTEST_SKIP() << "skipped: no cluster";
    absl::StatusOr<kubeclient::RestConfig> config =
        kubeclient::LoadKubeconfig(kubeclient::KubeconfigFiles(kubeconfig));
    ASSERT_TRUE(config.ok()) << config.status();
    absl::StatusOr<std::unique_ptr<kubeclient::Client>> client =
        kubeclient::Client::Create(*config);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    pool_ = absl::StrCat("devmgr-e2e-", std::random_device{}() % 1000000);
  }

  void TearDown() override {
    if (client_ == nullptr) return;
    kubeclient::ListOptions mine;
    mine.field_selector = kubeclient::SliceFieldSelector(kDriver, std::nullopt);
    EXPECT_TRUE(client_->DeleteResourceSlices(mine).ok());
  }

  kubeapi::ResourceSlice Slice(const std::string& model) const {
    kubeapi::ResourceSlice slice;
    slice.metadata.generate_name = "devmgr-e2e-";
    slice.spec.driver = kDriver;
    slice.spec.all_nodes = true;
    slice.spec.pool = {pool_, 1, 1, kubeapi::Json::object()};
    kubeapi::Device& device = slice.spec.devices.emplace_back();
    device.name = "dev-0";
    device.extra["attributes"] = {{"model", {{"string", model}}}};
    return slice;
  }

  std::unique_ptr<kubeclient::Client> client_;
  std::string pool_;
};

TEST_F(RealClusterTest, WritesWatchesAndDeletesAResourceSlice) {
  kubeclient::ListOptions mine;
  mine.field_selector = kubeclient::SliceFieldSelector(kDriver, std::nullopt);
  absl::StatusOr<kubeclient::SliceList> before = client_->ListResourceSlices(mine);
  ASSERT_TRUE(before.ok()) << before.status();
  std::cout << "resource.k8s.io in use: " << kubeapi::VersionName(client_->resource_version())
            << "\n";

  std::vector<std::string> events;
  kubeclient::Cancellation cancel;
  std::thread watcher([&] {
    kubeclient::ListOptions from = mine;
    from.resource_version = before->resource_version;
    static_cast<void>(client_->WatchResourceSlices(
        from,
        [&](const kubeclient::SliceEvent& event) {
          if (event.type == kubeclient::WatchEventType::kBookmark) return true;
          events.push_back(absl::StrCat(static_cast<int>(event.type)));
          return events.size() < 3;
        },
        &cancel));
  });

  absl::StatusOr<kubeapi::ResourceSlice> created = client_->CreateResourceSlice(Slice("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  kubeapi::ResourceSlice changed = *created;
  changed.spec.devices[0].extra["attributes"]["model"]["string"] = "b";
  absl::StatusOr<kubeapi::ResourceSlice> updated = client_->UpdateResourceSlice(changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(client_->UpdateResourceSlice(changed).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(client_
                ->DeleteResourceSlice(updated->metadata.name,
                                      {updated->metadata.uid, created->metadata.resource_version})
                .code(),
            absl::StatusCode::kAborted);
  ASSERT_TRUE(client_
                  ->DeleteResourceSlice(updated->metadata.name,
                                        {updated->metadata.uid, updated->metadata.resource_version})
                  .ok());
  const bool seen = testing::WaitFor([&] { return events.size() == 3; }, 30s);
  cancel.Cancel();
  watcher.join();
  EXPECT_TRUE(seen);
  EXPECT_EQ(events, (std::vector<std::string>{"0", "1", "2"}));
}

TEST_F(RealClusterTest, TheControllerPublishesAndRemovesAPool) {
  resourceslice::ApiSliceStore store(*client_);
  resourceslice::Pool pool;
  pool.all_nodes = true;
  for (int s = 0; s < 3; ++s) {
    resourceslice::Slice& slice = pool.slices.emplace_back();
    kubeapi::Device& device = slice.devices.emplace_back();
    device.name = absl::StrCat("dev-", s);
  }
  resourceslice::DriverResources resources;
  resources.pools[pool_] = pool;
  resourceslice::ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.resources = resources;
  absl::StatusOr<std::unique_ptr<resourceslice::Controller>> controller =
      resourceslice::Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  const auto published = [&] {
    absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices = store.List({kDriver, "", pool_});
    return slices.ok() ? slices->size() : 0;
  };
  EXPECT_TRUE(testing::WaitFor([&] { return published() == 3; }, 30s));
  (*controller)->Update(resourceslice::DriverResources{});
  EXPECT_TRUE(testing::WaitFor([&] { return published() == 0; }, 30s));
}

}  // namespace
}  // namespace devmgr
