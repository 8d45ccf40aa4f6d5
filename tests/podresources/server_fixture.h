// A PodResources server on a socket in a temporary folder, fed by fake providers, with a
// client channel to it; and helpers to compare protos written as text.
#pragma once

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "podresources/client.h"
#include "podresources/server.h"
#include "podresources/v1/api.grpc.pb.h"
#include "podresources/v1alpha1/api.grpc.pb.h"
#include "tests/podresources/fake_providers.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/raw_call.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::podresources::testing {

using ::devmgr::testing::RawAnswer;
using ::devmgr::testing::RawCall;

// ParseText parses `text` as a `Message`; fails the test if it does not parse.
template <typename Message>
Message ParseText(const std::string& text) {
  Message message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message;
}

// ProtoEquals: a gtest assertion with both messages printed on failure.
inline ::testing::AssertionResult ProtoEquals(const google::protobuf::Message& expected,
                                              const google::protobuf::Message& actual) {
  if (google::protobuf::util::MessageDifferencer::Equals(expected, actual)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "expected:\n"
                                       << expected.DebugString() << "actual:\n"
                                       << actual.DebugString();
}

inline Pod MakePod(const std::string& uid, const std::string& name,
                   std::vector<std::string> containers,
                   const std::string& namespace_name = "pod-namespace") {
  Pod pod{uid, name, namespace_name, {}, {}};
  for (std::string& container : containers) pod.containers.push_back({std::move(container), ""});
  return pod;
}

class ServerFixture : public ::testing::Test {
 protected:
  // Start serves with `options` (socket path and clock filled in here), from every fake
  // provider of node_ or from `providers`.
  void Start(ServerOptions options = {}, std::optional<Providers> providers = {}) {
    options.socket_path = dir_.Sub("kubelet.sock");
    if (options.clock == nullptr) options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<PodResourcesServer>> server =
        PodResourcesServer::Create(options, providers.value_or(node_.providers()), nullptr);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = Connect();
    ASSERT_NE(channel_, nullptr);
    v1_ = ::v1::PodResourcesLister::NewStub(channel_);
    v1alpha1_ = ::v1alpha1::PodResourcesLister::NewStub(channel_);
  }

  // Connect opens another channel (another connection) to the server.
  std::shared_ptr<grpc::Channel> Connect(int max_receive = kDefaultMaxReceiveMessageBytes) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        Dial({dir_.Sub("kubelet.sock"), absl::Seconds(10), max_receive});
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *channel : nullptr;
  }

  grpc::Status List(::v1::ListPodResourcesResponse& response) {
    grpc::ClientContext context;
    return v1_->List(&context, {}, &response);
  }

  grpc::Status Get(const std::string& namespace_name, const std::string& name,
                   ::v1::GetPodResourcesResponse& response) {
    grpc::ClientContext context;
    ::v1::GetPodResourcesRequest request;
    request.set_pod_namespace(namespace_name);
    request.set_pod_name(name);
    return v1_->Get(&context, request, &response);
  }

  grpc::Status Allocatable(::v1::AllocatableResourcesResponse& response) {
    grpc::ClientContext context;
    return v1_->GetAllocatableResources(&context, {}, &response);
  }

  void TearDown() override {
    v1_.reset();
    v1alpha1_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
  }

  devmgr::testing::TempDir dir_;
  devmgr::testing::FakeClock clock_;
  FakeNode node_;
  std::unique_ptr<PodResourcesServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::v1::PodResourcesLister::Stub> v1_;
  std::unique_ptr<::v1alpha1::PodResourcesLister::Stub> v1alpha1_;
};

}  // namespace devmgr::podresources::testing
