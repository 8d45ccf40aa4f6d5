// Log lines as klog writes them: the message and strings quoted as Go's strconv.Quote, multi-line
// values on their own lines, lists as Go's %+v, and klog's header with the caller's file:line.
#include "common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <regex>
#include <sstream>

namespace devmgr {
namespace {

// A logger writing into `out` with `formatter` (the bare message when null).
LoggerPtr Logger(std::ostringstream& out, std::unique_ptr<spdlog::formatter> formatter = nullptr) {
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  if (formatter != nullptr) {
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%v");
  }
  logger->set_level(spdlog::level::trace);
  return logger;
}

TEST(LoggingTest, WritesKlogShapedLines) {
  std::ostringstream out;
  LoggerPtr logger = Logger(out);
  logger->set_level(spdlog::level::info);
  DEVMGR_LOG(logger, info, "Device plugin connected", "resourceName", "example.com/gpu", "count", 3,
             "ids", std::vector<std::string>{"a", "b\"c"}, "ok", true, "wait", absl::Seconds(90),
             "none", absl::ZeroDuration());
  DEVMGR_LOG(logger, debug, "Not shown");
  DEVMGR_LOG(logger, warn, "Failed", "err", absl::UnavailableError("gone"));
  EXPECT_EQ(out.str(),
            "\"Device plugin connected\" resourceName=\"example.com/gpu\" count=3 "
            "ids=[a b\"c] ok=true wait=\"1m30s\" none=\"0s\"\n"
            "\"Failed\" err=\"UNAVAILABLE: gone\"\n");
}

TEST(LoggingTest, WritesMultiLineValuesOnTheirOwnLines) {
  std::ostringstream out;
  LoggerPtr logger = Logger(out);
  DEVMGR_LOG(logger, info, "Config", "text", "line 1\nline 2", "ended", "one\n", "after", 1);
  DEVMGR_LOG(logger, info, "Message\nwith a break");
  EXPECT_EQ(out.str(),
            "\"Config\" text=<\n\tline 1\n\tline 2\n > ended=<\n\tone\n > after=1\n"
            "\"Message\\nwith a break\"\n");
}

TEST(LoggingTest, TheKlogHeaderNamesTheLevelTimeProcessAndCaller) {
  std::ostringstream out;
  LoggerPtr logger = Logger(out, NewKlogFormatter());
  // clang-format off
  DEVMGR_LOG(logger, info, "Started", "k", "v"); const int line = __LINE__;
  // clang-format on
  DEVMGR_LOG(logger, warn, "Careful");
  DEVMGR_LOG(logger, err, "Broken");
  DEVMGR_LOG(logger, debug, "Detail");
  logger->info("without a caller");
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 5U) << out.str();
  const std::string pid = std::to_string(getpid());
  const std::string padded = std::string(pid.size() < 7 ? 7 - pid.size() : 0, ' ') + pid;
  const std::string time = R"(\d{4} \d{2}:\d{2}:\d{2}\.\d{6} )";
  EXPECT_TRUE(std::regex_match(
      lines[0], std::regex("I" + time + padded + " logging_test\\.cc:" + std::to_string(line) +
                           R"(\] "Started" k="v")")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(lines[1], std::regex("W" + time + ".*\\] \"Careful\""))) << lines[1];
  EXPECT_TRUE(std::regex_match(lines[2], std::regex("E" + time + ".*\\] \"Broken\""))) << lines[2];
  EXPECT_TRUE(std::regex_match(lines[3], std::regex("I" + time + ".*\\] \"Detail\"")))
      << "debug lines are klog's V-levels: " << lines[3];
  EXPECT_TRUE(std::regex_match(lines[4], std::regex(".* \\?\\?\\?:1\\] without a caller")))
      << lines[4];
}

TEST(LoggingTest, VerbosityMapsOntoLevels) {
  EXPECT_EQ(VerbosityLevel(0), spdlog::level::info);
  EXPECT_EQ(VerbosityLevel(2), spdlog::level::info);
  EXPECT_EQ(VerbosityLevel(3), spdlog::level::debug);
  EXPECT_EQ(VerbosityLevel(4), spdlog::level::debug);
  EXPECT_EQ(VerbosityLevel(5), spdlog::level::trace);
  EXPECT_EQ(VerbosityLevel(10), spdlog::level::trace);
}

TEST(LoggingTest, NullLoggerLogsNothing) {
  LoggerPtr none;
  DEVMGR_LOG(none, info, "Nothing", "k", "v");  // must not crash
}

}  // namespace
}  // namespace devmgr
