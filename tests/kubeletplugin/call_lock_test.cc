// CallLock: two holders of the same lock file (as the old and the new pod of a driver in a
// rolling update) never run a call at the same time; without a file a mutex does it; a lock
// file that cannot be opened is a clear error.
#include "kubeletplugin/call_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::kubeletplugin {
namespace {

using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

// Holds `first`'s lock, starts a second holder on `second`, and checks it waits until the first
// lets go.
void ExpectExclusive(CallLock& first, CallLock& second) {
  std::optional<absl::StatusOr<CallLock::Guard>> held(first.Lock());
  ASSERT_TRUE(held->ok()) << held->status();
  std::atomic<bool> started{false};
  std::atomic<bool> acquired{false};
  std::thread other([&] {
    started = true;
    absl::StatusOr<CallLock::Guard> guard = second.Lock();
    EXPECT_TRUE(guard.ok()) << guard.status();
    acquired = true;
  });
  ASSERT_TRUE(WaitFor([&] { return started.load(); }));
  // The other holder is blocked for as long as the lock is held; this cannot prove it never
  // gets in, but a lock that did not exclude would let it in at once.
  EXPECT_FALSE(WaitFor([&] { return acquired.load(); }, std::chrono::milliseconds(200)));
  held.reset();
  EXPECT_TRUE(WaitFor([&] { return acquired.load(); }));
  other.join();
}

TEST(CallLockTest, TwoHoldersOfOneLockFileTakeTurns) {
  TempDir dir;
  const std::filesystem::path file = dir.Sub(kSerializeLockFile);
  CallLock old_pod(file);
  CallLock new_pod(file);
  ExpectExclusive(old_pod, new_pod);
  EXPECT_TRUE(std::filesystem::exists(file));
}

// Go drivers built on upstream's helper lock the file through etcd's fileutil.LockFile: with an
// open file description lock, or with flock(2) on a kernel without those; the two ignore each
// other: ours must be both, or a Go driver's pod and ours would not exclude each other in a
// rolling update. Before, it was a flock alone, and the OFD check failed; a first fix took the
// OFD lock alone, and the flock check failed.
TEST(CallLockTest, TheLockIsBothLocksGoDriversTake) {
  TempDir dir;
  const std::filesystem::path file = dir.Sub(kSerializeLockFile);
  CallLock lock(file);
  // What another opener of the file finds: whether an OFD lock and a flock are held.
  auto held_for_another_opener = [&] {
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    EXPECT_EQ(::fcntl(fd, F_OFD_GETLK, &probe), 0);
    const bool ofd = probe.l_type != F_UNLCK;
    const bool flocked = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return std::make_pair(ofd, flocked);
  };
  {
    absl::StatusOr<CallLock::Guard> guard = lock.Lock();
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ(held_for_another_opener(), std::make_pair(true, true));
  }
  EXPECT_EQ(held_for_another_opener(), std::make_pair(false, false)) << "released with the guard";
}

// The other pod may hold the lock for as long as its driver takes: a call that ends meanwhile
// (the kubelet's deadline, the helper's stop) stops waiting, and leaves the lock to the holder.
TEST(CallLockTest, AWaitForTheFileEndsWhenTheCallEnds) {
  TempDir dir;
  const std::filesystem::path file = dir.Sub(kSerializeLockFile);
  CallLock other_pod(file);
  CallLock ours(file);
  std::optional<absl::StatusOr<CallLock::Guard>> held(other_pod.Lock());
  ASSERT_TRUE(held->ok()) << held->status();
  std::atomic<int> asked{0};
  std::atomic<bool> ended{false};
  std::optional<absl::StatusOr<CallLock::Guard>> got;
  std::thread waiter([&] {
    got.emplace(ours.Lock([&] {
      ++asked;
      return ended.load();
    }));
  });
  ASSERT_TRUE(WaitFor([&] { return asked.load() >= 3; })) << "it asks while it waits";
  ended = true;
  waiter.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status().code(), absl::StatusCode::kCancelled) << got->status();
  EXPECT_TRUE(absl::StrContains(got->status().message(), file.string())) << got->status();
  held.reset();
  absl::StatusOr<CallLock::Guard> again = ours.Lock([] { return false; });
  EXPECT_TRUE(again.ok()) << again.status() << ": the lock was left as it was";
}

TEST(CallLockTest, WithoutAFileAMutexSerialisesCalls) {
  CallLock lock;
  ExpectExclusive(lock, lock);
}

TEST(CallLockTest, ALockFileThatCannotBeOpenedIsAnError) {
  TempDir dir;
  CallLock lock(dir.Sub("missing-folder") / kSerializeLockFile);
  absl::StatusOr<CallLock::Guard> guard = lock.Lock();
  ASSERT_FALSE(guard.ok());
  EXPECT_TRUE(absl::StartsWith(guard.status().message(), "lock file: cannot open "))
      << guard.status();
}

}  // namespace
}  // namespace devmgr::kubeletplugin
