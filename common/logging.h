// Logging in klog's structured shape through the host's spdlog logger:
//   DEVMGR_LOG(log_, info, "Device plugin connected", "resourceName", resource, "endpoint", path);
//   -> "Device plugin connected" resourceName="example.com/gpu" endpoint="/run/x.sock"
// The message is a fixed string starting with a capital letter, without a trailing period,
// followed by key/value pairs. The library never configures spdlog globally and logs only
// through the logger its host passes in; a null logger logs nothing. Levels: klog V(0-2) is
// info, V(3-4) debug, V(5) trace.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace devmgr {

using LoggerPtr = std::shared_ptr<spdlog::logger>;

namespace log_internal {

// Strings are quoted and escaped as Go's %q would (klog's form).
void AppendValue(std::string& out, absl::string_view value);
inline void AppendValue(std::string& out, const std::string& value) {
  AppendValue(out, absl::string_view(value));
}
inline void AppendValue(std::string& out, const char* value) {
  AppendValue(out, absl::string_view(value));
}
void AppendValue(std::string& out, const std::vector<std::string>& values);
void AppendValue(std::string& out, const absl::Status& status);
inline void AppendValue(std::string& out, bool value) { out += value ? "true" : "false"; }
inline void AppendValue(std::string& out, absl::Duration value) {
  absl::StrAppend(&out, "\"", absl::FormatDuration(value), "\"");
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
void AppendValue(std::string& out, T value) {
  absl::StrAppend(&out, value);
}

inline void AppendPairs(std::string&) {}
template <typename Value, typename... Rest>
void AppendPairs(std::string& out, absl::string_view key, const Value& value, const Rest&... rest) {
  absl::StrAppend(&out, " ", key, "=");
  AppendValue(out, value);
  AppendPairs(out, rest...);
}

}  // namespace log_internal

// Log writes one structured line if `logger` is set and `level` is enabled; the key/value
// pairs are formatted only then.
template <typename... KeysAndValues>
void Log(const LoggerPtr& logger, spdlog::level::level_enum level, absl::string_view message,
         const KeysAndValues&... keys_and_values) {
  static_assert(sizeof...(KeysAndValues) % 2 == 0, "keys and values come in pairs");
  if (logger == nullptr || !logger->should_log(level)) return;
  std::string line;
  log_internal::AppendValue(line, message);
  log_internal::AppendPairs(line, keys_and_values...);
  logger->log(level, "{}", line);
}

}  // namespace devmgr

#define DEVMGR_LOG(logger, lvl, ...) ::devmgr::Log((logger), ::spdlog::level::lvl, __VA_ARGS__)
