// ReopenableFileSink: an spdlog sink that appends to a file and can reopen it, so that the
// daemon's SIGHUP works with logrotate (rename the file, send SIGHUP, the daemon writes a new
// one). Every line is flushed: a daemon killed by SIGKILL loses no log line it wrote.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"

namespace devmgr::cli {

class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Open opens `path` for appending (mode 0640, created if missing). Internal on failure.
  static absl::StatusOr<std::shared_ptr<ReopenableFileSink>> Open(std::filesystem::path path);
  ~ReopenableFileSink() override;

  // Reopen closes the file and opens `path` again. On failure the old file stays in use.
  absl::Status Reopen();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  ReopenableFileSink(std::filesystem::path path, std::FILE* file)
      : path_(std::move(path)), file_(file) {}

  const std::filesystem::path path_;
  std::FILE* file_;  // guarded by base_sink's mutex_
};

}  // namespace devmgr::cli
