// The Watch extension: ordering, resume by revision, periodic resync, slow consumers, many
// watchers, pod churn, per-client stream limits and shutdown.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/strings/match.h"
#include "podresources/watch_service.h"
#include "tests/podresources/server_fixture.h"
#include "tests/podresources/watch_client.h"

namespace devmgr::podresources::testing {
namespace {

class PodResourcesWatchTest : public ServerFixture {
 protected:
  void StartWatch(WatchOptions watch = {}) {
    ServerOptions options;
    options.rate_limit.qps = 0;  // the limit has tests of its own
    options.watch = watch;
    Start(options);
  }

  // The revision of the snapshot a Watch opened now gets, the stream then closed: where a
  // client resumes from.
  void ReadSnapshotRevision(uint64_t& revision) {
    WatchClient watch(channel_);
    ASSERT_TRUE(watch.WaitForEvents(1));
    revision = watch.last_revision();
  }

  // Adds a pod to the fake host and tells the server, as a host does after admission.
  void Admit(const Pod& pod, ResourceDeviceInstances devices = {}) {
    node_.pods.Upsert(pod);
    node_.devices.SetDevices(pod.uid, pod.containers.at(0).name, std::move(devices));
    server_->notifier().PodUpdated(pod);
  }
  void RemovePod(const std::string& uid) {
    node_.pods.Remove(uid);
    server_->notifier().PodRemoved(uid);
  }

  // Admits pods of about 8 KB each, 50 at a time, until a stream that does not read is ended
  // for falling behind (or 5,000 pods); returns how many.
  int AdmitUntilAStreamIsEndedSlow() {
    ResourceDeviceInstances many;
    for (int d = 0; d < 100; ++d) {
      many["example.com/device"]["device-with-a-rather-long-id-0000-" + std::to_string(d)] = {0};
    }
    int admitted = 0;
    while (admitted < 5000 && server_->counters().watch_streams_ended_slow.load() == 0) {
      for (int i = 0; i < 50; ++i, ++admitted) {
        Admit(MakePod("uid-" + std::to_string(admitted), "p" + std::to_string(admitted), {"c"}),
              many);
      }
      server_->hub_for_test().Drain();
    }
    return admitted;
  }

  std::map<std::string, ::v1::PodResources> ListedState() {
    ::v1::ListPodResourcesResponse response;
    EXPECT_TRUE(List(response).ok());
    std::map<std::string, ::v1::PodResources> state;
    for (const auto& pod : response.pod_resources()) {
      state[pod.namespace_() + "/" + pod.name()] = pod;
    }
    return state;
  }
};

bool SameState(const std::map<std::string, ::v1::PodResources>& a,
               const std::map<std::string, ::v1::PodResources>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, pod] : a) {
    auto it = b.find(key);
    if (it == b.end() || !ProtoEquals(pod, it->second)) return false;
  }
  return true;
}

void ExpectIncreasingRevisions(const std::vector<WatchResponse>& events) {
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_GT(events[i].revision(), events[i - 1].revision()) << "event " << i;
  }
}

TEST_F(PodResourcesWatchTest, SnapshotThenOrderedEvents) {
  node_.pods.SetPods({MakePod("uid-a", "a", {"c"}), MakePod("uid-b", "b", {"c"})});
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  const WatchResponse snapshot = watch.events()[0];
  EXPECT_EQ(snapshot.kind(), WatchResponse::SNAPSHOT);
  ASSERT_EQ(snapshot.pod_resources_size(), 2);
  EXPECT_EQ(snapshot.pod_resources(0).name(), "a");

  Admit(MakePod("uid-c", "c", {"c"}), {{"example.com/gpu", {{"gpu0", {0}}}}});
  Admit(MakePod("uid-a", "a", {"c"}), {{"example.com/gpu", {{"gpu1", {1}}}}});
  RemovePod("uid-b");
  ASSERT_TRUE(watch.WaitForEvents(4));
  const std::vector<WatchResponse> events = watch.events();
  EXPECT_EQ(events[1].kind(), WatchResponse::ADDED);
  EXPECT_EQ(events[1].pod_uid(), "uid-c");
  EXPECT_EQ(events[2].kind(), WatchResponse::UPDATED);
  EXPECT_EQ(events[2].pod_uid(), "uid-a");
  EXPECT_EQ(events[3].kind(), WatchResponse::DELETED);
  EXPECT_EQ(events[3].pod_resources(0).name(), "b");
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ(events[i].revision(), snapshot.revision() + i);
  }
  EXPECT_TRUE(SameState(watch.State(), ListedState()));
}

// Two pods may share a namespace and name (one made again while the old one still holds
// devices): the snapshot says which entry is which pod, as the events that follow do, and
// orders them by UID. Before, it carried no UIDs.
TEST_F(PodResourcesWatchTest, TheSnapshotNamesEachPodsUid) {
  node_.pods.SetPods({MakePod("uid-z", "b", {"c"}), MakePod("uid-old", "a", {"c"}),
                      MakePod("uid-new", "a", {"c"})});
  node_.devices.SetDevices("uid-old", "c", {{"example.com/gpu", {{"gpu0", {0}}}}});
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  const WatchResponse snapshot = watch.events()[0];
  ASSERT_EQ(snapshot.pod_resources_size(), 3);
  ASSERT_EQ(snapshot.pod_uids_size(), 3);
  EXPECT_EQ(snapshot.pod_uids(0), "uid-new");
  EXPECT_EQ(snapshot.pod_uids(1), "uid-old");
  EXPECT_EQ(snapshot.pod_uids(2), "uid-z");
  EXPECT_EQ(snapshot.pod_resources(0).containers(0).devices_size(), 0);
  EXPECT_EQ(snapshot.pod_resources(1).containers(0).devices_size(), 1);
  EXPECT_EQ(snapshot.pod_resources(2).name(), "b");
}

// Nobody watched before: pods there at the start and pods admitted since are all in the first
// watcher's snapshot, which stays at the first revision (nothing was published before it).
TEST_F(PodResourcesWatchTest, TheFirstWatcherGetsEveryPodInASnapshotAtTheFirstRevision) {
  node_.pods.SetPods({MakePod("uid-a", "a", {"c"}), MakePod("uid-b", "b", {"c"})});
  StartWatch();
  Admit(MakePod("uid-c", "c", {"c"}), {{"example.com/gpu", {{"gpu0", {0}}}}});
  RemovePod("uid-b");
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  const WatchResponse snapshot = watch.events()[0];
  EXPECT_EQ(snapshot.kind(), WatchResponse::SNAPSHOT);
  EXPECT_EQ(snapshot.revision(), static_cast<uint64_t>(absl::ToUnixMicros(clock_.Now())));
  EXPECT_TRUE(SameState(watch.State(), ListedState()));

  Admit(MakePod("uid-d", "d", {"c"}));
  ASSERT_TRUE(watch.WaitForEvents(2));
  EXPECT_EQ(watch.events()[1].kind(), WatchResponse::ADDED);
  EXPECT_EQ(watch.events()[1].revision(), snapshot.revision() + 1);
}

TEST_F(PodResourcesWatchTest, NotificationWithoutChangeSendsNothing) {
  node_.pods.SetPods({MakePod("uid-a", "a", {"c"})});
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  server_->notifier().PodUpdated(MakePod("uid-a", "a", {"c"}));  // nothing changed
  Admit(MakePod("uid-b", "b", {"c"}));
  ASSERT_TRUE(watch.WaitForEvents(2));
  server_->hub_for_test().Drain();
  const std::vector<WatchResponse> events = watch.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].pod_uid(), "uid-b");
  EXPECT_EQ(events[1].revision(), events[0].revision() + 1);
}

// Device health (KEP-4680) rides beside each pod: in the snapshot, in the order of
// pod_resources, and a change of health alone is an UPDATED event with the new health.
TEST_F(PodResourcesWatchTest, HealthChangeIsAnUpdateWithTheNewHealth) {
  node_.pods.SetPods({MakePod("uid-b", "b", {"c"}), MakePod("uid-a", "a", {"c"})});
  node_.devices.SetDevices("uid-b", "c", {{"example.com/gpu", {{"gpu0", {}}}}});
  node_.devices.SetHealth("uid-b", "c", {{"example.com/gpu", {{"gpu0", "Healthy"}}}});
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  const WatchResponse snapshot = watch.events()[0];
  ASSERT_EQ(snapshot.pod_resources_size(), 2);
  ASSERT_EQ(snapshot.pod_health_size(), 2);
  EXPECT_EQ(snapshot.pod_resources(1).name(), "b");
  EXPECT_EQ(snapshot.pod_health(0).containers_size(), 0) << "pod a holds no devices";
  ASSERT_EQ(snapshot.pod_health(1).containers_size(), 1);
  EXPECT_EQ(
      snapshot.pod_health(1).containers(0).allocated_resources_status(0).resources(0).health(),
      "Healthy");

  node_.devices.SetHealth("uid-b", "c", {{"example.com/gpu", {{"gpu0", "Unhealthy"}}}});
  server_->notifier().PodUpdated(MakePod("uid-b", "b", {"c"}));
  ASSERT_TRUE(watch.WaitForEvents(2));
  const WatchResponse update = watch.events()[1];
  EXPECT_EQ(update.kind(), WatchResponse::UPDATED);
  EXPECT_EQ(update.pod_uid(), "uid-b");
  ASSERT_EQ(update.pod_health_size(), 1);
  const auto& container = update.pod_health(0).containers(0);
  EXPECT_EQ(container.name(), "c");
  EXPECT_EQ(container.allocated_resources_status(0).name(), "example.com/gpu");
  EXPECT_EQ(container.allocated_resources_status(0).resources(0).resource_id(), "gpu0");
  EXPECT_EQ(container.allocated_resources_status(0).resources(0).health(), "Unhealthy");

  // The same health again is no change.
  server_->notifier().PodUpdated(MakePod("uid-b", "b", {"c"}));
  server_->hub_for_test().Drain();
  EXPECT_EQ(watch.events().size(), 2u);
}

// A health change the host read before a pod's removal and reports after it brings nothing back:
// no ADDED for a pod that is gone.
TEST_F(PodResourcesWatchTest, AChangeReportedAfterThePodsRemovalPublishesNothing) {
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  const Pod pod = MakePod("uid-b", "b", {"c"});
  Admit(pod, {{"example.com/gpu", {{"gpu0", {}}}}});
  ASSERT_TRUE(watch.WaitForEvents(2));
  node_.devices.SetHealth("uid-b", "c", {{"example.com/gpu", {{"gpu0", "Unhealthy"}}}});
  server_->notifier().PodChanged(pod);
  ASSERT_TRUE(watch.WaitForEvents(3));
  EXPECT_EQ(watch.events()[2].kind(), WatchResponse::UPDATED);
  RemovePod("uid-b");
  ASSERT_TRUE(watch.WaitForEvents(4));
  EXPECT_EQ(watch.events()[3].kind(), WatchResponse::DELETED);
  node_.devices.SetHealth("uid-b", "c", {{"example.com/gpu", {{"gpu0", "Healthy"}}}});
  server_->notifier().PodChanged(pod);
  // The next event is the next pod's: nothing came for the removed one before it.
  Admit(MakePod("uid-c", "c", {"c"}));
  ASSERT_TRUE(watch.WaitForEvents(5));
  EXPECT_EQ(watch.events()[4].kind(), WatchResponse::ADDED);
  EXPECT_EQ(watch.events()[4].pod_uid(), "uid-c");
}

TEST_F(PodResourcesWatchTest, ResumeByRevisionGetsWhatWasMissed) {
  StartWatch();
  uint64_t last = 0;
  {
    WatchClient watch(channel_);
    ASSERT_TRUE(watch.WaitForEvents(1));  // subscribed: the pod comes as an event of its own
    Admit(MakePod("uid-1", "p1", {"c"}));
    ASSERT_TRUE(watch.WaitForEvents(2));
    last = watch.last_revision();
  }
  Admit(MakePod("uid-2", "p2", {"c"}));
  Admit(MakePod("uid-3", "p3", {"c"}));
  RemovePod("uid-1");
  server_->hub_for_test().Drain();
  WatchClient resumed(channel_, last);
  ASSERT_TRUE(resumed.WaitForEvents(3));
  const std::vector<WatchResponse> events = resumed.events();
  EXPECT_EQ(events[0].kind(), WatchResponse::ADDED);
  EXPECT_EQ(events[0].revision(), last + 1);
  EXPECT_EQ(events[1].pod_uid(), "uid-3");
  EXPECT_EQ(events[2].kind(), WatchResponse::DELETED);
  ExpectIncreasingRevisions(events);
}

TEST_F(PodResourcesWatchTest, ResumeUpToDateSendsNothingUntilTheNextChange) {
  StartWatch();
  WatchClient first(channel_);
  ASSERT_TRUE(first.WaitForEvents(1));  // subscribed: the pod comes as an event of its own
  Admit(MakePod("uid-1", "p1", {"c"}));
  ASSERT_TRUE(first.WaitForEvents(2));
  WatchClient resumed(channel_, first.last_revision());
  Admit(MakePod("uid-2", "p2", {"c"}));
  ASSERT_TRUE(resumed.WaitForEvents(1));
  EXPECT_EQ(resumed.events()[0].kind(), WatchResponse::ADDED);
  EXPECT_EQ(resumed.events()[0].pod_uid(), "uid-2");
}

TEST_F(PodResourcesWatchTest, ResumeAfterHistoryIsGoneGetsSnapshot) {
  WatchOptions options;
  options.history_events = 2;
  StartWatch(options);
  uint64_t last = 0;
  ASSERT_NO_FATAL_FAILURE(ReadSnapshotRevision(last));
  for (int i = 0; i < 5; ++i)
    Admit(MakePod("uid-" + std::to_string(i), "p" + std::to_string(i), {"c"}));
  server_->hub_for_test().Drain();
  WatchClient resumed(channel_, last);
  ASSERT_TRUE(resumed.WaitForEvents(1));
  EXPECT_EQ(resumed.events()[0].kind(), WatchResponse::SNAPSHOT);
  EXPECT_EQ(resumed.events()[0].pod_resources_size(), 5);
  EXPECT_EQ(resumed.events()[0].revision(), last + 5);

  // A revision this server never issued (another server's, say) also gets a snapshot.
  WatchClient stranger(channel_, last + 1000);
  ASSERT_TRUE(stranger.WaitForEvents(1));
  EXPECT_EQ(stranger.events()[0].kind(), WatchResponse::SNAPSHOT);
}

// The history is bounded by its bytes too: an event carries every device of its pod, and a
// plugin's IDs can make each one megabytes. Before, only the number of events bounded it, and
// admitting and removing pods of long IDs while one client watched grew the daemon by each
// event's size until 4096 of them were kept. Here no event fits: a client that resumes gets a
// snapshot, as when the history moved past its revision.
TEST_F(PodResourcesWatchTest, ResumeAfterHistoryPastItsBytesGetsSnapshot) {
  WatchOptions options;
  options.history_bytes = 1;
  StartWatch(options);
  uint64_t last = 0;
  ASSERT_NO_FATAL_FAILURE(ReadSnapshotRevision(last));
  Admit(MakePod("uid-1", "p1", {"c"}));
  server_->hub_for_test().Drain();
  WatchClient resumed(channel_, last);
  ASSERT_TRUE(resumed.WaitForEvents(1));
  EXPECT_EQ(resumed.events()[0].kind(), WatchResponse::SNAPSHOT);
  EXPECT_EQ(resumed.events()[0].pod_resources_size(), 1);
}

TEST_F(PodResourcesWatchTest, RevisionsStartFromTheClock) {
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  EXPECT_EQ(watch.events()[0].revision(), static_cast<uint64_t>(absl::ToUnixMicros(clock_.Now())));
}

TEST_F(PodResourcesWatchTest, ResyncFindsChangesNobodySignalled) {
  WatchOptions options;
  options.resync_period = absl::ZeroDuration();
  node_.pods.SetPods({MakePod("uid-a", "a", {"c"})});
  StartWatch(options);
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  node_.devices.SetDevices("uid-a", "c", {{"example.com/gpu", {{"gpu0", {0}}}}});
  node_.pods.Upsert(MakePod("uid-b", "b", {"c"}));
  server_->hub_for_test().Resync();
  ASSERT_TRUE(watch.WaitForEvents(3));
  node_.pods.Remove("uid-a");
  server_->hub_for_test().Resync();
  ASSERT_TRUE(watch.WaitForEvents(4));
  EXPECT_EQ(watch.events()[3].kind(), WatchResponse::DELETED);
  EXPECT_TRUE(SameState(watch.State(), ListedState()));
}

TEST_F(PodResourcesWatchTest, PeriodicResyncRunsOnItsOwn) {
  WatchOptions options;
  options.resync_period = absl::Milliseconds(20);
  StartWatch(options);
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  node_.pods.Upsert(MakePod("uid-a", "a", {"c"}));  // no notification
  ASSERT_TRUE(watch.WaitForEvents(2));
  EXPECT_EQ(watch.events()[1].kind(), WatchResponse::ADDED);
}

// A client that stops reading while the node changes: the transport's buffers fill, changes
// pile up (one per pod), and past the budget the stream is ended with RESOURCE_EXHAUSTED. The
// client then resumes from the last revision it received; having missed more pods than a
// stream may hold, it gets a snapshot.
TEST_F(PodResourcesWatchTest, SlowConsumerIsEndedAndResumes) {
  WatchOptions options;
  options.max_pending_per_stream = 8;
  options.history_events = 100000;
  StartWatch(options);
  WatchClient slow(channel_, 0, /*paused=*/true);
  ASSERT_TRUE(devmgr::testing::WaitFor(
      [&] { return server_->hub_for_test().SubscriberCountForTest() == 1; }));
  const int admitted = AdmitUntilAStreamIsEndedSlow();
  ASSERT_EQ(server_->counters().watch_streams_ended_slow.load(), 1u);
  slow.Resume();
  ASSERT_TRUE(slow.WaitForEnd());
  EXPECT_EQ(slow.status()->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(absl::StartsWith(slow.status()->error_message(), kSlowConsumerMessage))
      << slow.status()->error_message();
  ExpectIncreasingRevisions(slow.events());
  EXPECT_LT(slow.size(), static_cast<size_t>(admitted));

  // It missed more pods than a stream may hold pending: a snapshot, not a replay.
  server_->hub_for_test().Drain();
  WatchClient resumed(channel_, slow.last_revision());
  ASSERT_TRUE(resumed.WaitForEvents(1));
  EXPECT_EQ(resumed.events()[0].kind(), WatchResponse::SNAPSHOT);
  EXPECT_TRUE(SameState(resumed.State(), ListedState()));
}

// A client that stopped reading for good never takes the write in flight, so the status that
// ends its stream can never go out: after the grace the call is cancelled, and the stream lets
// go of its subscription and its slot.
TEST_F(PodResourcesWatchTest, AClientThatStopsReadingIsCancelledAfterTheGrace) {
  WatchOptions options;
  options.max_pending_per_stream = 8;
  options.last_write_grace = absl::Milliseconds(100);
  StartWatch(options);
  // A connection that takes in at most 1 KiB it was not asked for: the first event that does
  // not fit is never taken while the client does not read.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 1024);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  WatchClient stuck(grpc::CreateCustomChannel("unix:" + dir_.Sub("kubelet.sock").string(),
                                              grpc::InsecureChannelCredentials(), args),
                    0, /*paused=*/true);
  ASSERT_TRUE(devmgr::testing::WaitFor(
      [&] { return server_->hub_for_test().SubscriberCountForTest() == 1; }));
  AdmitUntilAStreamIsEndedSlow();
  ASSERT_EQ(server_->counters().watch_streams_ended_slow.load(), 1u);
  EXPECT_TRUE(devmgr::testing::WaitFor(
      [&] { return server_->hub_for_test().SubscriberCountForTest() == 0; }));
  stuck.Resume();
  ASSERT_TRUE(stuck.WaitForEnd());
  EXPECT_EQ(stuck.status()->error_code(), grpc::StatusCode::CANCELLED);
}

// Streams are ended before the server stops taking calls; one opened in between is ended as
// soon as it subscribes, rather than at the end of the server's grace.
TEST_F(PodResourcesWatchTest, AWatchOpenedAfterTheStreamsWereEndedEndsAtOnce) {
  StartWatch();
  server_->hub_for_test().EndAllStreams();
  server_->hub_for_test().Drain();
  WatchClient late(channel_);
  ASSERT_TRUE(late.WaitForEnd());
  EXPECT_EQ(late.status()->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(late.status()->error_message(), "server shutting down");
}

TEST_F(PodResourcesWatchTest, ManyWatchersSeeTheSameOrder) {
  WatchOptions options;
  options.max_streams_per_client = 32;
  StartWatch(options);
  std::vector<std::unique_ptr<WatchClient>> watchers;
  for (int i = 0; i < 20; ++i) watchers.push_back(std::make_unique<WatchClient>(channel_));
  ASSERT_TRUE(devmgr::testing::WaitFor(
      [&] { return server_->hub_for_test().SubscriberCountForTest() == 20; }));
  for (int i = 0; i < 100; ++i) {
    Admit(MakePod("uid-" + std::to_string(i), "p" + std::to_string(i), {"c"}));
    if (i % 3 == 0) RemovePod("uid-" + std::to_string(i));
  }
  server_->hub_for_test().Drain();
  const std::map<std::string, ::v1::PodResources> listed = ListedState();
  for (auto& watcher : watchers) {
    ASSERT_TRUE(devmgr::testing::WaitFor([&] { return SameState(watcher->State(), listed); }));
    ExpectIncreasingRevisions(watcher->events());
  }
}

TEST_F(PodResourcesWatchTest, PodChurnFromSeveralThreads) {
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string uid = "uid-" + std::to_string(t) + "-" + std::to_string(i % 20);
        if (i % 2 == 0) {
          Admit(MakePod(uid, uid, {"c"}),
                {{"example.com/gpu", {{"gpu-" + std::to_string(i), {t % 2}}}}});
        } else {
          RemovePod(uid);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  server_->hub_for_test().Resync();
  server_->hub_for_test().Drain();
  const std::map<std::string, ::v1::PodResources> listed = ListedState();
  ASSERT_TRUE(devmgr::testing::WaitFor([&] { return SameState(watch.State(), listed); }));
  ExpectIncreasingRevisions(watch.events());
}

// Before the first watcher, the host's notifications are dropped without waking the hub: a
// pod changed while the first watcher subscribes must then be in its snapshot or come as an
// event. No resync here, which would find a lost change again.
TEST_F(PodResourcesWatchTest, PodsChangedWhileTheFirstWatcherSubscribesAreNotLost) {
  constexpr int kPodsBefore = 500;
  constexpr int kChanges = 400;
  std::vector<Pod> before;
  for (int i = 0; i < kPodsBefore; ++i) {
    before.push_back(MakePod("uid-old-" + std::to_string(i), "old" + std::to_string(i), {"c"}));
  }
  node_.pods.SetPods(before);
  WatchOptions options;
  options.resync_period = absl::ZeroDuration();
  StartWatch(options);
  std::atomic<int> changed = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([this, t, &changed] {
      for (int i = 0; i < kChanges; ++i) {
        const std::string uid = "uid-" + std::to_string(t) + "-" + std::to_string(i);
        Admit(MakePod(uid, uid, {"c"}), {{"example.com/gpu", {{"gpu-" + uid, {t}}}}});
        if (i % 2 == 0) RemovePod("uid-old-" + std::to_string(i / 2 + t * kPodsBefore / 2));
        ++changed;
      }
    });
  }
  // The first watcher comes while the pods change.
  const bool changing = devmgr::testing::WaitFor([&] { return changed >= kChanges / 4; });
  WatchClient watch(channel_);
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(changing);
  ASSERT_TRUE(watch.WaitForEvents(1));
  server_->hub_for_test().Drain();
  const std::map<std::string, ::v1::PodResources> listed = ListedState();
  EXPECT_TRUE(devmgr::testing::WaitFor([&] { return SameState(watch.State(), listed); }))
      << "the watcher holds " << watch.State().size() << " pods, List " << listed.size();
}

TEST_F(PodResourcesWatchTest, StreamsPerClientAreLimited) {
  WatchOptions options;
  options.max_streams_per_client = 2;
  StartWatch(options);
  auto first = std::make_unique<WatchClient>(channel_);
  WatchClient second(channel_);
  ASSERT_TRUE(first->WaitForEvents(1));
  ASSERT_TRUE(second.WaitForEvents(1));
  WatchClient third(channel_);
  ASSERT_TRUE(third.WaitForEnd());
  EXPECT_EQ(third.status()->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(third.status()->error_message(), "too many watch streams for this client (limit 2)");
  first.reset();  // frees a slot
  ASSERT_TRUE(devmgr::testing::WaitFor(
      [&] { return server_->hub_for_test().SubscriberCountForTest() == 1; }));
  WatchClient fourth(channel_);
  ASSERT_TRUE(fourth.WaitForEvents(1));
}

TEST_F(PodResourcesWatchTest, OpeningAStreamTakesARateLimitToken) {
  ServerOptions server_options;
  server_options.rate_limit = {.qps = 1, .burst = 1, .per_client = true};
  Start(server_options);
  WatchClient first(channel_);
  ASSERT_TRUE(first.WaitForEvents(1));
  WatchClient second(channel_);
  ASSERT_TRUE(second.WaitForEnd());
  EXPECT_EQ(second.status()->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(second.status()->error_message(), "rejected by rate limit");
}

TEST_F(PodResourcesWatchTest, ShutdownEndsStreams) {
  StartWatch();
  WatchClient watch(channel_);
  ASSERT_TRUE(watch.WaitForEvents(1));
  server_->Shutdown();
  ASSERT_TRUE(watch.WaitForEnd());
  EXPECT_EQ(watch.status()->error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace devmgr::podresources::testing
