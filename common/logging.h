// Logging in klog's structured shape through the host's spdlog logger:
//   DEVMGR_LOG(log_, info, "Device plugin connected", "resourceName", resource, "endpoint", path);
//   -> "Device plugin connected" resourceName="example.com/gpu" endpoint="/run/x.sock"
// The message is a fixed string starting with a capital letter, without a trailing period,
// followed by key/value pairs, formatted as klog's structured logging does: the message and
// string values quoted as Go's strconv.Quote, a string with line breaks written on the lines
// that follow (key=<, each line after a tab, then " >"), lists as Go's %+v ([a b]), durations as
// Go prints them. Each line carries the file and line of its DEVMGR_LOG.
//
// The library never configures spdlog globally and logs only through the logger its host passes
// in; a null logger logs nothing. Hosts that want klog's header (`I1124 15:00:48.610626    8504
// watcher.cc:123] ...`) give their logger NewKlogFormatter(). Levels: klog's V(0-2) is info,
// V(3-4) debug, V(5) and more trace (VerbosityLevel).
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/go_quote.h"

namespace devmgr {

using LoggerPtr = std::shared_ptr<spdlog::logger>;

// NewKlogFormatter: a formatter that writes klog's header before each line: the level letter
// (I, W, E, F; debug and trace lines are klog's V-levels, so I), the date and time to the
// microsecond, the process ID padded to 7, and file:line of the call ("???:1" for a line logged
// without one), then "] " and the message.
std::unique_ptr<spdlog::formatter> NewKlogFormatter();

// VerbosityLevel: the spdlog level of klog's -v N.
spdlog::level::level_enum VerbosityLevel(int verbosity);

namespace log_internal {

// Each AppendValue writes "=" and the value, as klog would after the key.
void AppendValue(std::string& out, absl::string_view value);
inline void AppendValue(std::string& out, const std::string& value) {
  AppendValue(out, absl::string_view(value));
}
inline void AppendValue(std::string& out, const char* value) {
  AppendValue(out, absl::string_view(value));
}
void AppendValue(std::string& out, const std::vector<std::string>& values);
void AppendValue(std::string& out, const absl::Status& status);
inline void AppendValue(std::string& out, bool value) { out += value ? "=true" : "=false"; }
void AppendValue(std::string& out, absl::Duration value);
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
void AppendValue(std::string& out, T value) {
  absl::StrAppend(&out, "=", value);
}

inline void AppendPairs(std::string&) {}
template <typename Value, typename... Rest>
void AppendPairs(std::string& out, absl::string_view key, const Value& value, const Rest&... rest) {
  absl::StrAppend(&out, " ", key);
  AppendValue(out, value);
  AppendPairs(out, rest...);
}

}  // namespace log_internal

// Log writes one structured line if `logger` is set and `level` is enabled; the key/value
// pairs are formatted only then. `where` is the caller's file and line (DEVMGR_LOG passes it).
template <typename... KeysAndValues>
void Log(const LoggerPtr& logger, spdlog::source_loc where, spdlog::level::level_enum level,
         absl::string_view message, const KeysAndValues&... keys_and_values) {
  static_assert(sizeof...(KeysAndValues) % 2 == 0, "keys and values come in pairs");
  if (logger == nullptr || !logger->should_log(level)) return;
  std::string line = GoQuote(message);
  log_internal::AppendPairs(line, keys_and_values...);
  logger->log(where, level, "{}", line);
}

}  // namespace devmgr

#define DEVMGR_LOG(logger, lvl, ...)                                          \
  ::devmgr::Log((logger), ::spdlog::source_loc{__FILE__, __LINE__, __func__}, \
                ::spdlog::level::lvl, __VA_ARGS__)
