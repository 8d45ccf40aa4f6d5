// RecordingClientMetrics: a kubeclient::ClientMetrics that writes down what it is told, a line
// each, in order: "try GET 127.0.0.1:4321 200", "try GET 127.0.0.1:4321 429 retry",
// "request GET 127.0.0.1:4321", "token GET 127.0.0.1:4321 waited" (or "at hand", for no wait),
// "sent POST 127.0.0.1:4321 512", "read GET 127.0.0.1:4321 120",
// "exec 3 plugin_execution_error".
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kubeclient/metrics.h"

namespace devmgr::testing {

class RecordingClientMetrics final : public kubeclient::ClientMetrics {
 public:
  void TryDone(absl::string_view verb, absl::string_view host, absl::string_view code,
               bool retry) override {
    Add(absl::StrCat("try ", verb, " ", host, " ", code, retry ? " retry" : ""));
  }
  void RequestDone(absl::string_view verb, absl::string_view host, absl::Duration) override {
    Add(absl::StrCat("request ", verb, " ", host));
  }
  void RequestSent(absl::string_view verb, absl::string_view host, size_t bytes) override {
    Add(absl::StrCat("sent ", verb, " ", host, " ", bytes));
  }
  void ResponseRead(absl::string_view verb, absl::string_view host, size_t bytes) override {
    Add(absl::StrCat("read ", verb, " ", host, " ", bytes));
  }
  void Throttled(absl::string_view verb, absl::string_view host, absl::Duration wait) override {
    Add(absl::StrCat("token ", verb, " ", host,
                     wait > absl::ZeroDuration() ? " waited" : " at hand"));
  }
  void ExecPluginCalled(int exit_code, absl::string_view call_status) override {
    Add(absl::StrCat("exec ", exit_code, " ", call_status));
  }

  // Lines: what it was told, and forgets it.
  std::vector<std::string> Lines() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> lines;
    lines.swap(lines_);
    return lines;
  }

 private:
  void Add(std::string line) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    lines_.push_back(std::move(line));
  }

  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::testing
