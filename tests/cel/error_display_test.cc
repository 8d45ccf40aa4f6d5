// Compile errors as cel-go displays them ("ERROR: <input>:line:column: message", the line, a
// caret), against cel-go's own expectations: the cases of its parser's TestParse
// (parser/parser_test.go), checker's TestCheck (checker/checker_test.go) and the extensions'
// tests that fit the selector environment, one error each (cel-go lists every error; devmgr
// stops at the first), and DisplayError's drawing of lines, tabs and wide characters.
#include "cel/error_display.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cel/program.h"

namespace devmgr::cel {
namespace {

// The text after "compilation failed: ", or what went wrong instead.
std::string Refusal(const std::string& expression) {
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(expression);
  if (program.ok()) return "compiled";
  const std::string prefix = "compilation failed: ";
  const std::string message(program.status().message());
  if (message.rfind(prefix, 0) != 0) return absl::StrCat("other: ", message);
  return message.substr(prefix.size());
}

TEST(CelErrorDisplayTest, DrawsTheLineAndACaret) {
  EXPECT_EQ(DisplayError("a && b", 5, "boom"), "ERROR: <input>:1:6: boom\n | a && b\n | .....^");
  EXPECT_EQ(DisplayError("a", 0, "boom"), "ERROR: <input>:1:1: boom\n | a\n | ^");
  // The line of the position alone, counted from 1; the caret may stand past the line's end.
  EXPECT_EQ(DisplayError("a &&\n  b(", 9, "boom"), "ERROR: <input>:2:5: boom\n |   b(\n | ....^");
  EXPECT_EQ(DisplayError("a &&\n", 4, "boom"), "ERROR: <input>:1:5: boom\n | a &&\n | ....^");
  EXPECT_EQ(DisplayError("x\n\ny", 2, "boom"), "ERROR: <input>:2:1: boom\n | \n | ^");
  // Tabs are shown as spaces.
  EXPECT_EQ(DisplayError("\ta", 1, "boom"), "ERROR: <input>:1:2: boom\n |  a\n | .^");
  // An empty text has no line to show.
  EXPECT_EQ(DisplayError("", 0, "boom"), "ERROR: <input>:1:1: boom");
}

TEST(CelErrorDisplayTest, CountsCharactersAndDrawsWideOnesWide) {
  // Columns count characters, not bytes; a character of more than one byte gets a full-width
  // dot, and the caret under one is full-width.
  EXPECT_EQ(DisplayError("'é' + x", 7, "boom"),
            "ERROR: <input>:1:7: boom\n | 'é' + x\n | .\uff0e....^");
  EXPECT_EQ(DisplayError("'é'", 1, "boom"), "ERROR: <input>:1:2: boom\n | 'é'\n | .\uff3e");
  // A byte that starts no valid sequence is one character, shown as U+FFFD, which is wide.
  EXPECT_EQ(DisplayError("'\xff' + x", 6, "boom"),
            "ERROR: <input>:1:7: boom\n | '\uFFFD' + x\n | .\uff0e....^");
}

TEST(CelErrorDisplayTest, ErrorsWithoutAPlaceHaveNone) {
  EXPECT_EQ(DisplayUnplacedError("boom"), "ERROR: <input>:-1:0: boom");
  EXPECT_EQ(Refusal(std::string(10 * 1024 + 1, ' ')),
            "ERROR: <input>:-1:0: the expression is 10241 bytes long, more than the 10240 "
            "allowed");
}

struct Case {
  std::string expression;
  std::string error;
};

// cel-go's TestParse: the cases whose one error devmgr's parser reports as cel-go does.
TEST(CelErrorDisplayTest, ParserErrorsAsCelGoShowsThem) {
  std::vector<Case> cases = {
      {"0xFFFFFFFFFFFFFFFFF",
       "ERROR: <input>:1:1: invalid int literal\n"
       " | 0xFFFFFFFFFFFFFFFFF\n"
       " | ^"},
      {"0xFFFFFFFFFFFFFFFFFu",
       "ERROR: <input>:1:1: invalid uint literal\n"
       " | 0xFFFFFFFFFFFFFFFFFu\n"
       " | ^"},
      {"1.99e90000009",
       "ERROR: <input>:1:1: invalid double literal\n"
       " | 1.99e90000009\n"
       " | ^"},
      {"has(m)",
       "ERROR: <input>:1:5: invalid argument to has() macro\n"
       " | has(m)\n"
       " | ....^"},
      {"[].existsOne(__result__, __result__)",
       "ERROR: <input>:1:14: iteration variable overwrites accumulator variable\n"
       " | [].existsOne(__result__, __result__)\n"
       " | .............^"},
      {"m.map(__result__, __result__)",
       "ERROR: <input>:1:7: iteration variable overwrites accumulator variable\n"
       " | m.map(__result__, __result__)\n"
       " | ......^"},
      {"m.filter(__result__, false)",
       "ERROR: <input>:1:10: iteration variable overwrites accumulator variable\n"
       " | m.filter(__result__, false)\n"
       " | .........^"},
      {"m.filter(a.b, false)",
       "ERROR: <input>:1:11: argument is not an identifier\n"
       " | m.filter(a.b, false)\n"
       " | ..........^"},
      {"1.all(2, 3)",
       "ERROR: <input>:1:7: argument must be a simple name\n"
       " | 1.all(2, 3)\n"
       " | ......^"},
      // A reserved identifier is refused where its expression starts, its leading dot included.
      {".if", "ERROR: <input>:1:1: reserved identifier: if\n | .if\n | ^"},
      // cel.bind of two arguments is no macro: `cel` is then an unknown name.
      {"cel.bind(a, 1)",
       "ERROR: <input>:1:1: undeclared reference to 'cel' (in container '')\n"
       " | cel.bind(a, 1)\n"
       " | ^"},
  };
  for (const char* reserved :
       {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
        "loop", "package", "namespace", "return", "var", "void", "while"}) {
    cases.push_back({reserved, absl::StrCat("ERROR: <input>:1:1: reserved identifier: ", reserved,
                                            "\n | ", reserved, "\n | ^")});
  }
  for (const Case& c : cases) EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
}

// The extensions' tests (ext/bindings_test.go TestBindingsInvalidIdent, ext/comprehensions_test.go
// TestTwoVarComprehensionsParseErrors), whose errors the selector environment's macros share.
TEST(CelErrorDisplayTest, MacroErrorsOfTheExtensions) {
  for (const Case& c : std::vector<Case>{
           {"cel.bind(a.b, 1, a.b)",
            "ERROR: <input>:1:11: cel.bind() variable names must be simple identifiers\n"
            " | cel.bind(a.b, 1, a.b)\n"
            " | ..........^"},
           {"[].all(i, i, i < i)",
            "ERROR: <input>:1:11: duplicate variable name: i\n"
            " | [].all(i, i, i < i)\n"
            " | ..........^"},
           {"[].all(__result__, i, __result__ < i)",
            "ERROR: <input>:1:8: iteration variable overwrites accumulator variable\n"
            " | [].all(__result__, i, __result__ < i)\n"
            " | .......^"},
           {"[].all(j, __result__, __result__ < j)",
            "ERROR: <input>:1:11: iteration variable overwrites accumulator variable\n"
            " | [].all(j, __result__, __result__ < j)\n"
            " | ..........^"},
           {"[].all(i.j, k, i.j < k)",
            "ERROR: <input>:1:9: argument must be a simple name\n"
            " | [].all(i.j, k, i.j < k)\n"
            " | ........^"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
}

// cel-go's TestCheck: the cases of the selector environment's names and functions.
TEST(CelErrorDisplayTest, CheckerErrorsAsCelGoShowsThem) {
  for (const Case& c : std::vector<Case>{
           {"foo",
            "ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n"
            " | foo\n"
            " | ^"},
           {"1 + x",
            "ERROR: <input>:1:5: undeclared reference to 'x' (in container '')\n"
            " | 1 + x\n"
            " | ....^"},
           {"device.foo == 1",
            "ERROR: <input>:1:7: undefined field 'foo'\n"
            " | device.foo == 1\n"
            " | ......^"},
           {"[].all(x, x) || device.driver[0] == 'a'",
            "ERROR: <input>:1:30: found no matching overload for '_[_]' applied to '(string, "
            "int)'\n"
            " | [].all(x, x) || device.driver[0] == 'a'\n"
            " | .............................^"},
           {"-'a' == 1",
            "ERROR: <input>:1:1: found no matching overload for '-_' applied to "
            "'(string)'\n"
            " | -'a' == 1\n"
            " | ^"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
}

// cel-go 0.26 refuses each operand of _&&_ and _||_ that is not bool where it stands, and so the
// predicate of all() and exists(), which expand into them (TestCheck's "x.all(e, 0)"); a
// comprehension over what is neither a list nor a map is refused at its range.
TEST(CelErrorDisplayTest, LogicalOperandsAndComprehensionsAsCelGoShowsThem) {
  for (const Case& c : std::vector<Case>{
           {"1 && true",
            "ERROR: <input>:1:1: expected type 'bool' but found 'int'\n"
            " | 1 && true\n"
            " | ^"},
           {"true || 'a'",
            "ERROR: <input>:1:9: expected type 'bool' but found 'string'\n"
            " | true || 'a'\n"
            " | ........^"},
           // Refused before the error of an operand after it.
           {"1 && x", "ERROR: <input>:1:1: expected type 'bool' but found 'int'\n | 1 && x\n | ^"},
           {"[1].all(e, 0)",
            "ERROR: <input>:1:12: expected type 'bool' but found 'int'\n"
            " | [1].all(e, 0)\n"
            " | ...........^"},
           {"[1].exists(e, e)",
            "ERROR: <input>:1:15: expected type 'bool' but found 'int'\n"
            " | [1].exists(e, e)\n"
            " | ..............^"},
           {"[1].exists_one(e, 0)",
            "ERROR: <input>:1:15: found no matching overload for '_?_:_' applied to '(int, int, "
            "int)'\n"
            " | [1].exists_one(e, 0)\n"
            " | ..............^"},
           {"device.driver.all(e, true)",
            "ERROR: <input>:1:7: expression of type 'string' cannot be range of a comprehension "
            "(must be list, map, or dynamic)\n"
            " | device.driver.all(e, true)\n"
            " | ......^"},
           {"1 ? true : false",
            "ERROR: <input>:1:3: found no matching overload for '_?_:_' "
            "applied to '(int, bool, bool)'\n"
            " | 1 ? true : false\n"
            " | ..^"},
           // Refused before its branches' errors, a branch that has one named "!error!".
           {"1 ? x : 2",
            "ERROR: <input>:1:3: found no matching overload for '_?_:_' applied to "
            "'(int, !error!, int)'\n"
            " | 1 ? x : 2\n"
            " | ..^"},
           // sortBy's range is refused at the call, where cel-go's expansion places it.
           {"device.driver.sortBy(x, x) == []",
            "ERROR: <input>:1:21: expression of type 'string' cannot be range of a comprehension "
            "(must be list, map, or dynamic)\n"
            " | device.driver.sortBy(x, x) == []\n"
            " | ....................^"},
           // An index and a conditional may be sorted, as cel-go's calls.
           {"[[1]][0].sortBy(x, x) == [1] && (true ? [1] : [2]).sortBy(x, x) == [1]", "compiled"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
}

}  // namespace
}  // namespace devmgr::cel
