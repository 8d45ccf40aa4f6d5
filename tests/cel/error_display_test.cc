// Compile errors as cel-go displays them ("ERROR: <input>:line:column: message", the line, a
// caret), against cel-go's own expectations: the cases of its parser's TestParse
// (parser/parser_test.go), checker's TestCheck (checker/checker_test.go) and the extensions'
// tests that fit the selector environment (every error listed, sorted by place, as cel-go lists
// them; of syntax errors, the first alone), and DisplayError's drawing of lines, tabs and wide
// characters.
#include "cel/error_display.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
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
      // cel.bind of two arguments is no macro but a call of bind() on `cel`: three unknown names.
      {"cel.bind(a, 1)",
       "ERROR: <input>:1:1: undeclared reference to 'cel' (in container '')\n"
       " | cel.bind(a, 1)\n"
       " | ^\n"
       "ERROR: <input>:1:9: undeclared reference to 'bind' (in container '')\n"
       " | cel.bind(a, 1)\n"
       " | ........^\n"
       "ERROR: <input>:1:10: undeclared reference to 'a' (in container '')\n"
       " | cel.bind(a, 1)\n"
       " | .........^"},
  };
  for (const char* reserved :
       {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
        "loop", "package", "namespace", "return", "var", "void", "while"}) {
    cases.push_back({reserved, absl::StrCat("ERROR: <input>:1:1: reserved identifier: ", reserved,
                                            "\n | ", reserved, "\n | ^")});
  }
  for (const Case& c : cases) EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
}

// The parser goes on past what it refuses once the grammar accepted it, as cel-go's: TestParse's
// "[1, 2, 3].map(var, var * var)" (a reserved name refused, then as a macro's variable), and
// errors of the same kinds side by side; within the arguments of a call of a reserved name,
// which cel-go does not look into, none.
TEST(CelErrorDisplayTest, EveryErrorOfTheParserIsListed) {
  for (const Case& c : std::vector<Case>{
           {"[1, 2, 3].map(var, var * var)",
            "ERROR: <input>:1:15: reserved identifier: var\n"
            " | [1, 2, 3].map(var, var * var)\n"
            " | ..............^\n"
            "ERROR: <input>:1:15: argument is not an identifier\n"
            " | [1, 2, 3].map(var, var * var)\n"
            " | ..............^\n"
            "ERROR: <input>:1:20: reserved identifier: var\n"
            " | [1, 2, 3].map(var, var * var)\n"
            " | ...................^\n"
            "ERROR: <input>:1:26: reserved identifier: var\n"
            " | [1, 2, 3].map(var, var * var)\n"
            " | .........................^"},
           {"has(a) && has(b.c) && has(1)",
            "ERROR: <input>:1:5: invalid argument to has() macro\n"
            " | has(a) && has(b.c) && has(1)\n"
            " | ....^\n"
            "ERROR: <input>:1:27: invalid argument to has() macro\n"
            " | has(a) && has(b.c) && has(1)\n"
            " | ..........................^"},
           {"99999999999999999999 + -9223372036854775809 == 1",
            "ERROR: <input>:1:1: invalid int literal\n"
            " | 99999999999999999999 + -9223372036854775809 == 1\n"
            " | ^\n"
            "ERROR: <input>:1:24: invalid int literal\n"
            " | 99999999999999999999 + -9223372036854775809 == 1\n"
            " | .......................^"},
           // A macro's own error, listed before an error within its arguments that stands after.
           {"[1].all(1, if)",
            "ERROR: <input>:1:9: argument must be a simple name\n"
            " | [1].all(1, if)\n"
            " | ........^\n"
            "ERROR: <input>:1:12: reserved identifier: if\n"
            " | [1].all(1, if)\n"
            " | ...........^"},
           {"if(while) || var.x",
            "ERROR: <input>:1:1: reserved identifier: if\n"
            " | if(while) || var.x\n"
            " | ^\n"
            "ERROR: <input>:1:14: reserved identifier: var\n"
            " | if(while) || var.x\n"
            " | .............^"},
           // What stands for a macro refused is where its variable is, as in cel-go.
           {"has([1].map(1, 1))",
            "ERROR: <input>:1:13: argument is not an identifier\n"
            " | has([1].map(1, 1))\n"
            " | ............^\n"
            "ERROR: <input>:1:13: invalid argument to has() macro\n"
            " | has([1].map(1, 1))\n"
            " | ............^"},
           // Within a reserved name's call, a syntax error alone; `if{}` is a message.
           {"if(99999999999999999999 +)",
            "ERROR: <input>:1:1: reserved identifier: if\n"
            " | if(99999999999999999999 +)\n"
            " | ^\n"
            "ERROR: <input>:1:26: Syntax error: unexpected token\n"
            " | if(99999999999999999999 +)\n"
            " | .........................^"},
           {"if{}", "ERROR: <input>:1:1: message construction is not supported\n | if{}\n | ^"},
           // A literal's sign is its place, not a selection's or an index's after it.
           {"-1.x == 1",
            "ERROR: <input>:1:3: type 'int' does not support field selection\n"
            " | -1.x == 1\n"
            " | ..^"},
           {"[1].all(-1[0], true)",
            "ERROR: <input>:1:11: argument must be a simple name\n"
            " | [1].all(-1[0], true)\n"
            " | ..........^"},
           // The errors found before a syntax error, and it.
           {"has(a) && )",
            "ERROR: <input>:1:5: invalid argument to has() macro\n"
            " | has(a) && )\n"
            " | ....^\n"
            "ERROR: <input>:1:11: Syntax error: unexpected token\n"
            " | has(a) && )\n"
            " | ..........^"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
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
           // A leading dot stays in the name (and has() so written is no macro); an identifier
           // stands after it.
           {".foo",
            "ERROR: <input>:1:2: undeclared reference to '.foo' (in container '')\n"
            " | .foo\n"
            " | .^"},
           {".has(device.driver)",
            "ERROR: <input>:1:5: undeclared reference to '.has' (in container '')\n"
            " | .has(device.driver)\n"
            " | ....^"},
           // A macro's variable written with the dot keeps it: no identifier names it.
           {"[1].all(.x, x == 1)",
            "ERROR: <input>:1:13: undeclared reference to 'x' (in container '')\n"
            " | [1].all(.x, x == 1)\n"
            " | ............^"},
           {"cel.bind(.x, 1, x)",
            "ERROR: <input>:1:17: undeclared reference to 'x' (in container '')\n"
            " | cel.bind(.x, 1, x)\n"
            " | ................^"},
           {"[1].all(x, .x == 1)",
            "ERROR: <input>:1:13: undeclared reference to '.x' (in container '')\n"
            " | [1].all(x, .x == 1)\n"
            " | ............^"},
           // No cel.bind macro: a call whose target and arguments are checked.
           {".cel.bind(x, 1, x)",
            "ERROR: <input>:1:2: undeclared reference to '.cel' (in container '')\n"
            " | .cel.bind(x, 1, x)\n"
            " | .^\n"
            "ERROR: <input>:1:10: undeclared reference to 'bind' (in container '')\n"
            " | .cel.bind(x, 1, x)\n"
            " | .........^\n"
            "ERROR: <input>:1:11: undeclared reference to 'x' (in container '')\n"
            " | .cel.bind(x, 1, x)\n"
            " | ..........^\n"
            "ERROR: <input>:1:17: undeclared reference to 'x' (in container '')\n"
            " | .cel.bind(x, 1, x)\n"
            " | ................^"},
           {"device.foo == 1",
            "ERROR: <input>:1:7: undefined field 'foo'\n"
            " | device.foo == 1\n"
            " | ......^"},
           {"[].all(x, x) || device.driver[0] == 'a'",
            "ERROR: <input>:1:30: found no matching overload for '_[_]' applied to '(string, "
            "int)'\n"
            " | [].all(x, x) || device.driver[0] == 'a'\n"
            " | .............................^"},
           // A field of a map is its value type whatever the map's key type, as cel-go's
           // checker has it (the selection fails when evaluated: no such key).
           {"{1: 'a'}.foo == 'a'", "compiled"},
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
           // Each operand refused, and an unknown name within one.
           {"1 && x",
            "ERROR: <input>:1:1: expected type 'bool' but found 'int'\n | 1 && x\n | ^\n"
            "ERROR: <input>:1:6: undeclared reference to 'x' (in container '')\n"
            " | 1 && x\n"
            " | .....^"},
           {"1 || 'a'",
            "ERROR: <input>:1:1: expected type 'bool' but found 'int'\n | 1 || 'a'\n | ^\n"
            "ERROR: <input>:1:6: expected type 'bool' but found 'string'\n"
            " | 1 || 'a'\n"
            " | .....^"},
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
           // A branch with an error of its own is named "!error!".
           {"1 ? x : 2",
            "ERROR: <input>:1:3: found no matching overload for '_?_:_' applied to "
            "'(int, !error!, int)'\n"
            " | 1 ? x : 2\n"
            " | ..^\n"
            "ERROR: <input>:1:5: undeclared reference to 'x' (in container '')\n"
            " | 1 ? x : 2\n"
            " | ....^"},
           // sortBy's range is refused at the call, where cel-go's expansion places it, and then
           // the call its expansion makes on the range, with keys of the error type.
           {"device.driver.sortBy(x, x) == []",
            "ERROR: <input>:1:21: expression of type 'string' cannot be range of a comprehension "
            "(must be list, map, or dynamic)\n"
            " | device.driver.sortBy(x, x) == []\n"
            " | ....................^\n"
            "ERROR: <input>:1:21: found no matching overload for '@sortByAssociatedKeys' applied "
            "to 'string.(list(!error!))'\n"
            " | device.driver.sortBy(x, x) == []\n"
            " | ....................^"},
           // filter(), map() of three arguments and the transforms of four expand into
           // `predicate ? accumulator + [item] : accumulator` (or a cel.@mapInsert()), refused
           // where the call opens with the accumulator's type.
           {"[1].filter(x, 0) == []",
            "ERROR: <input>:1:11: found no matching overload for '_?_:_' applied to "
            "'(int, list(int), list(int))'\n"
            " | [1].filter(x, 0) == []\n"
            " | ..........^"},
           {"{'a': 1}.filter(k, 1) == []",
            "ERROR: <input>:1:16: found no matching overload for '_?_:_' applied to "
            "'(int, list(string), list(string))'\n"
            " | {'a': 1}.filter(k, 1) == []\n"
            " | ...............^"},
           {"[1].map(x, 'p', x * 2) == []",
            "ERROR: <input>:1:8: found no matching overload for '_?_:_' applied to "
            "'(string, list(int), list(int))'\n"
            " | [1].map(x, 'p', x * 2) == []\n"
            " | .......^"},
           {"[1].transformMap(i, v, 1, v) == {}",
            "ERROR: <input>:1:17: found no matching overload for '_?_:_' applied to "
            "'(int, map(int, int), map(int, int))'\n"
            " | [1].transformMap(i, v, 1, v) == {}\n"
            " | ................^"},
           {"{'a': 1}.transformMapEntry(k, v, 0, {k: v}) == {}",
            "ERROR: <input>:1:27: found no matching overload for '_?_:_' applied to "
            "'(int, map(string, int), map(string, int))'\n"
            " | {'a': 1}.transformMapEntry(k, v, 0, {k: v}) == {}\n"
            " | ..........................^"},
           // The insertion refused first, then the condition, whose next value is an error.
           {"[1].transformMapEntry(i, v, 0, v) == {}",
            "ERROR: <input>:1:22: found no matching overload for 'cel.@mapInsert' applied to "
            "'(map(dyn, dyn), int)'\n"
            " | [1].transformMapEntry(i, v, 0, v) == {}\n"
            " | .....................^\n"
            "ERROR: <input>:1:22: found no matching overload for '_?_:_' applied to "
            "'(int, !error!, map(dyn, dyn))'\n"
            " | [1].transformMapEntry(i, v, 0, v) == {}\n"
            " | .....................^"},
           // TestCheck's "x.all(e, 0)": the range and the predicate both refused.
           {"device.driver.all(e, 0)",
            "ERROR: <input>:1:7: expression of type 'string' cannot be range of a comprehension "
            "(must be list, map, or dynamic)\n"
            " | device.driver.all(e, 0)\n"
            " | ......^\n"
            "ERROR: <input>:1:22: expected type 'bool' but found 'int'\n"
            " | device.driver.all(e, 0)\n"
            " | .....................^"},
           // An index and a conditional may be sorted, as cel-go's calls.
           {"[[1]][0].sortBy(x, x) == [1] && (true ? [1] : [2]).sortBy(x, x) == [1]", "compiled"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
}

// Every error the checker meets is listed, sorted by place, as cel-go's checker goes on past each:
// TestCheck's "x.single_nested_message.undefined == x.undefined && ..." and "1 <= 1.0 && 1u <=
// 1.0 && ..." (each comparison refused) in the selector environment's terms. What an error is
// found in is of the error type, which any overload takes (`x + 1 == 2` is one error).
TEST(CelErrorDisplayTest, EveryErrorOfTheCheckIsListed) {
  for (const Case& c : std::vector<Case>{
           {"device.foo == device.bar && has(device.driver)",
            "ERROR: <input>:1:7: undefined field 'foo'\n"
            " | device.foo == device.bar && has(device.driver)\n"
            " | ......^\n"
            "ERROR: <input>:1:21: undefined field 'bar'\n"
            " | device.foo == device.bar && has(device.driver)\n"
            " | ....................^"},
           {"1 <= 'a' && 'b' <= 1.0",
            "ERROR: <input>:1:3: found no matching overload for '_<=_' applied to '(int, string)'\n"
            " | 1 <= 'a' && 'b' <= 1.0\n"
            " | ..^\n"
            "ERROR: <input>:1:17: found no matching overload for '_<=_' applied to "
            "'(string, double)'\n"
            " | 1 <= 'a' && 'b' <= 1.0\n"
            " | ................^"},
           {"x + 1 == 2",
            "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x + 1 == 2\n | "
            "^"},
           // The sum is an int, the one overload of _+_ that takes the 1 says, as in cel-go.
           {"x + 1 == 'a'",
            "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n"
            " | x + 1 == 'a'\n"
            " | ^\n"
            "ERROR: <input>:1:7: found no matching overload for '_==_' applied to '(int, string)'\n"
            " | x + 1 == 'a'\n"
            " | ......^"},
           // has() tests presence where the call opens.
           {"has(device.foo)",
            "ERROR: <input>:1:4: undefined field 'foo'\n | has(device.foo)\n | ...^"},
           // A function called in the other style is declared: no overload matches.
           {"startsWith(device.driver, 'a')",
            "ERROR: <input>:1:11: found no matching overload for 'startsWith' applied to "
            "'(string, string)'\n"
            " | startsWith(device.driver, 'a')\n"
            " | ..........^"},
           {"device.driver.quantity() == quantity('1')",
            "ERROR: <input>:1:23: found no matching overload for 'quantity' applied to "
            "'string.()'\n"
            " | device.driver.quantity() == quantity('1')\n"
            " | ......................^"},
           // An error joins the items after it as their type, and takes the place of those
           // before it (cel-go's mostGeneral): [x, 1] is a list(int), [1, x] a list(!error!).
           {"device.driver in [devic, 1]",
            "ERROR: <input>:1:15: found no matching overload for '@in' applied to "
            "'(string, list(int))'\n"
            " | device.driver in [devic, 1]\n"
            " | ..............^\n"
            "ERROR: <input>:1:19: undeclared reference to 'devic' (in container '')\n"
            " | device.driver in [devic, 1]\n"
            " | ..................^"},
           {"[1, x] == 1",
            "ERROR: <input>:1:5: undeclared reference to 'x' (in container '')\n"
            " | [1, x] == 1\n"
            " | ....^\n"
            "ERROR: <input>:1:8: found no matching overload for '_==_' applied to "
            "'(list(!error!), int)'\n"
            " | [1, x] == 1\n"
            " | .......^"},
           // A conditional's type is its first branch's where the other is an error, and list +
           // error the list's.
           {"(true ? 1 : x) == 'a'",
            "ERROR: <input>:1:13: undeclared reference to 'x' (in container '')\n"
            " | (true ? 1 : x) == 'a'\n"
            " | ............^\n"
            "ERROR: <input>:1:16: found no matching overload for '_==_' applied to '(int, "
            "string)'\n"
            " | (true ? 1 : x) == 'a'\n"
            " | ...............^"},
           // Within a list too: the more general of the two, the first branch's of equals.
           {"(true ? [x] : [1]) == ['a']",
            "ERROR: <input>:1:10: undeclared reference to 'x' (in container '')\n"
            " | (true ? [x] : [1]) == ['a']\n"
            " | .........^"},
           {"(true ? [1] : [x]) == ['a']",
            "ERROR: <input>:1:16: undeclared reference to 'x' (in container '')\n"
            " | (true ? [1] : [x]) == ['a']\n"
            " | ...............^\n"
            "ERROR: <input>:1:20: found no matching overload for '_==_' applied to "
            "'(list(int), list(string))'\n"
            " | (true ? [1] : [x]) == ['a']\n"
            " | ...................^"},
           {"true ? [x] : 1",
            "ERROR: <input>:1:6: found no matching overload for '_?_:_' applied to "
            "'(bool, list(!error!), int)'\n"
            " | true ? [x] : 1\n"
            " | .....^\n"
            "ERROR: <input>:1:9: undeclared reference to 'x' (in container '')\n"
            " | true ? [x] : 1\n"
            " | ........^"},
           {"x + [1] == ['a']",
            "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n"
            " | x + [1] == ['a']\n"
            " | ^\n"
            "ERROR: <input>:1:9: found no matching overload for '_==_' applied to "
            "'(list(int), list(string))'\n"
            " | x + [1] == ['a']\n"
            " | ........^"},
           // A transformMapEntry() whose entries are no maps is still of a map type.
           {"[1].transformMapEntry(i, v, v) == 1",
            "ERROR: <input>:1:22: found no matching overload for 'cel.@mapInsert' applied to "
            "'(map(dyn, dyn), int)'\n"
            " | [1].transformMapEntry(i, v, v) == 1\n"
            " | .....................^\n"
            "ERROR: <input>:1:32: found no matching overload for '_==_' applied to "
            "'(map(dyn, dyn), int)'\n"
            " | [1].transformMapEntry(i, v, v) == 1\n"
            " | ...............................^"},
           // sortBy() of a dynamic range by dynamic keys is dyn: every overload (one per key
           // type, each of its own element type) takes it.
           {"device.attributes['a'].b.sortBy(v, v) == 1", "compiled"},
           // The same name misspelt twice.
           {"devic.driver == 'a' || devic.driver == 'b'",
            "ERROR: <input>:1:1: undeclared reference to 'devic' (in container '')\n"
            " | devic.driver == 'a' || devic.driver == 'b'\n"
            " | ^\n"
            "ERROR: <input>:1:24: undeclared reference to 'devic' (in container '')\n"
            " | devic.driver == 'a' || devic.driver == 'b'\n"
            " | .......................^"},
           // An error within a macro's range does not stop its predicate's from being listed.
           {"y.all(e, e + z)",
            "ERROR: <input>:1:1: undeclared reference to 'y' (in container '')\n"
            " | y.all(e, e + z)\n"
            " | ^\n"
            "ERROR: <input>:1:14: undeclared reference to 'z' (in container '')\n"
            " | y.all(e, e + z)\n"
            " | .............^"},
           // Of a predicate and a name within it, both (cel-go lists the _&&_ of all()'s
           // expansion).
           {"[1].all(x, x + y)",
            "ERROR: <input>:1:14: expected type 'bool' but found 'int'\n"
            " | [1].all(x, x + y)\n"
            " | .............^\n"
            "ERROR: <input>:1:16: undeclared reference to 'y' (in container '')\n"
            " | [1].all(x, x + y)\n"
            " | ...............^"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
}

// The validators' refusals, once the checker has refused nothing: of each list literal its first
// item of another type, of each map literal every key and value of another type than the first
// entry's, each pattern and each format() (cel/validator.go, ext/formatting_v2.go).
TEST(CelErrorDisplayTest, EveryRefusalOfTheValidatorsIsListed) {
  for (const Case& c : std::vector<Case>{
           {"[1, 'a', 'b'] == [2, true]",
            "ERROR: <input>:1:5: expected type 'int' but found 'string'\n"
            " | [1, 'a', 'b'] == [2, true]\n"
            " | ....^\n"
            "ERROR: <input>:1:22: expected type 'int' but found 'bool'\n"
            " | [1, 'a', 'b'] == [2, true]\n"
            " | .....................^"},
           {"{'a': 1, 'b': 'x', 2: 'y'}.size() == 3",
            "ERROR: <input>:1:15: expected type 'int' but found 'string'\n"
            " | {'a': 1, 'b': 'x', 2: 'y'}.size() == 3\n"
            " | ..............^\n"
            "ERROR: <input>:1:20: expected type 'string' but found 'int'\n"
            " | {'a': 1, 'b': 'x', 2: 'y'}.size() == 3\n"
            " | ...................^\n"
            "ERROR: <input>:1:23: expected type 'int' but found 'string'\n"
            " | {'a': 1, 'b': 'x', 2: 'y'}.size() == 3\n"
            " | ......................^"},
           // A map's entries are compared with the first's, whose free type variable the entries
           // before a difference bind.
           {"{'a': [], 'b': [1], 'c': 'x', 'd': ['y']}.size() == 4",
            "ERROR: <input>:1:26: expected type 'list(int)' but found 'string'\n"
            " | {'a': [], 'b': [1], 'c': 'x', 'd': ['y']}.size() == 4\n"
            " | .........................^\n"
            "ERROR: <input>:1:36: expected type 'list(int)' but found 'list(string)'\n"
            " | {'a': [], 'b': [1], 'c': 'x', 'd': ['y']}.size() == 4\n"
            " | ...................................^"},
           // Once two differed, a later item's free type variable is bound by none (dyn).
           {"{'a': [1], 'b': 'x', 'c': []}.size() == 3",
            "ERROR: <input>:1:17: expected type 'list(int)' but found 'string'\n"
            " | {'a': [1], 'b': 'x', 'c': []}.size() == 3\n"
            " | ................^\n"
            "ERROR: <input>:1:27: expected type 'list(int)' but found 'list(dyn)'\n"
            " | {'a': [1], 'b': 'x', 'c': []}.size() == 3\n"
            " | ..........................^"},
           // Two at one place in the order the validators run: literals before format().
           {"[1, '%s'.format([1, 2])].size() == 2",
            "ERROR: <input>:1:16: expected type 'int' but found 'string'\n"
            " | [1, '%s'.format([1, 2])].size() == 2\n"
            " | ...............^\n"
            "ERROR: <input>:1:16: too many arguments supplied to string.format (expected 1, got "
            "2)\n"
            " | [1, '%s'.format([1, 2])].size() == 2\n"
            " | ...............^"},
           {"'a'.matches('[') || 'b'.matches('(')",
            "ERROR: <input>:1:13: invalid matches argument\n"
            " | 'a'.matches('[') || 'b'.matches('(')\n"
            " | ............^\n"
            "ERROR: <input>:1:33: invalid matches argument\n"
            " | 'a'.matches('[') || 'b'.matches('(')\n"
            " | ................................^"},
       }) {
    EXPECT_EQ(Refusal(c.expression), c.error) << c.expression;
  }
}

// cel-go keeps the first 100 errors reported and says how many more there were.
TEST(CelErrorDisplayTest, AHundredErrorsAreShownAndTheRestCounted) {
  std::string expression = "[x";
  for (int i = 1; i < 103; ++i) absl::StrAppend(&expression, ", x");
  absl::StrAppend(&expression, "].size() == 103");
  const std::string refusal = Refusal(expression);
  size_t shown = 0;
  for (size_t at = refusal.find("ERROR: "); at != std::string::npos;
       at = refusal.find("ERROR: ", at + 1)) {
    ++shown;
  }
  EXPECT_EQ(shown, 100u);
  EXPECT_TRUE(absl::EndsWith(refusal, "\n3 more errors were truncated")) << refusal.substr(0, 200);
  // The 100th x, at byte 298.
  EXPECT_EQ(refusal.rfind("ERROR: <input>:1:299: undeclared reference to 'x'"),
            refusal.rfind("ERROR: "));
}

// Of more than 100 errors the syntax error that ended the parse is kept, as cel-go's grammar
// reports it before its parser refuses anything else.
TEST(CelErrorDisplayTest, TheSyntaxErrorIsKeptAmongAHundredOthers) {
  std::string expression = "[if";
  for (int i = 1; i < 101; ++i) absl::StrAppend(&expression, ", if");
  absl::StrAppend(&expression, ", )");
  const std::string refusal = Refusal(expression);
  EXPECT_NE(refusal.find("Syntax error: unexpected token"), std::string::npos);
  EXPECT_TRUE(absl::EndsWith(refusal, "\n2 more errors were truncated")) << refusal.substr(0, 200);
}

// DisplayErrors sorts by place, keeping the order given of errors at one place.
TEST(CelErrorDisplayTest, ErrorsAreSortedByPlace) {
  EXPECT_EQ(DisplayErrors("ab", {{1, "second"}, {0, "first"}, {1, "third"}}),
            "ERROR: <input>:1:1: first\n | ab\n | ^\n"
            "ERROR: <input>:1:2: second\n | ab\n | .^\n"
            "ERROR: <input>:1:2: third\n | ab\n | .^");
}

}  // namespace
}  // namespace devmgr::cel
