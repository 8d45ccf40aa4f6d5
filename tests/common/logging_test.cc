#include "common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

namespace devmgr {
namespace {

TEST(LoggingTest, WritesKlogShapedLines) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::info);

  DEVMGR_LOG(logger, info, "Device plugin connected", "resourceName", "example.com/gpu", "count", 3,
             "ids", std::vector<std::string>{"a", "b\"c"}, "ok", true);
  DEVMGR_LOG(logger, debug, "Not shown");
  DEVMGR_LOG(logger, warn, "Failed", "err", absl::UnavailableError("gone"));
  EXPECT_EQ(out.str(),
            "\"Device plugin connected\" resourceName=\"example.com/gpu\" count=3 "
            "ids=[\"a\",\"b\\\"c\"] ok=true\n"
            "\"Failed\" err=\"UNAVAILABLE: gone\"\n");
}

TEST(LoggingTest, NullLoggerLogsNothing) {
  LoggerPtr none;
  DEVMGR_LOG(none, info, "Nothing", "k", "v");  // must not crash
}

}  // namespace
}  // namespace devmgr
