// Table and TerminalText: human output aligns its columns in characters, and shows what a
// terminal would obey (control characters, bytes that are not UTF-8) escaped instead.
#include "common/table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace devmgr {
namespace {

TEST(TerminalTextTest, PrintableTextIsShownAsItIs) {
  for (const char* text :
       {"", "gpu-0", "example.com/gpu", "périphérique", "a b", "{\"a\":1}", "C:\\path"}) {
    EXPECT_EQ(TerminalText(text), text);
  }
}

TEST(TerminalTextTest, WhatATerminalWouldObeyIsQuotedAndEscaped) {
  EXPECT_EQ(TerminalText("red\x1b[31m"), "\"red\\x1b[31m\"");
  EXPECT_EQ(TerminalText("two\nlines"), "\"two\\nlines\"");
  EXPECT_EQ(TerminalText("bad\xff"), "\"bad\\xff\"");
  EXPECT_EQ(TerminalText("next\xc2\x85line"), "\"next\\u0085line\"");  // C1's NEL
  EXPECT_EQ(TerminalText(std::string("nul\0", 4)), "\"nul\\x00\"");
}

TEST(TableTest, ColumnsAlignInCharactersWithEscapedCells) {
  Table table({"NAME", "VALUE"});
  table.AddRow({"été", "1"});
  table.AddRow({"a\tb", "2"});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(),
            "NAME     VALUE\n"
            "été      1\n"
            "\"a\\tb\"   2\n");
}

}  // namespace
}  // namespace devmgr
