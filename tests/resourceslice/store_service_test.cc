// A SliceStore served over gRPC and used through GrpcSliceStore behaves as the store itself:
// generated names, versions, preconditions and their error codes, the filter, fields the codec
// does not model kept across the wire, DeleteCollection and node uids.
#include "resourceslice/store_service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"
#include "resourceslice/memory_store.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::resourceslice {
namespace {

using kubeapi::ResourceSlice;

class StoreServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Serve();
    ASSERT_NE(server_, nullptr);
    client_ = std::make_unique<GrpcSliceStore>(
        grpc::CreateChannel(UnixTarget(Socket()), grpc::InsecureChannelCredentials()),
        absl::Seconds(10));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  std::filesystem::path Socket() const { return dir_.Sub("slices.sock"); }
  void Serve() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(UnixTarget(Socket()), grpc::InsecureServerCredentials());
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }

  static ResourceSlice Slice(const std::string& driver, const std::string& pool) {
    ResourceSlice slice;
    slice.metadata.generate_name = "00000-" + driver + "-";
    slice.spec.driver = driver;
    slice.spec.node_name = "node-1";
    slice.spec.pool = {pool, 1, 1, kubeapi::Json::object()};
    kubeapi::Device device;
    device.name = "dev-0";
    device.extra["attributes"] = {{"index", {{"int", 0}}}};
    slice.spec.devices.push_back(device);
    slice.spec.extra["futureField"] = "kept";
    return slice;
  }

  testing::TempDir dir_;
  MemoryStore store_;
  StoreService service_{store_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcSliceStore> client_;
};

TEST_F(StoreServiceTest, BehavesAsTheStoreItServes) {
  absl::StatusOr<ResourceSlice> created = client_->Create(Slice("gpu.example.com", "node-1"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata.name, "00000-gpu.example.com-0");
  EXPECT_EQ(created->metadata.resource_version, "1");
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_EQ(created->spec.extra["futureField"], "kept");
  EXPECT_EQ(created->spec.devices[0].extra["attributes"]["index"]["int"], 0);
  ASSERT_TRUE(client_->Create(Slice("nic.example.com", "node-1")).ok());

  absl::StatusOr<std::vector<ResourceSlice>> gpus = client_->List({"gpu.example.com", "", ""});
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0], *created);
  EXPECT_EQ(client_->List({})->size(), 2u);
  EXPECT_TRUE(client_->List({"", "node-2", ""})->empty());

  ResourceSlice stale = *created;
  ResourceSlice changed = *created;
  changed.spec.pool.generation = 2;
  absl::StatusOr<ResourceSlice> updated = client_->Update(changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->metadata.resource_version, "2");
  EXPECT_EQ(client_->Update(stale).status().code(), absl::StatusCode::kAborted) << "a conflict";
  EXPECT_EQ(client_->Delete(created->metadata.name, "other-uid", "").code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(client_->Delete(created->metadata.name, created->metadata.uid, "1").code(),
            absl::StatusCode::kAborted)
      << "an old resourceVersion";
  EXPECT_TRUE(client_->Delete(created->metadata.name, created->metadata.uid, "2").ok());
  EXPECT_EQ(client_->Delete(created->metadata.name, "", "").code(), absl::StatusCode::kNotFound);

  EXPECT_TRUE(client_->DeleteCollection({"", "node-1", ""}).ok());
  EXPECT_TRUE(client_->List({})->empty());

  EXPECT_EQ(client_->NodeUid("node-1").status().code(), absl::StatusCode::kNotFound);
  store_.SetNode("node-1", "uid-1");
  EXPECT_EQ(*client_->NodeUid("node-1"), "uid-1");

  ResourceSlice unnamed = Slice("gpu.example.com", "p");
  unnamed.metadata.generate_name.clear();
  EXPECT_EQ(client_->Create(unnamed).status().code(), absl::StatusCode::kInvalidArgument);
}

// A driver's string that is not UTF-8 (an attribute read from sysfs) is sent as Go's encoder
// sends it, the bad byte as U+FFFD. Before, encoding the slice threw and ended the driver.
TEST_F(StoreServiceTest, AStringThatIsNotUtf8IsSentAsGoSendsIt) {
  ResourceSlice slice = Slice("gpu.example.com", "node-1");
  slice.spec.devices[0].extra["attributes"]["model"] = {{"string", "A\xff"}};
  absl::StatusOr<ResourceSlice> created = client_->Create(slice);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->spec.devices[0].extra["attributes"]["model"]["string"], "A\xEF\xBF\xBD");
}

// A driver that publishes what the API server would refuse is refused as the API server would,
// and nothing is stored: two devices of one name, a slice that names no node.
TEST_F(StoreServiceTest, RefusesSlicesTheApiServerWouldRefuse) {
  ResourceSlice twice = Slice("gpu.example.com", "node-1");
  twice.spec.devices.push_back(twice.spec.devices[0]);
  absl::StatusOr<ResourceSlice> refused = client_->Create(twice);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "spec.devices[1].name: Duplicate value: \"dev-0\"");

  ResourceSlice nowhere = Slice("gpu.example.com", "node-1");
  nowhere.spec.node_name.reset();
  EXPECT_EQ(client_->Create(nowhere).status().message(),
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required");
  EXPECT_TRUE(client_->List({})->empty());

  absl::StatusOr<ResourceSlice> created = client_->Create(Slice("gpu.example.com", "node-1"));
  ASSERT_TRUE(created.ok()) << created.status();
  ResourceSlice update = *created;
  update.spec.devices[0].name = "Dev_0";
  EXPECT_EQ(client_->Update(update).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*client_->List({}))[0].spec.devices[0].name, "dev-0");
}

// Any local writer may send a slice: one nested deeper than any object of the API is refused
// before it is read, where reading it would have overflowed the stack.
TEST_F(StoreServiceTest, RefusesASliceNestedDeeperThanAnyObjectOfTheApi) {
  constexpr int kLevels = 200'000;
  std::string text = R"({"metadata":{"generateName":"s-"},"spec":{"driver":"d","nodeName":"n",)"
                     R"("pool":{"name":"p","resourceSliceCount":1},"devices":[{"name":"x","x":)";
  // Four levels are open here; the 1,001st is the 997th bracket.
  const size_t first_too_deep = text.size() + 996;
  text.append(kLevels, '[');
  text.append(kLevels, ']');
  text += "}]}}";
  devmgr::resourceslices::v1::SliceRequest request;
  request.set_slice(text);
  devmgr::resourceslices::v1::SliceResponse response;
  auto stub = devmgr::resourceslices::v1::ResourceSlices::NewStub(grpc::CreateChannel(
      UnixTarget(dir_.Sub("slices.sock").string()), grpc::InsecureChannelCredentials()));
  for (const bool update : {false, true}) {
    grpc::ClientContext context;
    const grpc::Status status = update ? stub->Update(&context, request, &response)
                                       : stub->Create(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << update;
    EXPECT_EQ(status.error_message(), absl::StrCat("the slice: byte ", first_too_deep,
                                                   ": JSON nested deeper than 1000 levels"))
        << update;
  }
  EXPECT_TRUE(client_->List({})->empty());
}

// A store reached through the daemon's socket finds the daemon that restarted at its first call
// after it listens again: gRPC's reconnect backoff, begun by a call while it was away, would
// have failed the driver's publishing for a second after the first failure, up to two minutes
// after more.
TEST_F(StoreServiceTest, AStoreAtASocketReachesADaemonThatCameBackAtOnce) {
  GrpcSliceStore store(Socket(), absl::Seconds(10));
  ASSERT_TRUE(store.List({}).ok());
  server_->Shutdown();
  server_.reset();
  EXPECT_EQ(store.List({}).status().code(), absl::StatusCode::kUnavailable);
  Serve();
  ASSERT_NE(server_, nullptr);
  const absl::StatusOr<std::vector<ResourceSlice>> listed = store.List({});
  EXPECT_TRUE(listed.ok()) << listed.status();
}

}  // namespace
}  // namespace devmgr::resourceslice
