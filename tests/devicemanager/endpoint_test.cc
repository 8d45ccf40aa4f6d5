#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/endpoint_impl.h"
#include "tests/devicemanager/recording_callbacks.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

EndpointOptions ShortOptions() {
  EndpointOptions options;
  options.dial_timeout = absl::Seconds(5);
  options.call_timeout = absl::Seconds(5);
  return options;
}

// StartStream connects an endpoint to `plugin` and opens its stream: the endpoint once the
// plugin's first snapshot came, else null with the failure recorded.
EndpointSharedPtr StartStream(const FakeDevicePlugin& plugin, RecordingCallbacks& callbacks) {
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  if (!endpoint.ok()) {
    ADD_FAILURE() << endpoint.status();
    return nullptr;
  }
  (*endpoint)->StartListAndWatch();
  if (!WaitFor([&] { return callbacks.snapshot_count() == 1; })) {
    ADD_FAILURE() << "no first snapshot";
    return nullptr;
  }
  return *endpoint;
}

TEST(EndpointTest, TestNewEndpoint) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {MakeDevice("ADeviceId")},
                          {.pre_start_required = true});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_EQ((*endpoint)->resource_name(), "example.com/mock");
  EXPECT_TRUE((*endpoint)->plugin_options().pre_start_required());
  EXPECT_FALSE((*endpoint)->IsStopped());
  EXPECT_EQ(plugin.get_options_calls(), 1);
  EXPECT_EQ(plugin.list_and_watch_calls(), 0);  // the stream is opened separately
}

TEST(EndpointTest, TestRun) {
  TempDir dir;
  const std::vector<v1beta1::Device> devs = {MakeDevice("ADeviceId", true),
                                             MakeDevice("AnotherDeviceId", true),
                                             MakeDevice("AThirdDeviceId", false)};
  const std::vector<v1beta1::Device> updated = {MakeDevice("ADeviceId", false),
                                                MakeDevice("AThirdDeviceId", true),
                                                MakeDevice("AFourthDeviceId", true, {0, 1})};
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", devs);
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  (*endpoint)->StartListAndWatch();

  ASSERT_TRUE(WaitFor([&] { return callbacks.snapshot_count() == 1; }));
  std::vector<Device> first = callbacks.snapshot(0);
  ASSERT_EQ(first.size(), 3u);
  for (size_t i = 0; i < devs.size(); ++i) {
    EXPECT_EQ(first[i].id, devs[i].id());
    EXPECT_EQ(first[i].health == Health::kHealthy, devs[i].health() == "Healthy");
  }

  plugin.SetDevices(updated);
  ASSERT_TRUE(WaitFor([&] { return callbacks.snapshot_count() == 2; }));
  std::vector<Device> second = callbacks.snapshot(1);
  ASSERT_EQ(second.size(), 3u);
  for (size_t i = 0; i < updated.size(); ++i) {
    EXPECT_EQ(second[i].id, updated[i].id());
    EXPECT_EQ(second[i].health == Health::kHealthy, updated[i].health() == "Healthy");
  }
  EXPECT_EQ(second[2].numa_nodes, (std::vector<int64_t>{0, 1}));

  // The plugin going away ends the stream, and the endpoint reports it.
  plugin.Stop();
  ASSERT_TRUE(WaitFor([&] { return callbacks.ended(); }));
  EXPECT_EQ(callbacks.snapshot_count(), 2u);
}

TEST(EndpointTest, AnyHealthOtherThanHealthyIsUnhealthy) {
  TempDir dir;
  v1beta1::Device odd = MakeDevice("odd");
  odd.set_health("healthy");  // wrong case: not "Healthy"
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {odd, MakeDevice("ok")});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  (*endpoint)->StartListAndWatch();
  ASSERT_TRUE(WaitFor([&] { return callbacks.snapshot_count() == 1; }));
  EXPECT_EQ(callbacks.snapshot(0)[0].health, Health::kUnhealthy);
  EXPECT_EQ(callbacks.snapshot(0)[1].health, Health::kHealthy);
  (*endpoint)->CancelStream();
  ASSERT_TRUE(WaitFor([&] { return callbacks.ended(); }));
  EXPECT_EQ(callbacks.end_status().code(), absl::StatusCode::kCancelled);
}

// The stream keeps its endpoint alive while it runs and, as it ends, hands that reference to
// OnStreamEnded, keeping none: the owner decides on which thread the endpoint goes. When the
// stream's reference was the last and it dropped it on gRPC's thread, with no other object of
// gRPC's callback API left in the process, gRPC freed its shared callback queue under that
// thread (a double free, seen in the manager's tests; EndpointCallbacks::OnStreamEnded).
TEST(EndpointTest, AStreamThatEndsHandsItsReferenceToTheEndpointOver) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {MakeDevice("ok")});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  EndpointSharedPtr endpoint = StartStream(plugin, callbacks);
  ASSERT_NE(endpoint, nullptr);
  const std::weak_ptr<Endpoint> watched = endpoint;
  endpoint.reset();  // the running stream's reference is now the only one
  EXPECT_FALSE(watched.expired());
  plugin.Stop();
  ASSERT_TRUE(WaitFor([&] { return callbacks.ended(); }));
  EXPECT_EQ(callbacks.references_at_end(), 1);
  EXPECT_FALSE(watched.expired());  // the callbacks hold it; it goes with them, on this thread
}

// As in the kubelet (grpc-go), a message that does not parse ends the stream: the endpoint
// reports INTERNAL, and nothing of the message reaches the manager.
TEST(EndpointTest, AMessageThatDoesNotParseEndsTheStream) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {MakeDevice("ok")});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  const EndpointSharedPtr endpoint = StartStream(plugin, callbacks);
  ASSERT_NE(endpoint, nullptr);
  // A device whose ID is not UTF-8: refused by protobuf's parse, so by the endpoint.
  v1beta1::ListAndWatchResponse bad;
  bad.add_devices()->set_id("ok");
  std::string bytes = bad.SerializeAsString();
  bytes.back() = '\xff';
  plugin.SetSnapshotBytes(bytes);
  ASSERT_TRUE(WaitFor([&] { return callbacks.ended(); }));
  EXPECT_EQ(callbacks.end_status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(callbacks.end_status().message(), "not valid UTF-8"))
      << callbacks.end_status();
  EXPECT_EQ(callbacks.snapshot_count(), 1u);
}

TEST(EndpointTest, TestAllocate) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {MakeDevice("10")});
  v1beta1::AllocateResponse expected;
  auto* container = expected.add_container_responses();
  (*container->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = "10";
  auto* device = container->add_devices();
  device->set_container_path("/dev/mock");
  device->set_host_path("/dev/mock10");
  device->set_permissions("mrw");
  auto* mount = container->add_mounts();
  mount->set_container_path("/lib/mock");
  mount->set_host_path("/usr/lib/mock");
  mount->set_read_only(true);
  plugin.OnAllocate([&](const v1beta1::AllocateRequest& request, v1beta1::AllocateResponse* out) {
    if (request.container_requests_size() != 1 ||
        request.container_requests(0).devices_ids_size() != 1 ||
        request.container_requests(0).devices_ids(0) != "10") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unexpected request");
    }
    *out = expected;
    return grpc::Status::OK;
  });
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto response = (*endpoint)->Allocate({"10"});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(plugin.allocate_calls(), 1);
}

TEST(EndpointTest, TestGetPreferredAllocation) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {},
                          {.get_preferred_allocation_available = true});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto response = (*endpoint)->GetPreferredAllocation({"device0", "device1", "device2", "device3"},
                                                      {"device0"}, 3);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->container_responses_size(), 1);
  const auto& ids = response->container_responses(0).deviceids();
  EXPECT_EQ(std::vector<std::string>(ids.begin(), ids.end()),
            (std::vector<std::string>{"device0", "device1", "device2"}));
}

TEST(EndpointTest, StoppedEndpointFailsEveryCall) {
  auto endpoint = Endpoint::NewStopped("example.com/mock", absl::FromUnixSeconds(100));
  EXPECT_TRUE(endpoint->IsStopped());
  EXPECT_FALSE(endpoint->StopGracePeriodExpired(absl::FromUnixSeconds(400), absl::Minutes(5)));
  EXPECT_TRUE(endpoint->StopGracePeriodExpired(absl::FromUnixSeconds(401), absl::Minutes(5)));
  const std::string expected = "endpoint example.com/mock has been stopped";
  EXPECT_EQ(endpoint->Allocate({"a"}).status(), absl::FailedPreconditionError(expected));
  EXPECT_EQ(endpoint->PreStartContainer({"a"}).status(), absl::FailedPreconditionError(expected));
  EXPECT_EQ(endpoint->GetPreferredAllocation({"a"}, {}, 1).status(),
            absl::FailedPreconditionError(expected));
}

TEST(EndpointTest, StoppedLiveEndpointDoesNotCallThePlugin) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {MakeDevice("a")});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  auto endpoint =
      EndpointImpl::Connect("example.com/mock", plugin.socket(), ShortOptions(), callbacks);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  (*endpoint)->MarkStopped(absl::Now());
  (*endpoint)->MarkStopped(absl::Now() + absl::Hours(1));  // the first stop time stays
  EXPECT_LT(*(*endpoint)->stop_time(), absl::Now() + absl::Minutes(1));
  EXPECT_EQ((*endpoint)->Allocate({"a"}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(plugin.allocate_calls(), 0);
}

TEST(EndpointTest, HungGetDevicePluginOptionsHitsTheDeadline) {
  TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("mock.sock"), "example.com/mock", {}, {.hang_get_options = true});
  ASSERT_TRUE(plugin.Start().ok());
  RecordingCallbacks callbacks;
  EndpointOptions options = ShortOptions();
  options.call_timeout = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  auto endpoint = EndpointImpl::Connect("example.com/mock", plugin.socket(), options, callbacks);
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(
      absl::StartsWith(endpoint.status().message(), "failed to get device plugin options: "))
      << endpoint.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(EndpointTest, DialGivesUpAtItsDeadlineOrWhenCancelled) {
  TempDir dir;
  // Listens, but no one ever accepts or speaks HTTP/2.
  const std::filesystem::path path = dir.Sub("mute.sock");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);

  RecordingCallbacks callbacks;
  EndpointOptions options = ShortOptions();
  options.dial_timeout = absl::Milliseconds(300);
  options.call_timeout = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  auto endpoint = EndpointImpl::Connect("example.com/mock", path, options, callbacks);
  EXPECT_FALSE(endpoint.ok());
  EXPECT_TRUE(absl::StartsWith(endpoint.status().message(), "failed to ")) << endpoint.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  // The caller's deadline, when earlier than the dial timeout, ends the dial.
  options.dial_timeout = absl::Seconds(30);
  const absl::Time limited_start = absl::Now();
  auto limited_endpoint = EndpointImpl::Connect(
      "example.com/mock", path, options, callbacks,
      ConnectLimits{.dial_deadline = limited_start + absl::Milliseconds(300)});
  EXPECT_EQ(limited_endpoint.status().code(), absl::StatusCode::kDeadlineExceeded)
      << limited_endpoint.status();
  EXPECT_LT(absl::Now() - limited_start, absl::Seconds(5));

  std::atomic<bool> cancelled{true};
  auto cancelled_endpoint = EndpointImpl::Connect("example.com/mock", path, options, callbacks,
                                                  ConnectLimits{.cancelled = &cancelled});
  EXPECT_FALSE(cancelled_endpoint.ok());
  ::close(fd);
}

}  // namespace
}  // namespace devmgr::devicemanager
