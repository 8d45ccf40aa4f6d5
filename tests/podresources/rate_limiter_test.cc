// Rate limiting: the limiter alone, then through the server (default, configured, per
// client with two client processes, and global as upstream).
#include "podresources/rate_limiter.h"

#include <gtest/gtest.h>

#include "tests/podresources/server_fixture.h"
#include "tests/testlib/subprocess.h"

namespace devmgr::podresources::testing {
namespace {

using devmgr::testing::DevmgrBinary;
using devmgr::testing::FakeClock;
using devmgr::testing::RunProcess;

TEST(RateLimiterTest, PerClientBucketsAreIndependent) {
  FakeClock clock;
  RateLimiter limiter({.qps = 1, .burst = 2, .per_client = true}, clock);
  EXPECT_TRUE(limiter.Allow("a"));
  EXPECT_TRUE(limiter.Allow("a"));
  EXPECT_FALSE(limiter.Allow("a"));
  EXPECT_TRUE(limiter.Allow("b"));
  EXPECT_EQ(limiter.BucketCountForTest(), 2u);
}

TEST(RateLimiterTest, GlobalBucketIsShared) {
  FakeClock clock;
  RateLimiter limiter({.qps = 1, .burst = 2, .per_client = false}, clock);
  EXPECT_TRUE(limiter.Allow("a"));
  EXPECT_TRUE(limiter.Allow("b"));
  EXPECT_FALSE(limiter.Allow("c"));
}

TEST(RateLimiterTest, ZeroQpsTurnsLimitingOff) {
  FakeClock clock;
  RateLimiter limiter({.qps = 0, .burst = 1, .per_client = false}, clock);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(limiter.Allow("a"));
}

TEST(RateLimiterTest, ForgetsRefilledBucketsOfManyClients) {
  FakeClock clock;
  RateLimiter limiter({.qps = 10, .burst = 1, .per_client = true}, clock);
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(limiter.Allow("client-" + std::to_string(i)));
    clock.Advance(absl::Milliseconds(1));
  }
  // Buckets refill in 100 ms; only the recent ones can still be partly empty.
  EXPECT_LT(limiter.BucketCountForTest(), 1200u);
}

class PodResourcesRateLimitTest : public ServerFixture {
 protected:
  // Requests made before the first rejection, on `stub` (time frozen).
  int AcceptedBeforeRejection(::v1::PodResourcesLister::Stub& stub) {
    for (int i = 0; i < 1000; ++i) {
      grpc::ClientContext context;
      ::v1::ListPodResourcesResponse response;
      const grpc::Status status = stub.List(&context, {}, &response);
      if (!status.ok()) {
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
        EXPECT_EQ(status.error_message(), "rejected by rate limit");
        return i;
      }
    }
    return 1000;
  }

  // Runs `devmgr podresources list` against the server from another process.
  int ListFromAnotherProcess() {
    return RunProcess({DevmgrBinary(), "podresources", "list", "--socket",
                       dir_.Sub("kubelet.sock").string()})
        .exit_code;
  }
};

TEST_F(PodResourcesRateLimitTest, DefaultLimitIsUpstreamsBurst) {
  Start();
  EXPECT_EQ(AcceptedBeforeRejection(*v1_), kDefaultBurstTokens);
  // Every method shares the bucket, as upstream's one interceptor does.
  ::v1::AllocatableResourcesResponse allocatable;
  EXPECT_EQ(Allocatable(allocatable).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ::v1alpha1::ListPodResourcesResponse alpha;
  grpc::ClientContext context;
  EXPECT_EQ(v1alpha1_->List(&context, {}, &alpha).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  clock_.Advance(absl::Milliseconds(10));  // 100 qps: one more token
  ::v1::ListPodResourcesResponse response;
  EXPECT_TRUE(List(response).ok());
  EXPECT_GE(server_->counters().rate_limited.load(), 3u);
}

TEST_F(PodResourcesRateLimitTest, ConfiguredLimit) {
  ServerOptions options;
  options.rate_limit = {.qps = 1, .burst = 3, .per_client = true};
  Start(options);
  EXPECT_EQ(AcceptedBeforeRejection(*v1_), 3);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(AcceptedBeforeRejection(*v1_), 1);
}

TEST_F(PodResourcesRateLimitTest, ConnectionsOfOneProcessShareItsBucket) {
  Start();
  EXPECT_EQ(AcceptedBeforeRejection(*v1_), kDefaultBurstTokens);
  std::shared_ptr<grpc::Channel> second = Connect();
  auto stub = ::v1::PodResourcesLister::NewStub(second);
  EXPECT_EQ(AcceptedBeforeRejection(*stub), 0);
}

TEST_F(PodResourcesRateLimitTest, PerClientLimitDoesNotStarveAnotherClient) {
  Start();
  EXPECT_EQ(AcceptedBeforeRejection(*v1_), kDefaultBurstTokens);
  // Another process has a bucket of its own.
  EXPECT_EQ(ListFromAnotherProcess(), 0);
}

TEST_F(PodResourcesRateLimitTest, GlobalLimitIsSharedByAllClients) {
  ServerOptions options;
  options.rate_limit.per_client = false;
  Start(options);
  EXPECT_EQ(AcceptedBeforeRejection(*v1_), kDefaultBurstTokens);
  EXPECT_EQ(ListFromAnotherProcess(), 1);  // refused
}

}  // namespace
}  // namespace devmgr::podresources::testing
