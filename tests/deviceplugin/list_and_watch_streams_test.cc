// The SDK's ListAndWatch streams on a real unix socket: the first message is the current
// snapshot, Publish reaches every open stream, EndAll ends the open streams and keeps serving,
// Close refuses new ones, and a request that does not parse is refused with INTERNAL.
#include "deviceplugin/list_and_watch_streams.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/unix_socket.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::deviceplugin {
namespace {

using testing::TempDir;
using testing::WaitFor;

ListAndWatchStreams::Snapshot Snapshot(const std::vector<std::string>& ids) {
  v1beta1::ListAndWatchResponse message;
  for (const std::string& id : ids) {
    v1beta1::Device* device = message.add_devices();
    device->set_id(id);
    device->set_health("Healthy");
  }
  return ListAndWatchStreams::SnapshotOf(message.SerializeAsString());
}

std::vector<std::string> Ids(const v1beta1::ListAndWatchResponse& response) {
  std::vector<std::string> ids;
  for (const auto& device : response.devices()) ids.push_back(device.id());
  return ids;
}

// A DevicePlugin service that only streams.
class StreamingService final : public v1beta1::DevicePlugin::WithRawCallbackMethod_ListAndWatch<
                                   v1beta1::DevicePlugin::CallbackService> {
 public:
  explicit StreamingService(ListAndWatchStreams& streams) : streams_(streams) {}
  grpc::ServerWriteReactor<grpc::ByteBuffer>* ListAndWatch(
      grpc::CallbackServerContext* /*context*/, const grpc::ByteBuffer* request) override {
    return streams_.Open(*request);
  }

 private:
  ListAndWatchStreams& streams_;
};

// One ListAndWatch call read on the test's thread.
class Reader {
 public:
  explicit Reader(v1beta1::DevicePlugin::Stub& stub) : stream_(stub.ListAndWatch(&context_, {})) {}
  ~Reader() { context_.TryCancel(); }

  // Next is the next message, or nullopt once the stream has ended.
  std::optional<std::vector<std::string>> Next() {
    v1beta1::ListAndWatchResponse response;
    if (!stream_->Read(&response)) return std::nullopt;
    return Ids(response);
  }
  grpc::Status Finish() { return stream_->Finish(); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> stream_;
};

class ListAndWatchStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(UnixTarget(dir_.Sub("plugin.sock")),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(UnixTarget(dir_.Sub("plugin.sock")),
                                                               grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    streams_.Close();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    streams_.WaitForAllDone();
    server_->Wait();
  }

  TempDir dir_;
  ListAndWatchStreams streams_{Snapshot({"a"}), "gpu", nullptr};
  StreamingService service_{streams_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(ListAndWatchStreamsTest, SendsTheCurrentSnapshotThenEveryPublishedOne) {
  Reader first(*stub_);
  EXPECT_EQ(first.Next(), (std::vector<std::string>{"a"}));
  streams_.Publish(Snapshot({"a", "b"}));
  EXPECT_EQ(first.Next(), (std::vector<std::string>{"a", "b"}));
  // A stream opened later starts from the newest snapshot.
  Reader second(*stub_);
  EXPECT_EQ(second.Next(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(streams_.OpenCount(), 2);
}

TEST_F(ListAndWatchStreamsTest, EndAllEndsOpenStreamsAndKeepsServing) {
  {
    Reader reader(*stub_);
    ASSERT_TRUE(reader.Next().has_value());
    streams_.EndAll(grpc::Status::OK);
    EXPECT_FALSE(reader.Next().has_value());
    EXPECT_TRUE(reader.Finish().ok());
  }
  ASSERT_TRUE(WaitFor([&] { return streams_.OpenCount() == 0; }));
  Reader again(*stub_);
  EXPECT_EQ(again.Next(), (std::vector<std::string>{"a"}));
}

TEST_F(ListAndWatchStreamsTest, CloseRefusesNewStreams) {
  streams_.Close();
  Reader reader(*stub_);
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_EQ(reader.Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ListAndWatchStreamsTest, ARequestThatDoesNotParseEndsTheStreamWithInternal) {
  // The raw method reads its request itself: field 1, length-delimited, with a length cut off.
  const std::string malformed = "\x0a\xff";
  grpc::GenericStub stub(
      grpc::CreateChannel(UnixTarget(dir_.Sub("plugin.sock")), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  grpc::CompletionQueue queue;
  // Each step is started with its own tag and awaited before the next.
  auto await = [&queue](intptr_t tag) {
    void* got = nullptr;
    bool ok = false;
    EXPECT_TRUE(queue.Next(&got, &ok));
    EXPECT_EQ(got, reinterpret_cast<void*>(tag));
    return ok;
  };
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, "/v1beta1.DevicePlugin/ListAndWatch", &queue);
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(await(1));
  grpc::Slice slice(malformed);
  call->WriteLast(grpc::ByteBuffer(&slice, 1), grpc::WriteOptions(), reinterpret_cast<void*>(2));
  await(2);
  grpc::ByteBuffer message;
  call->Read(&message, reinterpret_cast<void*>(3));
  EXPECT_FALSE(await(3));  // no snapshot
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  ASSERT_TRUE(await(4));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  // A request that parses still gets the snapshot.
  Reader reader(*stub_);
  EXPECT_EQ(reader.Next(), (std::vector<std::string>{"a"}));
}

}  // namespace
}  // namespace devmgr::deviceplugin
