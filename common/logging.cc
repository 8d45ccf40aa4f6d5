#include "common/logging.h"

#include <spdlog/pattern_formatter.h>

#include "common/go_quote.h"

namespace devmgr {
namespace {

// klog's writeStringValue: a string without line breaks quoted (or, for a value that is not a
// string, as it is); one with line breaks on the lines that follow, each after a tab, and " >".
void AppendKlogValue(std::string& out, absl::string_view value, bool quote) {
  size_t line_end = value.find('\n');
  if (line_end == absl::string_view::npos) {
    out += '=';
    if (quote) {
      out += GoQuote(value);
    } else {
      absl::StrAppend(&out, value);
    }
    return;
  }
  out += "=<\n";
  while (line_end != absl::string_view::npos) {
    absl::StrAppend(&out, "\t", value.substr(0, line_end + 1));
    value.remove_prefix(line_end + 1);
    line_end = value.find('\n');
  }
  if (value.empty()) {
    out += " >";
  } else {
    absl::StrAppend(&out, "\t", value, "\n >");
  }
}

// The level letter of klog's header: its V-levels (debug, trace) are info lines.
class KlogLevelFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    char letter = 'I';
    if (msg.level == spdlog::level::warn) letter = 'W';
    if (msg.level == spdlog::level::err) letter = 'E';
    if (msg.level == spdlog::level::critical) letter = 'F';
    dest.push_back(letter);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<KlogLevelFlag>();
  }
};

// file:line of the call, the file without its folders, as klog writes it; "???:1" without one.
class KlogSourceFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string where = "???:1";
    if (!msg.source.empty()) {
      absl::string_view file(msg.source.filename);
      const size_t slash = file.rfind('/');
      if (slash != absl::string_view::npos) file.remove_prefix(slash + 1);
      where = absl::StrCat(file, ":", msg.source.line);
    }
    dest.append(where.data(), where.data() + where.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<KlogSourceFlag>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> NewKlogFormatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<KlogLevelFlag>('&').add_flag<KlogSourceFlag>('*').set_pattern(
      "%&%m%d %H:%M:%S.%f %7P %*] %v");
  return formatter;
}

spdlog::level::level_enum VerbosityLevel(int verbosity) {
  if (verbosity >= 5) return spdlog::level::trace;
  if (verbosity >= 3) return spdlog::level::debug;
  return spdlog::level::info;
}

namespace log_internal {

void AppendValue(std::string& out, absl::string_view value) { AppendKlogValue(out, value, true); }

void AppendValue(std::string& out, const std::vector<std::string>& values) {
  // Go's %+v of a []string: the strings as they are, between brackets, apart by spaces.
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) absl::StrAppend(&text, i > 0 ? " " : "", values[i]);
  text += ']';
  AppendKlogValue(out, text, false);
}

void AppendValue(std::string& out, const absl::Status& status) {
  AppendValue(out, absl::string_view(status.ToString()));
}

void AppendValue(std::string& out, absl::Duration value) {
  // A time.Duration is a fmt.Stringer: klog quotes what String() gives ("0s" for none).
  AppendValue(out, value == absl::ZeroDuration() ? absl::string_view("0s")
                                                 : absl::string_view(absl::FormatDuration(value)));
}

}  // namespace log_internal
}  // namespace devmgr
