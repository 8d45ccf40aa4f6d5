// The CEL subset beyond upstream's selector table: the language's own semantics (errors that
// && and || absorb and those nothing absorbs, macros, literals, arithmetic at the int limits,
// conversions), the string, Semver, Quantity and optional libraries, and what is refused at
// compile time rather than evaluated approximately. Expected values follow cel-spec and
// cel-go's behaviour.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cel/program.h"
#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

Device TestDevice() {
  Device device;
  device.driver = "gpu.example.com";
  device.attributes["model"] = Value::String("a100");
  device.attributes["index"] = Value::Int(3);
  device.attributes["healthy"] = Value::Bool(true);
  device.attributes["driverVersion"] = Value::SemverOf(*kubeapi::Semver::Parse("535.104.5"));
  device.attributes["other.example.com/zone"] = Value::String("east");
  device.capacity["memory"] = *kubeapi::Quantity::Parse("40Gi");
  return device;
}

// Eval: the expression's result for TestDevice() (eval_text.h).
std::string Eval(const std::string& expression) { return EvalText(expression, TestDevice()); }

TEST(CelLanguageTest, SelectorsSeenInPractice) {
  for (
      const std::string expression : {
          R"(device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100")",
          R"(device.attributes["gpu.example.com"].model.contains("100"))",
          R"(has(device.attributes["gpu.example.com"].model))",
          R"(!has(device.attributes["gpu.example.com"].pciAddress))",
          R"(device.attributes["gpu.example.com"].driverVersion.major() == 535)",
          R"(!device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("500.0.0")))",
          R"(device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0)",
          R"("gpu.example.com" in device.attributes)",
          R"(device.attributes["other.example.com"].zone == "east")",
          R"(device.attributes["gpu.example.com"].exists(k, k == "model"))",
          R"(device.attributes["gpu.example.com"].index in [1, 2, 3])",
      }) {
    EXPECT_EQ(Eval(expression), "true") << expression;
  }
}

TEST(CelLanguageTest, ErrorsFlowExceptWhereLogicDecides) {
  const std::string missing = R"(device.attributes["gpu.example.com"].missing)";
  EXPECT_EQ(Eval("false && " + missing), "false");
  EXPECT_EQ(Eval(missing + " && false"), "false");
  EXPECT_EQ(Eval("true || " + missing), "true");
  EXPECT_EQ(Eval(missing + " || true"), "true");
  EXPECT_EQ(Eval("true && " + missing), "error: no such key: missing");
  EXPECT_EQ(Eval(missing + " || false"), "error: no such key: missing");
  // all() is false once an element is false, whatever another element's predicate did.
  EXPECT_EQ(Eval("[0, 1].all(x, 10 / x < 5)"), "false");
  EXPECT_EQ(Eval("[0, 1].exists(x, 10 / x > 5)"), "true");
  EXPECT_EQ(Eval("[0, 20].all(x, 10 / x < 5)"), "error: division by zero");
  EXPECT_EQ(Eval("[0, 1].exists_one(x, 10 / x > 5)"), "error: division by zero");
  EXPECT_EQ(Eval("1 / 0 == 1 ? true : false"), "error: division by zero");
  // A value that is not a map has no fields: has() is false, a selection fails (cel-go's).
  const std::string model = R"(device.attributes["gpu.example.com"].model)";
  EXPECT_EQ(Eval("has(" + model + ".x)"), "false");
  EXPECT_EQ(Eval(model + ".x == 1"), "error: no such key: x");
}

TEST(CelLanguageTest, Macros) {
  EXPECT_EQ(Eval("[1, 2, 3].map(x, x * 2) == [2, 4, 6]"), "true");
  EXPECT_EQ(Eval("[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]"), "true");
  EXPECT_EQ(Eval("[1, 2, 3].filter(x, x % 2 == 1) == [1, 3]"), "true");
  EXPECT_EQ(Eval("[1, 2, 3].exists_one(x, x == 2)"), "true");
  EXPECT_EQ(Eval("[2, 2].exists_one(x, x == 2)"), "false");
  // existsOne, cel-go's newer name among its standard macros (parser/macro.go's examples).
  EXPECT_EQ(Eval("[1, 2, 2].existsOne(i, i < 2)"), "true");
  EXPECT_EQ(Eval("[1, 2, 3, 4].existsOne(num, num % 2 == 0)"), "false");
  EXPECT_EQ(Eval("{'a': 'hello', 'aa': 'hellohello'}.existsOne(k, k.startsWith('a'))"), "false");
  EXPECT_EQ(Eval(R"({"a": 1, "b": 2}.all(k, k.size() == 1))"), "true");
  EXPECT_EQ(Eval("cel.bind(x, 2, cel.bind(y, x * 3, y == 6))"), "true");
  // A leading dot names the global: here the device, not the iteration variable.
  EXPECT_EQ(Eval("[1].all(device, device == 1 && .device.driver == 'gpu.example.com')"), "true");
  // `.i` and `i` are two names.
  EXPECT_EQ(Eval("[1].all(.i, i, true)"), "true");
  EXPECT_EQ(Eval(".size('ab') == 2 && .ip('1.2.3.4').family() == 4 && .ip.isCanonical('::1')"),
            "true");
  EXPECT_EQ(Eval("type(.ip('::1')) == .net.IP"), "true");
  EXPECT_EQ(Eval("[].all(x, false)"), "true");
  EXPECT_EQ(Eval("[].exists(x, true)"), "false");
}

TEST(CelLanguageTest, LiteralsAndArithmetic) {
  EXPECT_EQ(Eval("0x10 == 16 && 1u == 1u && 1.5e1 == 15.0 && -1 < 0"), "true");
  EXPECT_EQ(Eval("9223372036854775807 + 1 > 0"), "error: integer overflow");
  EXPECT_EQ(Eval("-9223372036854775808 - 1 < 0"), "error: integer overflow");
  EXPECT_EQ(Eval("-9223372036854775808 < 0"), "true");
  EXPECT_EQ(Eval("0u - 1u > 0u"), "error: integer overflow");
  EXPECT_EQ(Eval("7 % 0 == 0"), "error: modulus by zero");
  EXPECT_EQ(Eval("dyn(1) == 1u && dyn(1) == 1.0 && 2u < 3 && 2.5 > 2"), "true");
  EXPECT_EQ(Eval(R"("abc" < "abd" && b"a" < b"b" && false < true)"), "true");
  EXPECT_EQ(Eval(R"('a\x41\u00e9\101' == "aAéA")"), "true");
  EXPECT_EQ(Eval(R"(r"\d" == "\\d" && """x
y""".size() == 3)"),
            "true");
  EXPECT_EQ(Eval("[1] + [2] == [1, 2] && size([1, 2]) == 2"), "true");
  EXPECT_EQ(Eval(R"({"a": 1}["a"] == 1 && {"a": 1, "b": 2}.size() == 2)"), "true");
  EXPECT_EQ(Eval(R"({"a": 1, "a": 2}.size() == 2)"), "error: Failed with repeated key: a");
  EXPECT_EQ(Eval("[1, 2][2] == 1"), "error: index out of range: 2");
  EXPECT_EQ(Eval("9223372036854775808 > 0"),
            "compile: compilation failed: ERROR: <input>:1:1: invalid int literal\n"
            " | 9223372036854775808 > 0\n"
            " | ^");
}

TEST(CelLanguageTest, Conversions) {
  EXPECT_EQ(Eval(R"(int("42") == 42 && uint(42) == 42u && double(1) == 1.0)"), "true");
  EXPECT_EQ(Eval(R"(string(42) == "42" && string(true) == "true" && bytes("a") == b"a")"), "true");
  EXPECT_EQ(Eval("int(3.9) == 3 && int(-3.9) == -3"), "true");
  EXPECT_EQ(Eval("int(1e19) > 0"), "error: range error converting double to int");
  EXPECT_EQ(Eval("uint(-1) > 0u"), "error: range error converting int to uint");
  EXPECT_EQ(Eval(R"(int("x") == 0)"), "error: cannot convert \"x\" to int");
  // As Go's strconv: no spaces around the number, no sign for a uint.
  EXPECT_EQ(Eval(R"(int(" 5") == 5)"), "error: cannot convert \" 5\" to int");
  EXPECT_EQ(Eval(R"(int("5 ") == 5)"), "error: cannot convert \"5 \" to int");
  EXPECT_EQ(Eval(R"(double(" 1.5") == 1.5)"), "error: cannot convert \" 1.5\" to double");
  EXPECT_EQ(Eval(R"(uint("+5") == 5u)"), "error: cannot convert \"+5\" to uint");
  EXPECT_EQ(Eval(R"(int("+5") == 5 && int("-5") == -5 && double("-.5") == -0.5)"), "true");
  // As Go's strconv.ParseFloat: a number too large for a double is an error, not infinity; a
  // hexadecimal one needs its binary exponent; infinity and NaN are spelled out.
  EXPECT_EQ(Eval(R"(double("1e400") > 0.0)"), "error: cannot convert \"1e400\" to double");
  EXPECT_EQ(Eval(R"(double("-1e400") < 0.0)"), "error: cannot convert \"-1e400\" to double");
  EXPECT_EQ(Eval(R"(double("0x10") == 16.0)"), "error: cannot convert \"0x10\" to double");
  EXPECT_EQ(Eval(R"(double("0x1p4") == 16.0 && double("1e-400") == 0.0)"), "true");
  EXPECT_EQ(Eval(R"(double("-Inf") < 0.0 && double("infinity") > 0.0)"), "true");
  EXPECT_EQ(Eval(R"(double("NaN") != double("nan"))"), "true");
  EXPECT_EQ(Eval(R"(double("0x1p2000") > 0.0)"), "error: cannot convert \"0x1p2000\" to double");
  EXPECT_EQ(Eval(R"(double("-nan") != 0.0)"), "error: cannot convert \"-nan\" to double");
  EXPECT_EQ(Eval(R"(bool("true") && !bool("0"))"), "true");
  // Doubles print as Go's %g does (cel-go's string(double)).
  EXPECT_EQ(Eval(R"(string(100000.0) == "100000" && string(1e6) == "1e+06")"), "true");
  EXPECT_EQ(Eval(R"(string(0.0001) == "0.0001" && string(-1.5e-7) == "-1.5e-07")"), "true");
  EXPECT_EQ(Eval(R"(string(123456789.5) == "1.234567895e+08" && string(-0.0) == "-0")"), "true");
  EXPECT_EQ(Eval(R"(string(1.0 / 0.0) == "+Inf" && string(0.0 / 0.0) == "NaN")"), "true");
  EXPECT_EQ(Eval(R"(string(b"\xff") == "")"),
            "error: invalid UTF-8 in bytes, cannot convert to string");
  EXPECT_EQ(Eval("int(-9223372036854775808.0) < 0"), "error: range error converting double to int");
}

TEST(CelLanguageTest, Strings) {
  EXPECT_EQ(Eval(R"("héllo".size() == 5 && "héllo".charAt(1) == "é")"), "true");
  EXPECT_EQ(
      Eval(R"("a-b-c".split("-") == ["a", "b", "c"] && "a-b-c".split("-", 2) == ["a", "b-c"])"),
      "true");
  EXPECT_EQ(Eval(R"("  x y ".trim() == "x y" && "AbC".lowerAscii() == "abc")"), "true");
  EXPECT_EQ(Eval(R"("abcabc".indexOf("c") == 2 && "abcabc".lastIndexOf("c") == 5)"), "true");
  EXPECT_EQ(Eval(R"("hello".substring(1, 3) == "el" && "aaa".replace("a", "b", 2) == "bba")"),
            "true");
  EXPECT_EQ(Eval(R"(["a", "b"].join("/") == "a/b")"), "true");
  EXPECT_EQ(Eval(R"("gpu-12".find("[0-9]+") == "12" && "a1b22".findAll("[0-9]+") == ["1", "22"])"),
            "true");
  EXPECT_EQ(Eval(R"("abc".matches("^a.c$") && matches("abc", "b"))"), "true");
  EXPECT_EQ(Eval(R"("abc".matches(device.attributes["gpu.example.com"].model + "("))"),
            "error: error parsing regexp: missing closing ): `a100(`");
  EXPECT_EQ(Eval(R"("abc".substring(2, 1) == "")"),
            "error: invalid substring range. start: 2, end: 1");
}

// The lexer takes what CEL's grammar takes: no \\u or \\U escapes in a bytes literal, and a
// hexadecimal number begins with a lower-case 0x.
TEST(CelLanguageTest, LiteralsAsCelsGrammarHasThem) {
  EXPECT_EQ(Eval(R"(size(b'\xc3\xa9') == 2 && b'\303' == b'\xc3' && 0x1F == 31 && 0x1Fu == 31u)"),
            "true");
  EXPECT_TRUE(absl::StartsWith(Eval(R"(size(b'\u00e9') == 2)"), "compile: ")) << "\\u in bytes";
  EXPECT_TRUE(absl::StrContains(Eval(R"(size(b'\u00e9') == 2)"), "unable to unescape string"));
  EXPECT_TRUE(absl::StartsWith(Eval(R"(size(b'\U000000e9') == 1)"), "compile: "));
  EXPECT_EQ(Eval(R"(size('\u00e9') == 1)"), "true") << "in a string it is a code point";
  EXPECT_TRUE(absl::StartsWith(Eval("0XFFu == 255u"), "compile: ")) << "0X";
}

// The offset forms as cel-go's (v0.26, ext/strings.go indexOfOffset and lastIndexOfOffset): an
// offset at or past the end finds nothing rather than failing (a selector comparing
// model.indexOf("x", 5) on a shorter model must not fail the allocation), a negative one is an
// error, and an empty needle is found at the offset given.
TEST(CelLanguageTest, IndexOfWithAnOffset) {
  EXPECT_EQ(Eval(R"("héllo".indexOf("l", 3) == 3 && "héllo".lastIndexOf("l", 2) == 2)"), "true");
  EXPECT_EQ(Eval(R"("abc".indexOf("c", 10) == -1 && "abc".indexOf("c", 3) == -1)"), "true");
  EXPECT_EQ(Eval(R"("abc".indexOf("c", 2) == 2 && "abc".lastIndexOf("c", 2) == 2)"), "true");
  EXPECT_EQ(Eval(R"("abc".lastIndexOf("c", 3) == -1 && "abc".lastIndexOf("c", 9) == -1)"), "true");
  EXPECT_EQ(Eval(R"("abcabc".lastIndexOf("bc", 5) == 4)"), "true") << "clamped to where it fits";
  EXPECT_EQ(Eval(R"("abc".indexOf("c", -1) == 0)"), "error: index out of range: -1");
  EXPECT_EQ(Eval(R"("abc".lastIndexOf("c", -1) == 0)"), "error: index out of range: -1");
  EXPECT_EQ(Eval(R"("abc".indexOf("", 10) == 10 && "abc".lastIndexOf("", 1) == 1)"), "true");
  EXPECT_EQ(Eval(R"("abc".indexOf("") == 0 && "héllo".lastIndexOf("") == 5)"), "true");
}

TEST(CelLanguageTest, SemverAndQuantity) {
  EXPECT_EQ(Eval(R"(semver("1.2.3").compareTo(semver("1.2.4")) == -1)"), "true");
  EXPECT_EQ(Eval(R"(semver("1.0.0-rc.1").isLessThan(semver("1.0.0")))"), "true");
  EXPECT_EQ(Eval(R"(isSemver("1.0") == false && isSemver("1.0", true))"), "true");
  EXPECT_EQ(Eval(R"(semver("1.0.0") == semver("1.0.0+build"))"), "true");
  EXPECT_EQ(Eval(R"(semver("1.0") == semver("1.0.0"))"),
            "error: \"1.0\" is not a semantic version: no Major.Minor.Patch elements found");
  EXPECT_EQ(Eval(R"(quantity("1.5Gi").add(quantity("512Mi")) == quantity("2Gi"))"), "true");
  // ParseQuantity caps a binary quantity at int64's largest.
  EXPECT_EQ(Eval(R"(quantity("10Ei") == quantity("9223372036854775807"))"), "true");
  EXPECT_EQ(Eval(R"(quantity("10Ei").isGreaterThan(quantity("9Ei")))"), "false");
  EXPECT_EQ(Eval(R"(sign(quantity("1").sub(2)) == -1 && quantity("2k").asInteger() == 2000)"),
            "true");
  // sign is a function, not a method: upstream declares it with cel.Overload.
  EXPECT_FALSE(Program::Compile(R"(quantity("1").sign() == 1)").ok());
  EXPECT_EQ(
      Eval(
          R"(quantity("100m").isInteger() == false && quantity("100m").asApproximateFloat() == 0.1)"),
      "true");
  EXPECT_EQ(Eval(R"(isQuantity("1Gi") && !isQuantity("1 Gi"))"), "true");
  EXPECT_EQ(Eval(R"(quantity("1.5").asInteger() == 1)"), "error: cannot convert value to integer");
}

// isInteger() and asInteger() follow resource.Quantity's AsInt64, which depends on how the
// quantity was written and computed: a 64-bit mantissa at a scale of 0 or more converts; a
// fraction's scale ("2.0", "2000m"), a binary suffix beyond its fast path ("1.5Gi", "1Pi") or a
// sum that carries a fraction's scale does not, whatever the value.
TEST(CelLanguageTest, QuantityIsIntegerAsUpstreamStoresIt) {
  for (const char* whole : {"0", "2", "+2", "-7", "2k", "1.5k", "1e3", "1Gi", "1Ti", "0Gi", "000",
                            "999999999999999999"}) {
    EXPECT_EQ(Eval(absl::StrCat(R"(quantity(")", whole, R"(").isInteger())")), "true") << whole;
  }
  // 19 digits are past the mantissa's fast path, whatever their value.
  for (const char* not_converted : {"2.0", "2000m", "100m", "0.0", "1.5Gi", "1Pi", "100Ti",
                                    "1000000000000000000", "0.0000000001"}) {
    EXPECT_EQ(Eval(absl::StrCat(R"(quantity(")", not_converted, R"(").isInteger())")), "false")
        << not_converted;
  }
  EXPECT_EQ(Eval(R"(quantity("2000m").asInteger() == 2)"),
            "error: cannot convert value to integer");
  EXPECT_EQ(Eval(R"(quantity("1.5").add(quantity("0.5")).isInteger())"), "false");
  EXPECT_EQ(Eval(R"(quantity("1.5").sub(quantity("1.5")).isInteger())"), "false");
  EXPECT_EQ(Eval(R"(quantity("1k").sub(quantity("1")).asInteger() == 999)"), "true");
  EXPECT_EQ(Eval(R"(quantity("0.0").add(2).asInteger() == 2)"), "true") << "zero takes the other's";
  EXPECT_EQ(Eval(R"(quantity("1Gi").add(quantity("1k")).asInteger() == 1073742824)"), "true");
  EXPECT_EQ(Eval(R"(quantity("999999999999999999").add(9223372036854775807).isInteger())"), "false")
      << "a sum past 64 bits is kept as a decimal";
  EXPECT_EQ(Eval(R"(quantity("9e18").add(quantity("1")).asInteger() == 9000000000000000001)"),
            "true");
  EXPECT_EQ(Eval(R"(quantity("1").sub(-9223372036854775807 - 1).isInteger())"), "false")
      << "a difference past 64 bits is kept as a decimal (Go's mantissa wraps round there)";
  EXPECT_EQ(Eval(R"(quantity("5e18").add(quantity("5e18")).isInteger())"), "false")
      << "10 at a scale of 18 does not fit in 64 bits";
}

// Kubernetes' list library (isSorted, sum, min, max, indexOf, lastIndexOf) and cel-go's sets
// extension, both in the environment upstream compiles selectors in.
TEST(CelLanguageTest, ListsAndSets) {
  EXPECT_EQ(Eval(R"([1, 2, 2, 5].isSorted() && !["b", "a"].isSorted() && [].isSorted())"), "true");
  EXPECT_EQ(Eval(R"([1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [].sum() == 0)"), "true");
  EXPECT_EQ(Eval(R"([3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && ["b", "a"].min() == "a")"),
            "true");
  EXPECT_EQ(Eval(R"([].min() == 0)"), "error: min called on empty list");
  EXPECT_EQ(Eval(R"([].max() == 0)"), "error: max called on empty list");
  EXPECT_EQ(Eval(R"([dyn(1), dyn("a")].max() == 1)"), "true")
      << "items not ordered are passed over";
  EXPECT_EQ(Eval(R"([9223372036854775807, 1].sum() > 0)"), "error: integer overflow");
  EXPECT_EQ(Eval(R"([1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2)"), "true");
  EXPECT_EQ(Eval(R"([1, 2].indexOf(3) == -1 && [1.0, 2.0].indexOf(dyn(2)) == 1)"), "true");
  EXPECT_EQ(Eval(R"("abcb".indexOf("b") == 1)"), "true") << "the string overloads stay";
  EXPECT_EQ(Eval(R"(sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [1, 2]))"), "true");
  EXPECT_EQ(Eval(R"(sets.contains([1], []) && sets.equivalent([1, 2, 2], [2, 1]))"), "true");
  EXPECT_EQ(Eval(R"(sets.intersects([1, 2], [dyn(2.0), dyn(7)]) && !sets.intersects([1], []))"),
            "true");
  EXPECT_EQ(Eval(R"(!sets.equivalent([1], [1, 2]))"), "true");
}

TEST(CelLanguageTest, OptionalValues) {
  EXPECT_EQ(Eval(R"(device.attributes["gpu.example.com"].?missing.orValue("none") == "none")"),
            "true");
  EXPECT_EQ(Eval(R"(device.attributes["gpu.example.com"].?model.orValue("none") == "a100")"),
            "true");
  EXPECT_EQ(Eval(R"(device.attributes["gpu.example.com"][?"model"].hasValue())"), "true");
  EXPECT_EQ(Eval(R"(optional.none().or(optional.of(1)).value() == 1)"), "true");
  EXPECT_EQ(Eval(R"(optional.ofNonZeroValue("").hasValue() == false)"), "true");
  EXPECT_EQ(Eval(R"(optional.none().value() == 1)"), "error: optional.none() dereference");
  EXPECT_EQ(Eval(R"([1, 2][?5].orValue(0) == 0)"), "true");
  // device.attributes and device.capacity have every domain, an empty map where the device has
  // none, for optional access and has() too (upstream's mapper answers cel-go's Find so); `in`
  // still tells the domains the device has.
  EXPECT_EQ(Eval(R"(device.attributes[?"nosuch.example.com"].hasValue())"), "true");
  EXPECT_EQ(Eval(R"(device.capacity[?"nosuch.example.com"].value().size() == 0)"), "true");
  EXPECT_EQ(Eval(R"(has(device.attributes.nosuch))"), "true");
  EXPECT_EQ(Eval(R"(device.attributes.?nosuch.?model.orValue("none") == "none")"), "true");
  EXPECT_EQ(Eval(R"("nosuch.example.com" in device.attributes)"), "false");
  EXPECT_EQ(Eval(R"(has(device.attributes["gpu.example.com"].nosuch))"), "false");
}

TEST(CelLanguageTest, WhatIsOutsideTheSubsetIsRefusedWhenCompiled) {
  for (const auto& [expression, error] : std::vector<std::pair<std::string, std::string>>{
           {"timestamp('2024-01-01T00:00:00Z') > timestamp('2023-01-01T00:00:00Z')",
            "undeclared reference to 'timestamp'"},
           {"device.attributes['x'].y.noSuchFunction()",
            "undeclared reference to 'noSuchFunction'"},
           {"nosuchvariable == 1", "undeclared reference to 'nosuchvariable'"},
           {"device.noSuchField == 1", "undefined field 'noSuchField'"},
           {"1 + 'a' == 2", "found no matching overload for '_+_' applied to '(int, string)'"},
           {"semver('1.0.0') < semver('2.0.0')",
            "found no matching overload for '_<_' applied to '(kubernetes.Semver, "
            "kubernetes.Semver)'"},
           {"'abc'.contains(1)",
            "found no matching overload for 'contains' applied to "
            "'string.(int)'"},
           {"'a' + 'b'", "must evaluate to bool or the unknown type, not string"},
           {"1.exists(x, true)", "cannot be range of a comprehension"},
           {"Msg{a: 1}", "message construction is not supported"},
           {"has(device)", "invalid argument to has() macro"},
           {"let x = 1", "reserved identifier: let"},
           {std::string(10 * 1024 + 1, ' ') + "true", "more than the 10240 allowed"},
           {[] {
              std::string sum = "1";
              for (int i = 0; i < 3000; ++i) sum += "+1";
              return sum + " > 0";
            }(),
            "nests more than 250 levels deep"},
           {std::string(200, '(') + "true" + std::string(200, ')'), "nests too deep"},
       }) {
    EXPECT_TRUE(absl::StrContains(Eval(expression), error))
        << expression << ": " << Eval(expression);
  }
}

// A long chain of && or || conditions (one alternative per accepted driver, say) joins in a
// balanced tree, as cel-go's parser joins it, and is accepted as it is upstream. Before, the
// chain nested one level per condition, and more than 250 conditions were refused.
TEST(CelLanguageTest, ALongChainOfConditionsIsAccepted) {
  std::string all = "true";
  std::string any = "false";
  for (int i = 0; i < 999; ++i) {
    all += " && true";
    any += i == 500 ? " || device.driver == \"gpu.example.com\"" : " || false";
  }
  EXPECT_EQ(Eval(all), "true");
  EXPECT_EQ(Eval(all + " && false"), "false");
  EXPECT_EQ(Eval(any), "true");
  // Error absorption does not depend on where in the chain the error is.
  EXPECT_EQ(Eval("1/0 == 1 || " + any), "true");
  EXPECT_EQ(Eval(all + " && 1/0 == 1 && false"), "false");
  EXPECT_EQ(Eval(all + " && 1/0 == 1"), "error: division by zero");
}

// type(x) and the types' names written out, which compare as values: what guards a selector
// against an attribute of another type than it expects.
TEST(CelLanguageTest, TypeValues) {
  for (const std::string expression : {
           R"(type(device.attributes["gpu.example.com"].model) == string)",
           R"(type(device.attributes["gpu.example.com"].index) == int)",
           R"(type(device.attributes["gpu.example.com"].driverVersion) == kubernetes.Semver)",
           R"(type(device.capacity["gpu.example.com"].memory) == kubernetes.Quantity)",
           R"(type(device.attributes["gpu.example.com"]) == map)",
           "type(1u) == uint && type(1.0) == double && type(true) == bool && type(b'x') == bytes",
           "type([1]) == list && type(null) == null_type && type(optional.none()) == optional_type",
           "type(ip('10.0.0.1')) == net.IP && type(cidr('10.0.0.0/8')) == net.CIDR",
           "type(type(1)) == type && type(int) == type",
           "type(1) != type(1u) && type([1]) == type(['a'])",
           "cel.bind(int, 2, int + 1 == 3)",
       }) {
    EXPECT_EQ(Eval(expression), "true") << expression;
  }
  EXPECT_EQ(Eval(R"(type(device.attributes["gpu.example.com"].model) == int)"), "false");
  EXPECT_TRUE(absl::StrContains(Eval("type(1) == 1"),
                                "found no matching overload for '_==_' applied to '(type, int)'"));
  EXPECT_TRUE(absl::StrContains(Eval("dyn == int"), "undeclared reference to 'dyn'"));
  EXPECT_TRUE(absl::StrContains(Eval("net.Mask == int"), "undeclared reference to 'net'"));
}

// null where a Semver, a Quantity, an address or a prefix is expected compiles, as cel-go's
// checker takes null for a value of those types, and is "no such overload" when evaluated.
TEST(CelLanguageTest, NullForAnObjectCompilesAndFailsWhenEvaluated) {
  for (const std::string expression : {
           "semver('1.0.0').compareTo(null) == 0",
           "quantity('1').add(null) == quantity('1')",
           "cidr('10.0.0.0/8').containsCIDR(null)",
       }) {
    EXPECT_TRUE(absl::StartsWith(Eval(expression), "error: no such overload")) << expression;
  }
  EXPECT_TRUE(absl::StrContains(Eval("'a'.contains(null)"),
                                "found no matching overload for 'contains' applied to "
                                "'string.(null)'"))
      << "a string is not nullable";
}

TEST(CelLanguageTest, TheCostLimitHolds) {
  CompileOptions options;
  options.cost_limit = 100;
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(
      "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, "
      "10].all(y, x * y > 0))",
      options);
  ASSERT_TRUE(program.ok()) << program.status();
  uint64_t cost = 0;
  absl::StatusOr<bool> matched = (*program)->Matches(TestDevice(), &cost);
  EXPECT_EQ(matched.status().message(), "operation cancelled: actual cost limit exceeded");
  EXPECT_GT(cost, 100u);
  options.cost_limit = kDefaultCostLimit;
  program = Program::Compile((*program)->expression(), options);
  EXPECT_TRUE(*(*program)->Matches(TestDevice(), &cost));
  EXPECT_LT(cost, 1000u);
}

// Strings and lists built by joining are paid for before they are built, by their size: a chain
// of doublings ends at the cost limit instead of taking the memory (cel-go joins lists lazily;
// the limit stands in for that here), and so does a replacement or a join that multiplies its
// input's size.
TEST(CelLanguageTest, WhatMultipliesItsInputsSizeIsPaidForFirst) {
  std::string zeros = "0";
  for (int i = 1; i < 1000; ++i) zeros += ", 0";
  std::string lists = "size(f) > 0";
  for (const char* level : {"f", "e", "d", "c", "b"}) {
    const std::string inner(1, static_cast<char>(level[0] - 1));
    lists = "cel.bind(" + std::string(level) + ", " + inner + " + " + inner + " + " + inner +
            " + " + inner + ", " + lists + ")";
  }
  lists = "cel.bind(a, [" + zeros + "], " + lists + ")";
  EXPECT_EQ(Eval(lists), "error: operation cancelled: actual cost limit exceeded");

  const std::string text = "\"" + std::string(10000, 'a') + "\"";
  EXPECT_EQ(Eval("cel.bind(t, " + text + ", size(t.replace(\"a\", t)) > 0)"),
            "error: operation cancelled: actual cost limit exceeded");
  EXPECT_EQ(Eval("cel.bind(t, " + text + ", size(t.split(\"\").join(t)) > 0)"),
            "error: operation cancelled: actual cost limit exceeded");
  EXPECT_EQ(Eval("cel.bind(t, " + text + ", size(t.replace(\"\", \"b\")) == 20001)"), "true");
}

// Comparing values pays for each value compared, nested ones too: lists of lists shared many
// times over are cheap to build, and comparing them whole ends at the cost limit. Before,
// equality was free and could not be interrupted: this one compared 10^8 values.
TEST(CelLanguageTest, EqualityPaysForEveryValueItCompares) {
  // cel.bind(a, [0, ...], cel.bind(b, [a, ...], ... d == d)), a hundred items a level.
  std::string body = "d == d";
  for (const char* level : {"d", "c", "b", "a"}) {
    const std::string inner = level[0] == 'a' ? "0" : std::string(1, level[0] - 1);
    std::string list = inner;
    for (int i = 1; i < 100; ++i) list += ", " + inner;
    body = "cel.bind(" + std::string(level) + ", [" + list + "], " + body + ")";
  }
  EXPECT_EQ(Eval(body), "error: operation cancelled: actual cost limit exceeded");
  EXPECT_EQ(Eval("cel.bind(a, [[1, 2], [3]], a == [[1, 2], [3]] && [3] in a && a != [[1]])"),
            "true");
}

// A string's text is shared by the values that hold it, as a list's items are: reading a
// variable bound to a long string copies nothing, so mapping a list onto it builds a list of
// references, not of copies. Before, each read copied the text: a 1 MiB string mapped over its
// own characters asked for hundreds of GiB before the cost limit came, and the process ended on
// std::bad_alloc.
TEST(CelLanguageTest, AStringsTextIsSharedByItsCopies) {
  const Value text = Value::String(std::string(1 << 20, 'a'));
  const Value copy = text;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&copy.string_value(), &text.string_value());
  const Value bytes = Value::BytesOf("abc");
  const Value bytes_copy = bytes;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&bytes_copy.bytes_value(), &bytes.bytes_value());
  std::string doubled = "cel.bind(s0, \"0123456789abcdef\", ";
  for (int i = 1; i <= 12; ++i) {
    absl::StrAppend(&doubled, "cel.bind(s", i, ", s", i - 1, " + s", i - 1, ", ");
  }
  doubled += "s12.split(\"\").map(x, s12).size() == 65536" + std::string(13, ')');
  EXPECT_EQ(Eval(doubled), "true");
}

// sum() adds numbers only, as Kubernetes declares it: a list of strings or of lists has no sum,
// refused when compiled where the checker knows the items' type, at evaluation in a list of dyn.
// Before, it joined them, unpaid for. An empty list's sum is the zero of the declared type.
TEST(CelLanguageTest, SumAddsNumbersOnly) {
  EXPECT_EQ(Eval("[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [2u].sum() == 2u"), "true");
  EXPECT_EQ(Eval("[].sum() == 0"), "true");
  EXPECT_EQ(
      Eval("type([1.5].filter(x, x > 2.0).sum()) == double && "
           "type([2u].filter(x, false).sum()) == uint && type([1].filter(x, false).sum()) == int"),
      "true");
  EXPECT_TRUE(
      absl::StrContains(Eval("['a', 'b'].sum() == 'ab'"),
                        "found no matching overload for 'sum' applied to 'list(string).()'"));
  EXPECT_TRUE(
      absl::StrContains(Eval("[[1], [2]].sum() == [1, 2]"),
                        "found no matching overload for 'sum' applied to 'list(list(int)).()'"));
  EXPECT_EQ(Eval("[dyn('a'), dyn('b')].sum() == 'ab'"),
            "error: no such overload: sum(list(string))");
}

// isSorted(), min() and max() are declared for lists of a type with an order; over items without
// one in a list of dyn they are "no such overload", as Kubernetes' list library answers.
TEST(CelLanguageTest, OrderingNeedsItemsWithAnOrder) {
  EXPECT_TRUE(absl::StrContains(Eval("[{1: 2}].min() == {1: 2}"),
                                "found no matching overload for 'min' applied to "
                                "'list(map(int, int)).()'"));
  EXPECT_TRUE(absl::StrContains(Eval("[[1], [2]].isSorted()"),
                                "found no matching overload for 'isSorted' applied to"));
  EXPECT_EQ(Eval("[dyn([1]), dyn([2])].isSorted()"), "error: no such overload");
  EXPECT_EQ(Eval("[dyn(1), dyn(null)].max() == 1"), "error: no such overload");
  EXPECT_EQ(Eval("[dyn(semver('1.0.0'))].min() == semver('1.0.0')"), "error: no such overload");
  EXPECT_EQ(Eval("type([3, 1].min()) == int && [b'b', b'a'].min() == b'a' && [true, false].max()"),
            "true");
}

TEST(CelLanguageTest, ReplacingTheEmptyStringGoesBetweenCodePoints) {
  EXPECT_EQ(Eval(R"("ab".replace("", "X") == "XaXbX")"), "true");
  EXPECT_EQ(Eval(R"("ab".replace("", "X", 1) == "Xab")"), "true");
  EXPECT_EQ(Eval(R"("ab".replace("", "X", 0) == "ab")"), "true");
  EXPECT_EQ(Eval(R"("é".replace("", "-") == "-é-")"), "true");
  EXPECT_EQ(Eval(R"("".replace("", "X") == "X")"), "true");
  EXPECT_EQ(Eval(R"("abab".replace("ab", "") == "")"), "true");
  EXPECT_EQ(Eval(R"("aaa".replace("aa", "b") == "ba")"), "true");
}

// CompileError: the compile error of an expression, or "" when it compiles.
std::string CompileError(const std::string& expression) {
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(expression);
  return program.ok() ? "" : std::string(program.status().message());
}

// == and != take two values of one type, as cel-go's `_==_(A, A)`: numbers of different types,
// and null against a type that cannot be null, are refused when compiled (cel-go's checker test
// "x.single_int64 != null"); a dyn value, as every device attribute is, compares with anything
// at evaluation. `in`, `?:`, list `+`, orValue() and the list and set functions bind their type
// parameter the same way. Before, all of these compiled (1 == 1u was true).
TEST(CelLanguageTest, EqualityTakesOneTypeUnlessDyn) {
  for (const auto& [expression, error] : std::vector<std::pair<std::string, std::string>>{
           {"size(device.driver) != null",
            "found no matching overload for '_!=_' applied to '(int, null)'"},
           {"1 == 1u", "found no matching overload for '_==_' applied to '(int, uint)'"},
           {"1.0 == 1", "found no matching overload for '_==_' applied to '(double, int)'"},
           {"device.driver == null",
            "found no matching overload for '_==_' applied to '(string, null)'"},
           {"null != device.attributes",
            "found no matching overload for '_!=_' applied to '(null, map(string, map(string, "
            "dyn)))'"},
           {"[1] == [1u]",
            "found no matching overload for '_==_' applied to '(list(int), list(uint))'"},
           {"1 in [1u]", "found no matching overload for '@in' applied to '(int, list(uint))'"},
           {"1 in {'a': 1}",
            "found no matching overload for '@in' applied to '(int, map(string, int))'"},
           {"(true ? 'cows' : 17) == 'cows'",
            "found no matching overload for '_?_:_' applied to '(bool, string, int)'"},
           {"[1] + ['a'] == [1]",
            "found no matching overload for '_+_' applied to '(list(int), list(string))'"},
           {"optional.of(1).orValue('a') == 1",
            "found no matching overload for 'orValue' applied to 'optional_type(int).(string)'"},
           {"[1, 2].indexOf(2u) == 1",
            "found no matching overload for 'indexOf' applied to 'list(int).(uint)'"},
           {"sets.contains([1], ['a'])",
            "found no matching overload for 'sets.contains' applied to '(list(int), "
            "list(string))'"},
       }) {
    EXPECT_TRUE(absl::StrContains(CompileError(expression), error))
        << expression << ": " << CompileError(expression);
  }
  const std::string index = R"(device.attributes["gpu.example.com"].index)";
  EXPECT_EQ(Eval(index + " == 3u && " + index + " == 3.0 && " + index + " in [1u, 3u]"), "true");
  EXPECT_EQ(Eval(R"(device.attributes["gpu.example.com"].model != null)"), "true");
  EXPECT_EQ(Eval(R"(device.capacity["gpu.example.com"].memory != null && device != null)"), "true");
  EXPECT_EQ(Eval("null == null && dyn(1) == 1u && [dyn(1)] == [1.0] && 2u in [dyn(2)]"), "true");
  EXPECT_EQ(Eval("(true ? 1 : dyn('a')) == 1 && optional.none().orValue(1) == 1"), "true");
  // A result's type is named as Kubernetes names it: null is null_type there.
  EXPECT_EQ(CompileError("null"),
            "compilation failed: must evaluate to bool or the unknown type, not null_type");
}

// Every list and map literal has one element type (one key type, one value type), as the
// HomogeneousAggregateLiterals validator Kubernetes enables asks, after the checker: its cases
// (cel-go's TestValidateHomogeneousAggregateLiterals) with device.driver for `name`. dyn is a
// type of its own there. Before, mixed literals compiled.
TEST(CelLanguageTest, LiteralsHaveOneElementType) {
  for (const auto& [expression, error] : std::vector<std::pair<std::string, std::string>>{
           {"device.driver in ['hello', 0]", "expected type 'string' but found 'int'"},
           {"{'hello':'world', 1:'!'}.size() == 2", "expected type 'string' but found 'int'"},
           {"device.driver in {'hello':'world', 'goodbye':true}",
            "expected type 'string' but found 'bool'"},
           {"[1, 'a'].size() == 2", "expected type 'int' but found 'string'"},
           {"[17, 'pancakes'].size() == 2", "expected type 'int' but found 'string'"},
           {R"([device.attributes["gpu.example.com"].index, 1].size() == 2)",
            "expected type 'dyn' but found 'int'"},
           {"[null, 1].size() == 2", "expected type 'null' but found 'int'"},
           {"[[1], ['a']].size() == 2", "expected type 'list(int)' but found 'list(string)'"},
           // The checker's error comes first: its list is a list(dyn).
           {"[1, 'a'] == 1u",
            "found no matching overload for '_==_' applied to '(list(dyn), uint)'"},
       }) {
    EXPECT_TRUE(absl::StrContains(CompileError(expression), error))
        << expression << ": " << CompileError(expression);
  }
  EXPECT_EQ(CompileError("device.driver in ['hello', 12]"),
            "compilation failed: ERROR: <input>:1:28: expected type 'string' but found 'int'\n"
            " | device.driver in ['hello', 12]\n"
            " | ...........................^");
  EXPECT_EQ(Eval("device.driver in ['hello', 'world']"), "false");
  EXPECT_EQ(Eval("device.driver in {'hello': false, 'world': true}"), "false");
  EXPECT_EQ(Eval("[[1], [], [2]].size() == 3 && [{}, {'a': 1}].size() == 2"), "true");
  EXPECT_EQ(Eval("[[1].reverse(), [2]].size() == 2 && [[1, 2].max(), 3].size() == 2"), "true");
}

// An empty literal's element type is free until an item of the literal around it binds it, as
// cel-go's checker binds its type variables, however deep in literals it stands: `[[[1]], [[]]]` is
// alike, and an item bound once binds the rest (`[[], [1], ['a']]` is not); so is optional.none()'s
// value type. Before, an empty literal was alike to any list or map beside it, and only at the
// top: the first was refused, the second compiled; optional.none() was an optional of dyn.
TEST(CelLanguageTest, AnEmptyLiteralTakesTheTypeAnItemBesideItGives) {
  for (const std::string& expression : std::vector<std::string>{
           "[[[1]], [[]]] == [[[1]], [[]]]",
           "size([[[[[]]]], [], [[[]]]]) == 3",  // cel-spec's list_parameter_order_independent
           "size([[], [[]], [[[]]], [[[[]]]]]) == 4",
           "size([{'a': []}, {'b': [1]}]) == 2",
           "size([{}, {'a': {}}, {'b': {1: 'x'}}]) == 3",
           "[[]] != [[1]]",
           "size([optional.none(), optional.of(1)]) == 2",
           "size([optional.of('a'), optional.none()]) == 2",
           "size({'a': optional.none(), 'b': optional.of([])}) == 2",
           // Through conditions and optional.of().
           "size([true ? [] : [1], [2]]) == 2",
           "size([optional.of([]), optional.of([1])]) == 2",
           "size([false ? optional.none() : optional.of(1), optional.of(2)]) == 2",
           // Through indexes, filter(), value(), orValue(), list + list and the list functions
           // that keep their list's type, as cel-go's generic functions carry them.
           "size([[[]][0], [1]]) == 2",
           "size([{'a': []}['a'], [1]]) == 2",
           "size([[].filter(x, false), [1]]) == 2",
           "size([false ? optional.none().value() : 1, 2]) == 2",
           "[optional.none().orValue([]), [1]] == [[], [1]]",
           "[[] + [], [1]] == [[], [1]]",
           "size([[[]].reverse(), [[1]]]) == 2",
           "size([[[]].flatten(), [1]]) == 2",
           "[[].slice(0, 0), [1]] == [[], [1]]",
       }) {
    EXPECT_EQ(Eval(expression), "true") << expression;
  }
  for (const auto& [expression, error] : std::vector<std::pair<std::string, std::string>>{
           {"size([[], [1], ['a']]) == 3", "expected type 'list(int)' but found 'list(string)'"},
           {"size([{'a': []}, {'b': ['x']}, {'c': [1]}]) == 3",
            "expected type 'map(string, list(string))' but found 'map(string, list(int))'"},
           {"size([[[]], [[1]], [['a']]]) == 3",
            "expected type 'list(list(int))' but found 'list(list(string))'"},
           {"size([optional.none(), optional.of(1), optional.of('a')]) == 3",
            "expected type 'optional_type(int)' but found 'optional_type(string)'"},
           {"size([true ? [] : ['a'], [1]]) == 2",
            "expected type 'list(string)' but found 'list(int)'"},
           {"size([[['a']][0], [1]]) == 2", "expected type 'list(string)' but found 'list(int)'"},
           {"size([[].filter(x, false), [1], ['a']]) == 3",
            "expected type 'list(int)' but found 'list(string)'"},
           {"size([optional.none().value(), 1, 'a']) == 3",
            "expected type 'int' but found 'string'"},
           {"size([[] + ['a'], [1]]) == 2", "expected type 'list(string)' but found 'list(int)'"},
           // A list joined with an empty one takes its element type: int + string has no overload.
           {"([] + [1])[0] + 'a' == 'b'",
            "found no matching overload for '_+_' applied to '(int, string)'"},
       }) {
    EXPECT_TRUE(absl::StrContains(CompileError(expression), error))
        << expression << ": " << CompileError(expression);
  }
}

// reverse() is the lists extension's (version 3 in Kubernetes since 1.34), not the strings
// extension's: Kubernetes has that at version 2, and reverse() came in version 3. Before, it
// was the other way round.
TEST(CelLanguageTest, ReverseIsForLists) {
  EXPECT_EQ(Eval("[5, 3, 1, 2].reverse() == [2, 1, 3, 5] && [].reverse() == []"), "true");
  EXPECT_EQ(Eval(R"(device.attributes["gpu.example.com"].exists(k, [k].reverse() == [k]))"),
            "true");
  EXPECT_TRUE(absl::StrContains(CompileError("'abc'.reverse() == 'cba'"),
                                "found no matching overload for 'reverse' applied to 'string.()'"));
}

// A pattern written out is compiled with the program, as upstream: matches() by cel-go's
// ValidateRegexLiterals validator (which looks at the call's first argument: the pattern of
// x.matches(p), the text of matches(x, p)), find(), findAll() and matches(x, p) by the regex
// optimizations of the program. Errors are Go's regexp texts, as the runtime's are (find() and
// findAll() prefix "Illegal regex: "). Before, every bad pattern failed each evaluation, with
// RE2's own text.
TEST(CelLanguageTest, RegexPatternsAreCompiledWithTheProgram) {
  for (const auto& [expression, error] : std::vector<std::pair<std::string, std::string>>{
           {"device.driver.matches('[')",
            "compilation failed: ERROR: <input>:1:23: invalid matches argument\n"
            " | device.driver.matches('[')\n"
            " | ......................^"},
           {"matches('[', 'a')",
            "compilation failed: ERROR: <input>:1:9: invalid matches argument\n"
            " | matches('[', 'a')\n"
            " | ........^"},
           {"matches('a', '[')",
            "program instantiation failed: error parsing regexp: missing closing ]: `[`"},
           {"device.driver.find('(') == ''",
            "program instantiation failed: error parsing regexp: missing closing ): `(`"},
           {"device.driver.findAll('a**', 1) == []",
            "program instantiation failed: error parsing regexp: invalid nested repetition "
            "operator: `**`"},
       }) {
    EXPECT_EQ(CompileError(expression), error) << expression;
  }
  const std::string model = R"(device.attributes["gpu.example.com"].model)";
  EXPECT_EQ(Eval("device.driver.find(" + model + " + ')') == ''"),
            "error: Illegal regex: error parsing regexp: unexpected ): `a100)`");
  EXPECT_EQ(Eval("device.driver.matches(" + model + " + '*?*')"),
            "error: error parsing regexp: invalid nested repetition operator: `*?*`");
  EXPECT_EQ(Eval("device.driver.matches(" + model + R"( + r'\i'))"),
            "error: error parsing regexp: invalid escape sequence: `\\i`");
  // Go's (?<name>re) is a named group, as (?P<name>re) is; not in a character class.
  EXPECT_EQ(Eval(R"('ab'.matches('^(?<first>a)(?P<second>b)$') && '<'.matches('^[(?<]$'))"),
            "true");
  EXPECT_EQ(Eval("device.driver.matches(" + model + " + '(?<a-b>x)')"),
            "error: error parsing regexp: invalid named capture: `(?<a-b>`");
  // \C (any byte) is RE2's, not Go's; between \Q and \E it is the two characters.
  EXPECT_EQ(Eval("device.driver.matches(" + model + R"( + r'\C'))"),
            "error: error parsing regexp: invalid escape sequence: `\\C`");
  EXPECT_EQ(Eval(R"(r'x\C'.matches(r'^x\Q\C\E$') && r'\\C'.matches(r'\\C'))"), "true");
  // RE2's escapes and classes are Go's.
  EXPECT_EQ(Eval(R"('a.b'.matches(r'^a\.b$') && !'axb'.matches('^a\\.b$') && '7'.matches('\\d'))"),
            "true");
  EXPECT_EQ(Eval(R"('é'.matches(r'^\pL$') && 'x y'.matches(r'x\sy') && 'ab'.matches(r'\Aab\z'))"),
            "true");
}

// findAll() finds what Go's FindAllString does: an empty match right after the previous match is
// not one, and after an empty match the search moves on one code point, not one byte. Before,
// "aaa".findAll("a*") was ["aaa", ""] and "é" was split.
TEST(CelLanguageTest, FindAllSkipsAnEmptyMatchRightAfterAMatch) {
  EXPECT_EQ(Eval(R"("abc".findAll("b*") == ["", "b", ""])"), "true");
  EXPECT_EQ(Eval(R"("aaa".findAll("a*") == ["aaa"] && "baaab".findAll("a*") == ["", "aaa", ""])"),
            "true");
  EXPECT_EQ(Eval(R"("héllo".findAll("").size() == 6 && "é".findAll("") == ["", ""])"), "true");
  EXPECT_EQ(Eval(R"("abc".findAll("b*", 2) == ["", "b"] && "abc".findAll("b*", 0) == [])"), "true");
}

// NaN is not ordered: <, <=, > and >= with a NaN are cel-go's error; == and != are false and
// true. isSorted(), min() and max() pass over a pair with a NaN, as Kubernetes' list library
// does with the error of their comparison. Before, the operators were false and the list
// functions failed.
TEST(CelLanguageTest, NaNIsNotOrdered) {
  for (const std::string expression : {"0.0/0.0 < 1.0", "1.0 >= 0.0/0.0", "1 <= 0.0/0.0",
                                       "0.0/0.0 > 1u", "0.0/0.0 <= 0.0/0.0", "dyn(0.0/0.0) < 1"}) {
    EXPECT_EQ(Eval(expression), "error: NaN values cannot be ordered") << expression;
  }
  EXPECT_EQ(Eval("0.0/0.0 != 0.0/0.0 && !(0.0/0.0 == 0.0/0.0) && !(dyn(1) == 0.0/0.0)"), "true");
  EXPECT_EQ(Eval("[2.0, 0.0/0.0, 1.0].isSorted() && !([2.0, 1.0, 0.0/0.0].isSorted())"), "true");
  EXPECT_EQ(Eval("[1.0, 0.0/0.0].max() == 1.0 && [2.0, 0.0/0.0, 1.0].min() == 1.0"), "true");
  EXPECT_EQ(Eval("[0.0/0.0, 1.0].max() != [0.0/0.0, 1.0].max()"), "true") << "the NaN is kept";
}

// A number literal out of its type's range is refused with cel-go's texts; a double literal too
// small for a double is 0, as Go's strconv.ParseFloat reads it. Before, 1e400 was +Inf.
TEST(CelLanguageTest, LiteralsOutOfRangeAreRefused) {
  EXPECT_EQ(CompileError("1e400 > 0.0"),
            "compilation failed: ERROR: <input>:1:1: invalid double literal\n"
            " | 1e400 > 0.0\n"
            " | ^");
  // The sign is part of the literal, as in CEL's grammar.
  EXPECT_EQ(CompileError("-1.5e309 < 0.0"),
            "compilation failed: ERROR: <input>:1:1: invalid double literal\n"
            " | -1.5e309 < 0.0\n"
            " | ^");
  EXPECT_EQ(CompileError("0.0 > - 9223372036854775809"),
            "compilation failed: ERROR: <input>:1:7: invalid int literal\n"
            " | 0.0 > - 9223372036854775809\n"
            " | ......^");
  EXPECT_EQ(CompileError("0.0 > 1 - 1.5e309"),
            "compilation failed: ERROR: <input>:1:11: invalid double literal\n"
            " | 0.0 > 1 - 1.5e309\n"
            " | ..........^");
  EXPECT_EQ(CompileError("18446744073709551616u > 0u"),
            "compilation failed: ERROR: <input>:1:1: invalid uint literal\n"
            " | 18446744073709551616u > 0u\n"
            " | ^");
  EXPECT_EQ(CompileError("0x10000000000000000 > 0"),
            "compilation failed: ERROR: <input>:1:1: invalid int literal\n"
            " | 0x10000000000000000 > 0\n"
            " | ^");
  EXPECT_EQ(Eval("1e-400 == 0.0 && 1.7976931348623157e308 > 0.0 && 18446744073709551615u > 0u"),
            "true");
}

}  // namespace
}  // namespace devmgr::cel
