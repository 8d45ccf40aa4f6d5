// CallLock: two holders of the same lock file (as the old and the new pod of a driver in a
// rolling update) never run a call at the same time; without a file a mutex does it; a lock
// file that cannot be opened is a clear error.
#include "kubeletplugin/call_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <thread>

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

// Upstream's helper locks the file with etcd's fileutil.LockFile, an open file description lock
// on Linux: ours must be one too, or a Go driver's pod and ours would not exclude each other in
// a rolling update (a flock(2) and an OFD lock ignore each other; before, this failed).
TEST(CallLockTest, TheLockIsTheOpenFileDescriptionLockAGoDriverTakes) {
  TempDir dir;
  const std::filesystem::path file = dir.Sub(kSerializeLockFile);
  CallLock lock(file);
  auto lock_seen_by_another_opener = [&] {
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    EXPECT_EQ(::fcntl(fd, F_OFD_GETLK, &probe), 0);
    ::close(fd);
    return probe.l_type;
  };
  {
    absl::StatusOr<CallLock::Guard> guard = lock.Lock();
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ(lock_seen_by_another_opener(), F_WRLCK);
  }
  EXPECT_EQ(lock_seen_by_another_opener(), F_UNLCK) << "released with the guard";
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
