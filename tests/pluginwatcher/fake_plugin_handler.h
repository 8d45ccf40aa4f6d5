// FakePluginHandler: a PluginHandler for the plugin watcher's tests. It records every call, in
// order and with the time it came, and fails ValidatePlugin or RegisterPlugin on demand; a hook
// runs inside ValidatePlugin, for plugins that misbehave in the middle of the handshake.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "pluginwatcher/handler.h"

namespace devmgr::testing {

struct HandlerCall {
  enum class Kind { kValidate, kRegister, kDeRegister };
  Kind kind;
  std::string name;
  std::string endpoint;
  std::vector<std::string> versions;
  absl::Time when;
};

// Thread-safe.
class FakePluginHandler final : public pluginwatcher::PluginHandler {
 public:
  using Kind = HandlerCall::Kind;

  absl::Status ValidatePlugin(absl::string_view name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override {
    std::function<void()> hook;
    absl::Status result;
    {
      absl::MutexLock lock(&mu_);
      calls_.push_back(
          {Kind::kValidate, std::string(name), std::string(endpoint), versions, absl::Now()});
      hook = validate_hook_;
      result = validate_result_;
    }
    if (hook) hook();
    return result;
  }

  absl::Status RegisterPlugin(absl::string_view name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(
        {Kind::kRegister, std::string(name), std::string(endpoint), versions, absl::Now()});
    return register_result_;
  }

  void DeRegisterPlugin(absl::string_view name, absl::string_view endpoint) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(
        {Kind::kDeRegister, std::string(name), std::string(endpoint), {}, absl::Now()});
  }

  void SetValidateResult(absl::Status status) {
    absl::MutexLock lock(&mu_);
    validate_result_ = std::move(status);
  }
  void SetRegisterResult(absl::Status status) {
    absl::MutexLock lock(&mu_);
    register_result_ = std::move(status);
  }
  // OnValidate runs `hook` inside every ValidatePlugin, without the handler's lock.
  void OnValidate(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    validate_hook_ = std::move(hook);
  }

  std::vector<HandlerCall> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // Count of calls of `kind`, for `endpoint` if it is not empty.
  int Count(Kind kind, const std::string& endpoint = "") const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& call : calls_) {
      if (call.kind == kind && (endpoint.empty() || call.endpoint == endpoint)) ++n;
    }
    return n;
  }
  // Registered endpoints: registered and not deregistered since, as a host would track them.
  int RegisteredCount() const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& call : calls_) {
      if (call.kind == Kind::kRegister) ++n;
      if (call.kind == Kind::kDeRegister) --n;
    }
    return n;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<HandlerCall> calls_ ABSL_GUARDED_BY(mu_);
  absl::Status validate_result_ ABSL_GUARDED_BY(mu_);
  absl::Status register_result_ ABSL_GUARDED_BY(mu_);
  std::function<void()> validate_hook_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::testing
