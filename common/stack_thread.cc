#include "common/stack_thread.h"

#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace devmgr {
namespace {

void* Call(void* fn) {
  (*static_cast<absl::FunctionRef<void()>*>(fn))();
  return nullptr;
}

}  // namespace

absl::Status RunWithStack(size_t stack_bytes, absl::FunctionRef<void()> fn) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (stack_bytes > std::numeric_limits<size_t>::max() - page) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start a thread with a stack of ", stack_bytes, " bytes"));
  }
  const size_t size = std::max<size_t>(PTHREAD_STACK_MIN, (stack_bytes + page - 1) / page * page);
  pthread_attr_t attributes;
  if (int error = ::pthread_attr_init(&attributes); error != 0) {
    return ErrnoStatus(error, "cannot start a thread");
  }
  int error = ::pthread_attr_setstacksize(&attributes, size);
  pthread_t thread;
  if (error == 0) error = ::pthread_create(&thread, &attributes, &Call, &fn);
  ::pthread_attr_destroy(&attributes);
  if (error != 0) {
    return absl::ResourceExhaustedError(
        ErrnoStatus(error, absl::StrCat("cannot start a thread with a stack of ", size, " bytes"))
            .message());
  }
  ::pthread_join(thread, nullptr);
  return absl::OkStatus();
}

}  // namespace devmgr
