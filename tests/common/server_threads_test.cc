#include "common/server_threads.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "devmgr/admin/v1/api.grpc.pb.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

namespace admin = devmgr::admin::v1;

// A sync service whose calls come in waves of `wave`: each call waits in its handler until the
// whole wave is in (so that the server runs them all at once), and notes the thread it ran on.
class WaveService final : public admin::Admin::Service {
 public:
  explicit WaveService(int wave) : wave_(wave) {}

  grpc::Status ListPods(grpc::ServerContext* /*context*/, const admin::ListPodsRequest* /*request*/,
                        admin::ListPodsResponse* /*response*/) override {
    absl::MutexLock lock(&mu_);
    threads_.insert(gettid());
    const int wave_end = (arrived_ / wave_ + 1) * wave_;
    ++arrived_;
    const auto wave_in = [this, wave_end]()
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return arrived_ >= wave_end; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&wave_in), absl::Seconds(20))) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the wave never came in whole");
    }
    return grpc::Status::OK;
  }

  size_t DistinctThreads() {
    absl::MutexLock lock(&mu_);
    return threads_.size();
  }

 private:
  const int wave_;
  absl::Mutex mu_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<pid_t> threads_ ABSL_GUARDED_BY(mu_);
};

// gRPC's own limit of two polling threads makes each wave start and end about five threads
// (some sixty over the waves here); kept, the threads of the first waves serve every later one.
TEST(ServerThreadsTest, HandlerThreadsAreKeptAcrossWavesOfConcurrentCalls) {
  constexpr int kWave = 6;
  constexpr int kWaves = 12;
  static_assert(2 * kWave + 1 <= kPollingThreadsKept);
  testing::TempDir dir;
  WaveService service(kWave);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(dir.Sub("s.sock")), grpc::InsecureServerCredentials());
  KeepHandlerThreads(builder);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = admin::Admin::NewStub(
      grpc::CreateChannel(UnixTarget(dir.Sub("s.sock")), grpc::InsecureChannelCredentials()));

  for (int w = 0; w < kWaves; ++w) {
    std::vector<grpc::Status> results(kWave);
    std::vector<std::thread> callers;
    for (int i = 0; i < kWave; ++i) {
      callers.emplace_back([&, i] {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        admin::ListPodsResponse response;
        results[i] = stub->ListPods(&context, admin::ListPodsRequest(), &response);
      });
    }
    for (std::thread& caller : callers) caller.join();
    for (const grpc::Status& result : results) {
      ASSERT_TRUE(result.ok()) << "wave " << w << ": " << result.error_message();
    }
  }
  // A wave needs a thread for each of its calls and one still polling, and may come in before
  // the last wave's threads are back to polling: never more than 2 * kWave + 1 threads, all of
  // them kept, so none ends and none starts in its place.
  EXPECT_LE(service.DistinctThreads(), static_cast<size_t>(2 * kWave + 1));
  server->Shutdown();
}

}  // namespace
}  // namespace devmgr
