#include "cmd/devmgr/log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace devmgr::cli {
namespace {

absl::StatusOr<std::FILE*> OpenForAppend(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  std::FILE* file = fd < 0 ? nullptr : fdopen(fd, "a");
  if (file == nullptr) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return ErrnoStatus(error, "cannot open log file", path);
  }
  return file;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ReopenableFileSink>> ReopenableFileSink::Open(
    std::filesystem::path path) {
  absl::StatusOr<std::FILE*> file = OpenForAppend(path);
  if (!file.ok()) return file.status();
  return std::shared_ptr<ReopenableFileSink>(new ReopenableFileSink(std::move(path), *file));
}

ReopenableFileSink::~ReopenableFileSink() { std::fclose(file_); }

absl::Status ReopenableFileSink::Reopen() {
  absl::StatusOr<std::FILE*> file = OpenForAppend(path_);
  if (!file.ok()) return file.status();
  std::lock_guard<std::mutex> lock(mutex_);
  std::fclose(file_);
  file_ = *file;
  return absl::OkStatus();
}

void ReopenableFileSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t line;
  formatter_->format(msg, line);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

void ReopenableFileSink::flush_() { std::fflush(file_); }

}  // namespace devmgr::cli
