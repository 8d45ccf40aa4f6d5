// The strings extension's format() in selectors: cel-go's TestStringFormat
// (ext/formatting_test.go), case by case under its names, for what Kubernetes' environment has (no
// timestamps, durations or messages; the locale en_US, which Kubernetes leaves as the default, and
// golang.org/x/text 0.23 or later, which writes 2.718280×10⁰⁰ where cel-go's own test, on an older
// x/text, expects narrow spaces around the ×). cel-go's format validator always runs in Kubernetes'
// environment: a case upstream runs with the validator off (skipCompileCheck) is refused when
// compiled here, and its runtime error is reached through dyn(), which hides the types from the
// validator.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

// Formatted: the string `call` gives (read back from the error of bool() on it, with a '~'
// that no bool is spelled with), or EvalText's "error: ..." or "compile: ...".
std::string Formatted(const std::string& call) {
  const std::string got = EvalText(absl::StrCat("bool(", call, " + '~')"));
  const std::string head = "error: cannot convert \"";
  const std::string tail = "~\" to bool";
  if (absl::StartsWith(got, head) && absl::EndsWith(got, tail)) {
    return got.substr(head.size(), got.size() - head.size() - tail.size());
  }
  return got;
}

struct FormatCase {
  std::string name;
  std::string call;
  // The string, or "error: <the evaluation's error>", or "compile: <part of the compile error>".
  std::string want;
};

void ExpectFormatted(const std::vector<FormatCase>& cases) {
  for (const FormatCase& c : cases) {
    const std::string got = Formatted(c.call);
    if (absl::StartsWith(c.want, "compile: ")) {
      EXPECT_TRUE(absl::StartsWith(got, "compile: ") &&
                  absl::StrContains(got, c.want.substr(sizeof("compile: ") - 1)))
          << c.name << ": " << c.call << " gave " << got;
    } else {
      EXPECT_EQ(got, c.want) << c.name << ": " << c.call;
    }
  }
}

TEST(CelStringFormatTest, TestStringFormat) {
  ExpectFormatted({
      {"no-op", R"("no substitution".format([]))", "no substitution"},
      {"mid-string substitution", R"("str is %s and some more".format(["filler"]))",
       "str is filler and some more"},
      {"percent escaping", R"("%% and also %%".format([]))", "% and also %"},
      {"substution inside escaped percent signs", R"("%%%s%%".format(["text"]))", "%text%"},
      {"substitution with one escaped percent sign on the right",
       R"("%s%%".format(["percent on the right"]))", "percent on the right%"},
      {"substitution with one escaped percent sign on the left",
       R"("%%%s".format(["percent on the left"]))", "%percent on the left"},
      {"multiple substitutions",
       R"("%d %d %d, %s %s %s, %d %d %d, %s %s %s".format([1, 2, 3, "A", "B", "C", 4, 5, 6, "D", "E", "F"]))",
       "1 2 3, A B C, 4 5 6, D E F"},
      {"percent sign escape sequence support",
       R"("\u0025\u0025escaped \u0025s\u0025\u0025".format(["percent"]))", "%escaped percent%"},
      {"fixed point formatting clause", R"("%.3f".format([1.2345]))", "1.234"},
      {"binary formatting clause", R"("this is 5 in binary: %b".format([5]))",
       "this is 5 in binary: 101"},
      {"negative binary formatting clause", R"("this is -5 in binary: %b".format([-5]))",
       "this is -5 in binary: -101"},
      {"uint support for binary formatting", R"("unsigned 64 in binary: %b".format([uint(64)]))",
       "unsigned 64 in binary: 1000000"},
      {"bool support for binary formatting", R"("bit set from bool: %b".format([true]))",
       "bit set from bool: 1"},
      {"octal formatting clause", R"("%o".format([11]))", "13"},
      {"negative octal formatting clause", R"("%o".format([-11]))", "-13"},
      {"uint support for octal formatting clause",
       R"("this is an unsigned octal: %o".format([uint(65535)]))",
       "this is an unsigned octal: 177777"},
      {"lowercase hexadecimal formatting clause", R"("%x is 30 in hexadecimal".format([30]))",
       "1e is 30 in hexadecimal"},
      {"uppercase hexadecimal formatting clause", R"("%X is 20 in hexadecimal".format([30]))",
       "1E is 20 in hexadecimal"},
      {"negative hexadecimal formatting clause", R"("%x is -30 in hexadecimal".format([-30]))",
       "-1e is -30 in hexadecimal"},
      {"unsigned support for hexadecimal formatting clause",
       R"("%X is 6000 in hexadecimal".format([uint(6000)]))", "1770 is 6000 in hexadecimal"},
      {"string support with hexadecimal formatting clause", R"("%x".format(["Hello world!"]))",
       "48656c6c6f20776f726c6421"},
      {"string support with uppercase hexadecimal formatting clause",
       R"("%X".format(["Hello world!"]))", "48656C6C6F20776F726C6421"},
      {"byte support with hexadecimal formatting clause", R"("%x".format([b"byte string"]))",
       "6279746520737472696e67"},
      {"byte support with hexadecimal formatting clause leading zero",
       R"("%x".format([b"\x00\x00byte string\x00"]))", "00006279746520737472696e6700"},
      {"byte support with uppercase hexadecimal formatting clause",
       R"("%X".format([b"byte string"]))", "6279746520737472696E67"},
      {"scientific notation formatting clause", R"("%.6e".format([1052.032911275]))",
       "1.052033×10⁰³"},
      {"default precision for fixed-point clause", R"("%f".format([2.71828]))", "2.718280"},
      {"default precision for scientific notation", R"("%e".format([2.71828]))", "2.718280×10⁰⁰"},
      {"default precision for string", R"("%s".format([2.71]))", "2.71"},
      {"default list precision for string", R"("%s".format([[2.71]]))", "[2.710000]"},
      {"default scientific notation for string", R"("%s".format([0.000000002]))", "2e-09"},
      {"default list scientific notation for string", R"("%s".format([[0.000000002]]))",
       "[0.000000]"},
      {"unicode output for scientific notation",
       R"("unescaped unicode: %e, escaped unicode: %e".format([2.71828, 2.71828]))",
       "unescaped unicode: 2.718280×10⁰⁰, escaped unicode: 2.718280\u00d710\u2070\u2070"},
      {"NaN support for fixed-point", R"("%f".format(["NaN"]))", "NaN"},
      {"positive infinity support for fixed-point", R"("%f".format(["Infinity"]))", "∞"},
      {"negative infinity support for fixed-point", R"("%f".format(["-Infinity"]))", "-∞"},
      {"NaN support for string", R"("%s".format([double("NaN")]))", "NaN"},
      {"positive infinity support for string", R"("%s".format([double("Inf")]))", "+Inf"},
      {"negative infinity support for string", R"("%s".format([double("-Inf")]))", "-Inf"},
      {"infinity list support for string",
       R"("%s".format([[double("NaN"),double("+Inf"), double("-Inf")]]))",
       R"(["NaN", "+Inf", "-Inf"])"},
      {"uint support for decimal clause", R"("%d".format([uint(64)]))", "64"},
      {"null support for string", R"("null: %s".format([null]))", "null: null"},
      {"int support for string", R"("%s".format([999999999999]))", "999999999999"},
      {"bytes support for string", R"("some bytes: %s".format([b"xyz"]))", "some bytes: xyz"},
      {"type() support for string", R"("type is %s".format([type("test string")]))",
       "type is string"},
      {"list support for string", R"("%s".format([["abc", 3.14, null, [9, 8, 7, 6]]]))",
       R"(["abc", 3.140000, null, [9, 8, 7, 6]])"},
      {"map support for string",
       R"("%s".format([{"key1": b"xyz", "key5": null, "key4": true, "key3": 2.71828}]))",
       R"({"key1":b"xyz", "key3":2.718280, "key4":true, "key5":null})"},
      {"map support (all key types)",
       R"("map with multiple key types: %s".format([{1: "value1", uint(2): "value2", true: double("NaN")}]))",
       R"(map with multiple key types: {1:"value1", 2:"value2", true:"NaN"})"},
      {"boolean support for %s", R"("true bool: %s, false bool: %s".format([true, false]))",
       "true bool: true, false bool: false"},
      {"dyntype support for string formatting clause",
       R"("dynamic string: %s".format([dyn("a string")]))", "dynamic string: a string"},
      {"dyntype support for numbers with string formatting clause",
       R"("dynIntStr: %s dynDoubleStr: %s".format([dyn(32), dyn(56.8)]))",
       "dynIntStr: 32 dynDoubleStr: 56.8"},
      {"dyntype support for integer formatting clause", R"("dynamic int: %d".format([dyn(128)]))",
       "dynamic int: 128"},
      {"dyntype support for integer formatting clause (unsigned)",
       R"("dynamic unsigned int: %d".format([dyn(uint(256))]))", "dynamic unsigned int: 256"},
      {"dyntype support for hex formatting clause", R"("dynamic hex int: %x".format([dyn(22)]))",
       "dynamic hex int: 16"},
      {"dyntype support for hex formatting clause (uppercase)",
       R"c("dynamic hex int: %X (uppercase)".format([dyn(26)]))c",
       "dynamic hex int: 1A (uppercase)"},
      {"dyntype support for unsigned hex formatting clause",
       R"c("dynamic hex int: %x (unsigned)".format([dyn(uint(500))]))c",
       "dynamic hex int: 1f4 (unsigned)"},
      {"dyntype support for fixed-point formatting clause",
       R"("dynamic double: %.3f".format([dyn(4.5)]))", "dynamic double: 4.500"},
      {"dyntype support for scientific notation", R"("(dyntype) e: %e".format([dyn(2.71828)]))",
       "(dyntype) e: 2.718280×10⁰⁰"},
      {"dyntype NaN/infinity support for fixed-point",
       R"("NaN: %f, infinity: %f".format([dyn(double("NaN")), dyn(double("Inf"))]))",
       "NaN: NaN, infinity: ∞"},
      {"dyntype support for lists", R"("dyntype list: %s".format([dyn([6, 4.2, "a string"])]))",
       R"(dyntype list: [6, 4.200000, "a string"])"},
      {"dyntype support for maps",
       R"("dyntype map: %s".format([dyn({"strKey": "x", true: 42, 6: b"7m2s"})]))",
       R"(dyntype map: {"strKey":"x", 6:b"7m2s", true:42})"},
      // Upstream's runtime errors, with the validator off: the arguments here are dyn.
      {"unrecognized formatting clause", R"("%a".format(dyn([1])))",
       R"(error: could not parse formatting clause: unrecognized formatting clause "a")"},
      {"out of bounds arg index", R"("%d %d %d".format(dyn([0, 1])))",
       "error: index 2 out of range"},
      {"string substitution is not allowed with binary clause",
       R"("string is %b".format([dyn("abc")]))",
       "error: error during formatting: only integers and bools can be formatted as binary, was "
       "given string"},
      {"string substitution not allowed with octal clause",
       R"("octal: %o".format([dyn("a string")]))",
       "error: error during formatting: octal clause can only be used on integers, was given "
       "string"},
      {"double substitution not allowed with hex clause", R"("double is %x".format([dyn(0.5)]))",
       "error: error during formatting: only integers, byte buffers, and strings can be "
       "formatted as hex, was given double"},
      {"uppercase not allowed for scientific clause", R"("double is %E".format(dyn([0.5])))",
       R"(error: could not parse formatting clause: unrecognized formatting clause "E")"},
      {"object not allowed", R"("object is %s".format([dyn(quantity("1Gi"))]))",
       "error: error during formatting: string clause can only be used on strings, bools, "
       "bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given "
       "kubernetes.Quantity"},
      {"object inside list (at evaluation)", R"("%s".format([dyn([1, 2, quantity("1Gi")])]))",
       "error: error during formatting: no formatting function for kubernetes.Quantity"},
      {"object inside map (at evaluation)", R"("%s".format([dyn({1: "a", 2: quantity("1Gi")})]))",
       "error: error during formatting: no formatting function for kubernetes.Quantity"},
      {"null not allowed for %d", R"("null: %d".format([dyn(null)]))",
       "error: error during formatting: decimal clause can only be used on integers, was given "
       "null_type"},
      {"null not allowed for %e", R"("null: %e".format([dyn(null)]))",
       "error: error during formatting: scientific clause can only be used on doubles, was "
       "given null_type"},
      {"null not allowed for %f", R"("null: %f".format([dyn(null)]))",
       "error: error during formatting: fixed-point clause can only be used on doubles, was "
       "given null_type"},
      {"null not allowed for %x", R"("null: %x".format([dyn(null)]))",
       "error: error during formatting: only integers, byte buffers, and strings can be "
       "formatted as hex, was given null_type"},
      {"null not allowed for %X", R"("null: %X".format([dyn(null)]))",
       "error: error during formatting: only integers, byte buffers, and strings can be "
       "formatted as hex, was given null_type"},
      {"null not allowed for %b", R"("null: %b".format([dyn(null)]))",
       "error: error during formatting: only integers and bools can be formatted as binary, was "
       "given null_type"},
      {"null not allowed for %o", R"("null: %o".format([dyn(null)]))",
       "error: error during formatting: octal clause can only be used on integers, was given "
       "null_type"},
      // The same with the validator, as Kubernetes runs them.
      {"unrecognized formatting clause (compiled)", R"("%a".format([1]))",
       R"(compile: could not parse formatting clause: unrecognized formatting clause "a")"},
      {"out of bounds arg index (compiled)", R"("%d %d %d".format([0, 1]))",
       "compile: index 2 out of range"},
      {"null not allowed for %d (compiled)", R"("null: %d".format([null]))",
       "compile: error during formatting: decimal clause can only be used on integers, was "
       "given null_type"},
      {"object not allowed (compiled)", R"("object is %s".format([quantity("1Gi")]))",
       "compile: error during formatting: string clause can only be used on strings, bools, "
       "bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given "
       "kubernetes.Quantity"},
      {"compile-time cardinality check (too few for string)", R"("%s %s".format(["abc"]))",
       "compile: index 1 out of range"},
      {"compile-time cardinality check (too many for string)",
       R"("%s %s".format(["abc", "def", "ghi"]))",
       "compile: too many arguments supplied to string.format (expected 2, got 3)"},
      {"compile-time syntax check (unexpected end of string)", R"("filler %".format([]))",
       "compile: unexpected end of string"},
      {"compile-time syntax check (unrecognized formatting clause)", R"("%j".format([123]))",
       R"(compile: could not parse formatting clause: unrecognized formatting clause "j")"},
      {"compile-time %s check", R"("object is %s".format([optional.of(1)]))",
       "compile: error during formatting: string clause can only be used on strings, bools, "
       "bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given "
       "optional_type"},
      {"compile-time check for objects inside list literal",
       R"("list is %s".format([[1, 2, quantity("1Gi")]]))",
       "compile: error during formatting: string clause can only be used on strings, bools, "
       "bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given "
       "kubernetes.Quantity"},
      {"compile-time %d check", R"("int is %d".format([5.2]))",
       "compile: error during formatting: decimal clause can only be used on integers, was "
       "given double"},
      {"compile-time %f check", R"("double is %f".format([true]))",
       "compile: error during formatting: fixed-point clause can only be used on doubles, was "
       "given bool"},
      {"compile-time precision syntax check", R"("double is %.34".format([5.0]))",
       "compile: could not parse formatting clause: error while parsing precision: could not "
       "find end of precision specifier"},
      {"compile-time %e check", R"("double is %e".format([true]))",
       "compile: error during formatting: scientific clause can only be used on doubles"},
      {"compile-time %b check", R"("string is %b".format(["a string"]))",
       "compile: error during formatting: only integers and bools can be formatted as binary"},
      {"compile-time %x check", R"("%x is a double".format([2.5]))",
       "compile: error during formatting: only integers, byte buffers, and strings can be "
       "formatted as hex"},
      {"compile-time %X check", R"("%X is a double".format([2.5]))",
       "compile: error during formatting: only integers, byte buffers, and strings can be "
       "formatted as hex"},
      {"compile-time %o check", R"("an octal: %o".format([3.14]))",
       "compile: error during formatting: octal clause can only be used on integers"},
  });
}

// What golang.org/x/text's en_US printer does with the numbers cel-go hands it: %f groups the
// integer digits by thousands; %e always has six fraction digits and takes its precision as a
// width; a precision x/text cannot read gives Go's %!(NOVERB).
TEST(CelStringFormatTest, NumbersAsKubernetesFormatsThem) {
  ExpectFormatted({
      {"grouping", R"("%.2f".format([1234567.891]))", "1,234,567.89"},
      {"grouping of a negative", R"("%f".format([-1000.5]))", "-1,000.500000"},
      {"three digits are not grouped", R"("%.0f".format([999.0]))", "999"},
      {"no fraction", R"("%.0f".format([2.5]))", "2"},
      {"rounded as the double is, not as its shortest digits", R"("%.2f".format([2.675]))", "2.67"},
      {"negative zero has no sign", R"("%f".format([-0.0]))", "0.000000"},
      {"a negative rounded to zero keeps it", R"("%.2f".format([-0.001]))", "-0.00"},
      {"large", R"("%.1f".format([1e21]))", "1,000,000,000,000,000,000,000.0"},
      {"precision above 255: trailing zeros dropped down to its low byte",
       R"("%.257f".format([1.5]))", "1.5"},
      {"precision of a low byte above the digits", R"("%.300f".format([0.5]))",
       "0.50000000000000000000000000000000000000000000"},
      {"precision of 32768 and on: not rounded", R"("%.32770f".format([0.1]))", "0.10"},
      {"precision x/text cannot read", R"("%.10000010f".format([1.0]))", "%!(NOVERB)"},
      {"shortest digits of a large double, not its exact ones", R"("%.32768f".format([1e23]))",
       "100,000,000,000,000,000,000,000"},
      {"shortest digits of a small double", R"("%.32770f".format([0.000123]))", "0.000123"},
      {"negative exponent", R"("%e".format([-0.000123456789]))", "-1.234568×10⁻⁰⁴"},
      {"three-digit exponent", R"("%e".format([1e100]))", "1.000000×10¹⁰⁰"},
      {"zero", R"("%e".format([0.0]))", "0.000000×10⁰⁰"},
      {"rounding carries into the exponent", R"("%e".format([9.9999999]))", "1.000000×10⁰¹"},
      {"the precision is a width", R"("%.2e".format([2.71828]))", "2.718280×10⁰⁰"},
      {"a width past the text fills with spaces", R"("%.16e".format([2.71828]))",
       "   2.718280×10⁰⁰"},
      {"infinity in a width", R"("%.3e".format(["-Infinity"]))", " -∞"},
      {"a width of 65536 is none", R"("%.65536e".format([1.0]))", "1.000000×10⁰⁰"},
      {"width x/text cannot read", R"("%.10000010e".format([1.0]))", "%!(NOVERB)"},
      {"leading zeros of a precision", R"("%.03f".format([1.0]))", "1.000"},
      {"empty precision", R"("%.f".format(dyn([1.0])))",
       R"(error: could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing "": invalid syntax)"},
      {"precision beyond an int", R"("%.99999999999999999999f".format(dyn([1.0])))",
       R"(error: could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing "99999999999999999999": value out of range)"},
      {"the most negative int",
       R"("%d %x %b".format([-9223372036854775807 - 1, -9223372036854775807 - 1, -1]))",
       "-9223372036854775808 -8000000000000000 -1"},
      {"largest uint", R"("%X".format([18446744073709551615u]))", "FFFFFFFFFFFFFFFF"},
      {"strings in lists are quoted as Go quotes them", R"("%s".format([["tab\t", "é", "\x01"]]))",
       R"(["tab\t", "é", "\x01"])"},
      {"a byte that is not UTF-8, in %x", R"("%x".format([b"\xff"]))", "ff"},
      {"a byte that is not UTF-8, in %s", R"("%s".format([b"\xff"]))",
       R"(error: error during formatting: could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string)"},
      {"a clause letter that is not ASCII", R"("%é".format(dyn([1])))",
       "error: could not parse formatting clause: unrecognized formatting clause \"\u00c3\""},
      {"an optional in a list", R"("%s".format([dyn([optional.none()])]))",
       "error: error during formatting: no formatting function for optional_type"},
  });
}

// The validator looks at a format and a list both written out; a format or a list read from
// somewhere else is checked when it is formatted. Literals within format() may mix types.
TEST(CelStringFormatTest, WhatTheValidatorSees) {
  EXPECT_EQ(EvalText(R"("%s and %d".format(["a", 1]) == "a and 1")"), "true");
  EXPECT_EQ(EvalText(R"("%s".format([[1, "a", [true]]]) == '[1, "a", [true]]')"), "true");
  EXPECT_EQ(EvalText(R"(("%" + "d").format(["a"]) == "")"),
            "error: error during formatting: decimal clause can only be used on integers, was "
            "given string");
  // Outside format(), a literal of mixed types is still refused.
  EXPECT_TRUE(absl::StrContains(EvalText(R"("%s".format(["a"]) == "a" && [1, "a"] == [])"),
                                "expected type 'int' but found 'string'"));
  // A device attribute's value is dyn: checked when formatted.
  Device device;
  device.driver = "gpu.example.com";
  device.attributes["model"] = Value::String("a100");
  device.attributes["cores"] = Value::Int(6912);
  EXPECT_EQ(EvalText(R"("%s/%d".format([device.attributes["gpu.example.com"].model,
                         device.attributes["gpu.example.com"].cores]) == "a100/6912")",
                     device),
            "true");
  EXPECT_EQ(EvalText(R"("%d".format([device.attributes["gpu.example.com"].model]) == "")", device),
            "error: error during formatting: decimal clause can only be used on integers, was "
            "given string");
  // Errors about the call are where its arguments open, those about an argument at the
  // argument, as cel-go reports them.
  EXPECT_EQ(EvalText(R"("%s %s".format(["abc"]) == "")"),
            "compile: compilation failed: ERROR: <input>:1:15: index 1 out of range\n"
            R"( | "%s %s".format(["abc"]) == "")"
            "\n"
            " | ..............^");
  EXPECT_EQ(EvalText(R"("%d".format([5.2]) == "")"),
            "compile: compilation failed: ERROR: <input>:1:14: error during formatting: decimal "
            "clause can only be used on integers, was given double\n"
            R"( | "%d".format([5.2]) == "")"
            "\n"
            " | .............^");
  // In a new expression without DRAListTypeAttributes an attribute's value is of type any, which
  // is not dyn: the validator takes it for no clause, as cel-go's compares it with DynType.
  const std::string attribute =
      R"("%s".format([device.attributes["gpu.example.com"].model]) != "")";
  CompileOptions options;
  options.check.new_expressions = true;
  absl::StatusOr<std::shared_ptr<const Program>> refused = Program::Compile(attribute, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "was given google.protobuf.Any"))
      << refused.status();
  options.check.list_type_attributes = true;
  EXPECT_TRUE(Program::Compile(attribute, options).ok());
}

// Each value formatted costs one and each ten characters written one more: a list shared many
// times over, cheap to build, is stopped by the cost limit, and so are many long clauses (one
// clause's text is bounded, as x/text truncates precisions).
TEST(CelStringFormatTest, PaysForWhatItWrites) {
  const std::string shared =
      "cel.bind(a, [1, 2, 3, 4, 5, 6, 7, 8], cel.bind(b, [a, a, a, a, a, a, a, a], "
      "cel.bind(c, [b, b, b, b, b, b, b, b], cel.bind(d, [c, c, c, c, c, c, c, c], "
      "cel.bind(e, [d, d, d, d, d, d, d, d], cel.bind(f, [e, e, e, e, e, e, e, e], "
      "\"%s\".format([[f, f, f, f, f, f, f, f]])))))))";
  EXPECT_EQ(EvalText(shared + " == ''"), "error: operation cancelled: actual cost limit exceeded");
  // x/text truncates a precision: 10,000,000 is a fraction of 128 digits (its low byte, the
  // most, its low 16 bits, negative).
  EXPECT_EQ(EvalText(R"("%.10000000f".format([1.0]).size() == 130)"), "true");
  EXPECT_EQ(EvalText(R"("%.20000e".format([1.0]).size() == 20000)"), "true");
  EXPECT_EQ(EvalText(R"(lists.range(200).map(i, "%.65535e".format([1.0])).size() == 200)"),
            "error: operation cancelled: actual cost limit exceeded");
}

}  // namespace
}  // namespace devmgr::cel
