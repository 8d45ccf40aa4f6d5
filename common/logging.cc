#include "common/logging.h"

#include <spdlog/pattern_formatter.h>

#include <cstdint>

#include "common/utf8.h"

namespace devmgr {
namespace {

// Go's unicode.IsPrint for a code point above ASCII, for the characters log lines carry: false
// for the C1 controls, the spaces other than ' ', the format characters, the line and paragraph
// separators, private use and noncharacters. (Go also refuses unassigned code points, which
// would need Unicode's tables; they are written as they are here.)
bool IsPrintAboveAscii(char32_t c) {
  static constexpr std::pair<char32_t, char32_t> kNotPrint[] = {
      {0x80, 0xA0},     {0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},
      {0x6DD, 0x6DD},   {0x70F, 0x70F},     {0x1680, 0x1680},   {0x180E, 0x180E},
      {0x2000, 0x200F}, {0x2028, 0x202F},   {0x205F, 0x2064},   {0x2066, 0x206F},
      {0x3000, 0x3000}, {0xE000, 0xF8FF},   {0xFDD0, 0xFDEF},   {0xFEFF, 0xFEFF},
      {0xFFF9, 0xFFFB}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF}};
  for (const auto& [first, last] : kNotPrint) {
    if (c >= first && c <= last) return false;
  }
  return (c & 0xFFFE) != 0xFFFE;  // U+xFFFE and U+xFFFF of every plane are noncharacters
}

void AppendHex(std::string& out, uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
}

// klog's writeStringValue: a string without line breaks quoted (or, for a value that is not a
// string, as it is); one with line breaks on the lines that follow, each after a tab, and " >".
void AppendKlogValue(std::string& out, absl::string_view value, bool quote) {
  size_t line_end = value.find('\n');
  if (line_end == absl::string_view::npos) {
    out += '=';
    if (quote) {
      out += log_internal::GoQuote(value);
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

std::string GoQuote(absl::string_view value) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size();) {
    const size_t length = Utf8SequenceLength(value, i);
    if (length == 0) {  // a byte that is not UTF-8
      out += "\\x";
      AppendHex(out, static_cast<uint8_t>(value[i]), 2);
      ++i;
      continue;
    }
    const char32_t c = DecodeUtf8(value, i, length);
    const absl::string_view text = value.substr(i, length);
    i += length;
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\a':
        out += "\\a";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\v':
        out += "\\v";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      AppendHex(out, c, 2);
    } else if (c < 0x80 || IsPrintAboveAscii(c)) {
      absl::StrAppend(&out, text);
    } else if (c < 0x10000) {
      out += "\\u";
      AppendHex(out, c, 4);
    } else {
      out += "\\U";
      AppendHex(out, c, 8);
    }
  }
  out += '"';
  return out;
}

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
