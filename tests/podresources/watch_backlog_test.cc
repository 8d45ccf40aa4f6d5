// The slow-consumer policy of a Watch stream: coalescing per pod, order, and the budget.
#include "podresources/watch_backlog.h"

#include <gtest/gtest.h>

namespace devmgr::podresources {
namespace {

WatchEventPtr Event(WatchResponse::Kind kind, uint64_t revision, const std::string& uid,
                    const std::string& note = "") {
  auto event = std::make_shared<WatchResponse>();
  event->set_kind(kind);
  event->set_revision(revision);
  event->set_pod_uid(uid);
  event->add_pod_resources()->set_name(note.empty() ? uid : note);
  return event;
}

TEST(WatchBacklogTest, PopsInRevisionOrder) {
  WatchBacklog backlog(10);
  backlog.Push(Event(WatchResponse::ADDED, 1, "a"));
  backlog.Push(Event(WatchResponse::ADDED, 2, "b"));
  EXPECT_EQ(backlog.Pop()->revision(), 1u);
  EXPECT_EQ(backlog.Pop()->revision(), 2u);
  EXPECT_EQ(backlog.Pop(), nullptr);
}

TEST(WatchBacklogTest, CoalescesToTheLatestStatePerPod) {
  WatchBacklog backlog(10);
  backlog.Push(Event(WatchResponse::UPDATED, 1, "a", "old"));
  backlog.Push(Event(WatchResponse::ADDED, 2, "b"));
  backlog.Push(Event(WatchResponse::UPDATED, 3, "a", "new"));
  EXPECT_EQ(backlog.size(), 2u);
  EXPECT_EQ(backlog.Pop()->pod_uid(), "b");
  const WatchEventPtr a = backlog.Pop();
  EXPECT_EQ(a->revision(), 3u);
  EXPECT_EQ(a->pod_resources(0).name(), "new");
}

TEST(WatchBacklogTest, AddedThenUpdatedStaysAdded) {
  WatchBacklog backlog(10);
  backlog.Push(Event(WatchResponse::ADDED, 1, "a"));
  backlog.Push(Event(WatchResponse::UPDATED, 2, "a", "new"));
  const WatchEventPtr a = backlog.Pop();
  EXPECT_EQ(a->kind(), WatchResponse::ADDED);
  EXPECT_EQ(a->revision(), 2u);
  EXPECT_EQ(a->pod_resources(0).name(), "new");
}

TEST(WatchBacklogTest, AddedThenDeletedLeavesNothing) {
  WatchBacklog backlog(10);
  backlog.Push(Event(WatchResponse::ADDED, 1, "a"));
  backlog.Push(Event(WatchResponse::DELETED, 2, "a"));
  EXPECT_TRUE(backlog.empty());
}

TEST(WatchBacklogTest, UpdatedThenDeletedIsDeletedAndDeletedThenAddedIsUpdated) {
  WatchBacklog backlog(10);
  backlog.Push(Event(WatchResponse::UPDATED, 1, "a"));
  backlog.Push(Event(WatchResponse::DELETED, 2, "a"));
  backlog.Push(Event(WatchResponse::DELETED, 3, "b"));
  backlog.Push(Event(WatchResponse::ADDED, 4, "b"));
  EXPECT_EQ(backlog.Pop()->kind(), WatchResponse::DELETED);
  EXPECT_EQ(backlog.Pop()->kind(), WatchResponse::UPDATED);
}

TEST(WatchBacklogTest, SnapshotReplacesEverythingPending) {
  WatchBacklog backlog(10);
  backlog.Push(Event(WatchResponse::ADDED, 1, "a"));
  backlog.Push(Event(WatchResponse::SNAPSHOT, 5, ""));
  backlog.Push(Event(WatchResponse::ADDED, 6, "a"));
  EXPECT_EQ(backlog.Pop()->kind(), WatchResponse::SNAPSHOT);
  EXPECT_EQ(backlog.Pop()->revision(), 6u);
}

TEST(WatchBacklogTest, OverBudgetPastMaxPendingPods) {
  WatchBacklog backlog(2);
  backlog.Push(Event(WatchResponse::ADDED, 1, "a"));
  backlog.Push(Event(WatchResponse::ADDED, 2, "b"));
  backlog.Push(Event(WatchResponse::UPDATED, 3, "b"));  // coalesced: still two pods
  EXPECT_FALSE(backlog.OverBudget());
  backlog.Push(Event(WatchResponse::ADDED, 4, "c"));
  EXPECT_TRUE(backlog.OverBudget());
}

}  // namespace
}  // namespace devmgr::podresources
