// GoQuote against what Go's strconv.Quote writes for the same bytes.
#include "common/go_quote.h"

#include <gtest/gtest.h>

#include <string>

namespace devmgr {
namespace {

TEST(GoQuoteTest, QuotesAsGoDoes) {
  EXPECT_EQ(GoQuote("plain"), "\"plain\"");
  EXPECT_EQ(GoQuote("can't \"x\" \\"), "\"can't \\\"x\\\" \\\\\"");
  EXPECT_EQ(GoQuote("\a\b\f\n\r\t\v"), "\"\\a\\b\\f\\n\\r\\t\\v\"");
  EXPECT_EQ(GoQuote(std::string("\x00\x1f\x7f", 3)), "\"\\x00\\x1f\\x7f\"");
  EXPECT_EQ(GoQuote("gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80\"")
      << "printable characters as they are";
  EXPECT_EQ(GoQuote("a\xC2\xA0"
                    "b\xE2\x80\xA8"
                    "c\xEF\xBB\xBF"),
            "\"a\\u00a0b\\u2028c\\ufeff\"");
  EXPECT_EQ(GoQuote("\xF3\xB0\x80\x80"), "\"\\U000f0000\"") << "private use";
  EXPECT_EQ(GoQuote("\xFF\xC3"), "\"\\xff\\xc3\"") << "bytes that are not UTF-8";
}

}  // namespace
}  // namespace devmgr
