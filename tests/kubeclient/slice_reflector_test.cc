// The reflector against the fake API server: a list, then a watch that follows every change;
// resumed after a cut without a new list; a new list after 410 whose differences come out as
// changes; bookmarks that keep the resume point ahead of a compaction; failures retried.
#include "kubeclient/slice_reflector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/synchronization/notification.h"
#include "tests/testlib/at_once.h"
#include "tests/testlib/fake_api_server.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::kubeclient {
namespace {

using ::devmgr::testing::FakeApiServer;
using ::devmgr::testing::FakeFailure;
using ::devmgr::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using Json = nlohmann::json;

Json Slice(const std::string& name, const std::string& driver) {
  return Json{{"kind", "ResourceSlice"},
              {"metadata", {{"name", name}}},
              {"spec",
               {{"driver", driver},
                {"pool", {{"name", "p"}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
}

// The changes a reflector reported, as "+name", "~name", "-name".
class Recorder {
 public:
  void operator()(const kubeapi::ResourceSlice* before, const kubeapi::ResourceSlice* after) {
    std::lock_guard<std::mutex> lock(mu_);
    if (before == nullptr) {
      changes_.push_back("+" + after->metadata.name);
    } else if (after == nullptr) {
      changes_.push_back("-" + before->metadata.name);
    } else {
      changes_.push_back("~" + after->metadata.name);
    }
  }
  std::vector<std::string> changes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::string> changes_;
};

class SliceReflectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(server_.Config());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  std::unique_ptr<SliceReflector> Start(const std::string& field_selector = "",
                                        absl::Duration initial_backoff = absl::Milliseconds(10),
                                        absl::Duration min_watch_timeout = absl::Minutes(5),
                                        absl::Duration backoff_reset = absl::Minutes(2)) {
    SliceReflectorOptions options;
    options.client = client_.get();
    options.field_selector = field_selector;
    options.on_change = [this](const kubeapi::ResourceSlice* before,
                               const kubeapi::ResourceSlice* after) { recorder_(before, after); };
    options.on_error = [this](const absl::Status& status) {
      std::lock_guard<std::mutex> lock(error_mu_);
      ++errors_;
      last_error_ = status;
    };
    options.initial_backoff = initial_backoff;
    options.min_watch_timeout = min_watch_timeout;
    options.backoff_reset = backoff_reset;
    absl::StatusOr<std::unique_ptr<SliceReflector>> reflector =
        SliceReflector::Start(std::move(options));
    EXPECT_TRUE(reflector.ok()) << reflector.status();
    return *std::move(reflector);
  }

  bool Watching() {
    return WaitFor([&] { return server_.open_watches() == 1; });
  }

  FakeApiServer server_;
  std::unique_ptr<Client> client_;
  Recorder recorder_;
  std::atomic<int> errors_{0};
  std::mutex error_mu_;
  absl::Status last_error_;
};

TEST_F(SliceReflectorTest, ListsThenFollowsEveryChange) {
  server_.AddSlice(Slice("a", "gpu.example.com"));
  server_.AddSlice(Slice("other", "nic.example.com"));
  std::unique_ptr<SliceReflector> reflector = Start("spec.driver=gpu.example.com");
  ASSERT_TRUE(Watching());
  EXPECT_THAT(recorder_.changes(), ElementsAre("+a"));

  server_.AddSlice(Slice("b", "gpu.example.com"));
  Json changed = Slice("a", "gpu.example.com");
  changed["spec"]["pool"]["generation"] = 2;
  server_.AddSlice(changed);
  server_.RemoveSlice("b");
  const std::string last_selected = server_.resource_version();
  server_.AddSlice(Slice("ignored", "nic.example.com"));
  ASSERT_TRUE(WaitFor([&] { return recorder_.changes().size() == 4; }));
  EXPECT_THAT(recorder_.changes(), ElementsAre("+a", "+b", "~a", "-b"));
  const std::optional<SliceReflector::Snapshot> copy = reflector->Slices();
  ASSERT_TRUE(copy.has_value());
  ASSERT_EQ(copy->slices.size(), 1u);
  EXPECT_EQ(copy->slices[0]->spec.pool.generation, 2);
  // At the last change it was told of (the watch selects none after it).
  EXPECT_EQ(copy->resource_version, last_selected);
  EXPECT_EQ(reflector->lists(), 1);
}

// The list counts (what the API store's Synced reads) only once its slices have been handed to
// on_change, as an informer is synced once its handlers have had the list: a host that sees it
// synced has been told of every slice found. Before, the count came first.
TEST_F(SliceReflectorTest, AListCountsOnceItsSlicesHaveBeenHandedOver) {
  server_.AddSlice(Slice("a", "gpu.example.com"));
  std::atomic<SliceReflector*> started{nullptr};
  absl::Notification published;
  std::atomic<int> lists_seen{-1};
  SliceReflectorOptions options;
  options.client = client_.get();
  options.on_change = [&](const kubeapi::ResourceSlice*, const kubeapi::ResourceSlice*) {
    // The first list's handoff waits until the test has the reflector.
    if (published.WaitForNotificationWithTimeout(absl::Seconds(10))) {
      lists_seen = started.load()->lists();
    }
  };
  absl::StatusOr<std::unique_ptr<SliceReflector>> reflector =
      SliceReflector::Start(std::move(options));
  ASSERT_TRUE(reflector.ok()) << reflector.status();
  started = reflector->get();
  published.Notify();
  ASSERT_TRUE(WaitFor([&] { return (*reflector)->lists() == 1; }));
  EXPECT_EQ(lists_seen.load(), 0) << "counted while its slices were being handed over";
}

TEST_F(SliceReflectorTest, ACutWatchIsResumedWithoutMissingAnything) {
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(Watching());
  server_.CutWatches();
  // The cut is reported (the watch ends in half an event). Waiting for it first, so that the
  // change below cannot still go out on the old watch before the cut.
  ASSERT_TRUE(WaitFor([&] { return errors_.load() >= 1; }));
  // Made while no watch may be open: the resumed watch still brings it, from its history.
  server_.AddSlice(Slice("a", "gpu.example.com"));
  ASSERT_TRUE(WaitFor([&] { return recorder_.changes().size() == 1; }));
  EXPECT_THAT(recorder_.changes(), ElementsAre("+a"));
  EXPECT_EQ(reflector->lists(), 1);
}

TEST_F(SliceReflectorTest, TooOldAVersionMeansANewListWhoseDifferencesAreChanges) {
  server_.AddSlice(Slice("a", "gpu.example.com"));
  server_.AddSlice(Slice("b", "gpu.example.com"));
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(Watching());
  recorder_.Clear();
  // Changes the reflector cannot see (its watch is cut), then the history forgets them.
  server_.SetHang(true);
  server_.CutWatches();
  ASSERT_TRUE(WaitFor([&] { return server_.open_watches() == 0; }));
  server_.RemoveSlice("a");
  server_.AddSlice(Slice("c", "gpu.example.com"));
  server_.Compact();
  server_.SetHang(false);
  ASSERT_TRUE(WaitFor([&] { return reflector->lists() == 2 && recorder_.changes().size() == 2; }));
  EXPECT_THAT(recorder_.changes(), UnorderedElementsAre("-a", "+c"));
  std::vector<std::string> names;
  const std::optional<SliceReflector::Snapshot> copy = reflector->Slices();
  ASSERT_TRUE(copy.has_value());
  for (const auto& slice : copy->slices) names.push_back(slice->metadata.name);
  EXPECT_THAT(names, ElementsAre("b", "c"));
}

// The new list after a 410 waits the back-off, as client-go's reflector waits before its next
// ListAndWatch: a server that answered every watch so would otherwise be listed in a loop. The
// first watch asks to end after a second or two, which the server does, and the next one is
// answered 410: with a back-off of an hour, no second list comes before Stop (before, it came at
// once).
TEST_F(SliceReflectorTest, TheNewListAfterTooOldAVersionWaitsTheBackOff) {
  std::unique_ptr<SliceReflector> reflector = Start("", absl::Hours(1), absl::Seconds(1));
  ASSERT_TRUE(Watching());
  FakeFailure failure;
  failure.method = "GET";
  failure.code = 410;
  failure.reason = "Expired";
  server_.FailNext(failure);
  const auto watches = [&] {
    int count = 0;
    for (const auto& request : server_.Requests()) {
      count += request.target.find("watch=") != std::string::npos ? 1 : 0;
    }
    return count;
  };
  ASSERT_TRUE(WaitFor([&] { return watches() >= 2; }));
  EXPECT_FALSE(WaitFor([&] { return reflector->lists() == 2; }, std::chrono::seconds(1)));
  EXPECT_EQ(errors_.load(), 0) << "a 410 is no error";
  reflector->Stop();
}

TEST_F(SliceReflectorTest, BookmarksKeepTheResumePointAheadOfACompaction) {
  std::unique_ptr<SliceReflector> reflector = Start("spec.driver=gpu.example.com");
  ASSERT_TRUE(Watching());
  // Writes the watch does not select move the server's version on; a bookmark tells the
  // reflector, so resuming after a compaction needs no new list.
  for (int i = 0; i < 3; ++i) server_.AddSlice(Slice("n" + std::to_string(i), "nic.example.com"));
  const std::string newest = server_.resource_version();
  // The fake sends a bookmark before it cuts a watch, so the next watch starts from it.
  server_.Bookmark();
  server_.CutWatches();
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& request : server_.Requests()) {
      if (request.target.find("resourceVersion=" + newest) != std::string::npos) return true;
    }
    return false;
  }));
  server_.Compact();
  server_.CutWatches();
  server_.AddSlice(Slice("g", "gpu.example.com"));
  ASSERT_TRUE(WaitFor([&] { return recorder_.changes().size() == 1; }));
  EXPECT_EQ(reflector->lists(), 1);
}

TEST_F(SliceReflectorTest, AFailingListIsRetried) {
  server_.AddSlice(Slice("a", "gpu.example.com"));
  FakeFailure failure;
  failure.method = "GET";
  failure.code = 500;
  failure.times = 3;
  server_.FailNext(failure);
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(WaitFor([&] { return recorder_.changes().size() == 1; }));
  EXPECT_EQ(errors_.load(), 3);
  EXPECT_EQ(reflector->lists(), 1);
}

// The back-off starts again from its first step after a spell without pauses, as client-go's
// backoff manager resets (here every pause is after such a spell). Without the reset, ten
// failures in a row would pause 20 ms, 40 ms, ... 10 s, more than 20 s in all.
TEST_F(SliceReflectorTest, TheBackOffStartsAgainAfterAQuietSpell) {
  FakeFailure failure;
  failure.method = "GET";
  failure.code = 500;
  failure.times = 10;
  server_.FailNext(failure);
  std::unique_ptr<SliceReflector> reflector =
      Start("", absl::Milliseconds(20), absl::Minutes(5), absl::ZeroDuration());
  EXPECT_TRUE(WaitFor([&] { return reflector->lists() == 1; }, std::chrono::seconds(10)));
  EXPECT_EQ(errors_.load(), 10);
}

// client-go's reflector starts over with a list after a watch that fails other than by a lost
// connection, a throttle or a server error: a server that refuses watches (403) is not asked for
// one watch after another from a copy that no longer changes.
TEST_F(SliceReflectorTest, AWatchTheServerRefusesStartsOverWithAList) {
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(Watching());
  FakeFailure failure;
  failure.method = "GET";
  failure.code = 403;
  failure.reason = "Forbidden";
  server_.FailNext(failure);
  server_.CutWatches();
  ASSERT_TRUE(WaitFor([&] { return reflector->lists() == 2; }));
  ASSERT_TRUE(Watching());
  std::lock_guard<std::mutex> lock(error_mu_);
  EXPECT_EQ(last_error_.code(), absl::StatusCode::kPermissionDenied) << last_error_;
}

// A server error in a watch is not retried on the same version: client-go's reflector lists
// again (it retries only with a MaxInternalErrorRetryDuration, which informers are not given).
TEST_F(SliceReflectorTest, AWatchThatFailsWithAServerErrorStartsOverWithAList) {
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(Watching());
  int lists = 1;
  for (const auto& [code, reason, status] :
       std::vector<std::tuple<int, std::string, absl::StatusCode>>{
           {500, "InternalError", absl::StatusCode::kInternal},
           {503, "ServiceUnavailable", absl::StatusCode::kUnavailable}}) {
    FakeFailure failure;
    failure.method = "GET";
    failure.code = code;
    failure.reason = reason;
    server_.FailNext(failure);
    server_.CutWatches();
    ++lists;
    ASSERT_TRUE(WaitFor([&] { return reflector->lists() == lists; })) << code;
    ASSERT_TRUE(Watching());
    std::lock_guard<std::mutex> lock(error_mu_);
    EXPECT_EQ(last_error_.code(), status) << last_error_;
  }
}

// A watch the server ends at once with nothing in it (a proxy that does not pass watches
// through) is a failure, as client-go's "very short watch": the reflector backs off and lists
// again instead of asking for watch after watch without a pause.
TEST_F(SliceReflectorTest, AWatchThatEndsAtOnceAndEmptyIsAFailure) {
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(Watching());
  server_.EndWatchesAtOnce(true);
  server_.CutWatches();
  ASSERT_TRUE(WaitFor([&] { return reflector->lists() >= 2; }));
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    EXPECT_THAT(std::string(last_error_.message()), ::testing::HasSubstr("very short watch"));
  }
  server_.EndWatchesAtOnce(false);
  EXPECT_TRUE(Watching());
}

// A list the server answers 503 with Retry-After is tried again after that many seconds (here
// 20, under the request timeout, so the client pauses); Stop ends the pause instead of waiting
// it out (client-go's sleep with its context).
TEST_F(SliceReflectorTest, StopEndsAListsRetryPauseAtOnce) {
  FakeFailure failure;
  failure.method = "GET";
  failure.code = 503;
  failure.reason = "ServiceUnavailable";
  failure.retry_after_seconds = 20;
  server_.FailNext(failure);
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(WaitFor([&] { return server_.CountRequests("GET", "/") == 1; }));
  const absl::Time start = absl::Now();
  reflector->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(reflector->lists(), 0);
}

// The watch would stay open for its 5 minutes at least; Stop ends it at once (10 s allows for
// a loaded machine, and is far from those minutes).
TEST_F(SliceReflectorTest, StopEndsAQuietWatchAtOnce) {
  std::unique_ptr<SliceReflector> reflector = Start();
  ASSERT_TRUE(Watching());
  const absl::Time start = absl::Now();
  reflector->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

// Stop called from several threads at once: one joins the thread, the others wait for it (two
// joins of one thread are undefined: here they hung).
TEST_F(SliceReflectorTest, StopFromSeveralThreadsAtOnceJoinsTheThreadOnce) {
  for (int round = 0; round < 10; ++round) {
    std::unique_ptr<SliceReflector> reflector = Start();
    ASSERT_TRUE(WaitFor([&] { return reflector->lists() == 1; }));
    testing::RunAtOnce(4, [&] { reflector->Stop(); });
  }
}

}  // namespace
}  // namespace devmgr::kubeclient
