#include "common/go_json.h"

#include <gtest/gtest.h>

namespace devmgr {
namespace {

std::string Quote(const std::string& s) {
  std::string out;
  AppendGoJsonString(out, s);
  return out;
}

TEST(GoJsonTest, EscapesLikeEncodingJson) {
  EXPECT_EQ(Quote("plain"), "\"plain\"");
  EXPECT_EQ(Quote("<a>&b"), "\"\\u003ca\\u003e\\u0026b\"");
  EXPECT_EQ(Quote("q\"b\\"), "\"q\\\"b\\\\\"");
  EXPECT_EQ(Quote("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Quote(std::string("\x01\x1f\x00", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(Quote("\x7f"), "\"\x7f\"");
  EXPECT_EQ(Quote("\xE2\x80\xA8\xE2\x80\xA9"), "\"\\u2028\\u2029\"");
  EXPECT_EQ(Quote("caf\xC3\xA9 \xF0\x9F\x98\x80"), "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"");
  EXPECT_EQ(Quote("a\xFFz"), "\"a\\ufffdz\"");
}

TEST(GoJsonTest, ToValidUtf8ReplacesEachBadByte) {
  EXPECT_EQ(ToValidUtf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"),                           // a surrogate
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80").substr(0, 3), "\xEF\xBF\xBD");  // above U+10FFFF
  EXPECT_EQ(ToValidUtf8("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");         // truncated
}

}  // namespace
}  // namespace devmgr
