// Quantity: Kubernetes' text forms read exactly, compared, added, converted.
#include "kubeapi/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"

namespace devmgr::kubeapi {
namespace {

Quantity Q(const std::string& text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status();
  return q.value_or(Quantity());
}

// Each form read, as its canonical form writes it back: that pins the value exactly.
TEST(QuantityTest, ReadsEveryForm) {
  for (const auto& [text, canonical] : std::vector<std::pair<std::string, std::string>>{
           {"0", "0"},         {"1", "1"},       {"+2", "2"},     {"-3", "-3"},
           {"1.5", "1500m"},   {".5", "500m"},   {"5.", "5"},     {"100m", "100m"},
           {"1500m", "1500m"}, {"1n", "1n"},     {"7u", "7u"},    {"2k", "2k"},
           {"3M", "3M"},       {"1G", "1G"},     {"1T", "1T"},    {"1P", "1P"},
           {"2E", "2E"},       {"1Ki", "1Ki"},   {"1Mi", "1Mi"},  {"1.5Gi", "1536Mi"},
           {"1Ti", "1Ti"},     {"1Pi", "1Pi"},   {"7Ei", "7Ei"},  {"1e3", "1e3"},
           {"1E3", "1e3"},     {"2e-3", "2e-3"}, {"1e+2", "100"}, {"1e27", "1e27"},
       }) {
    EXPECT_EQ(Q(text).ToString(), canonical) << text;
  }
}

TEST(QuantityTest, RoundsBelowANanoUpAsKubernetes) {
  EXPECT_EQ(Q("0.1n").ToString(), "1n");
  EXPECT_EQ(Q("1.0000000001").ToString(), "1000000001n");
  EXPECT_EQ(Q("-0.1n").ToString(), "-1n");
}

TEST(QuantityTest, RefusesWhatIsNotAQuantity) {
  for (const std::string text : {"", "1 Gi", "1.2.3", "1x", "1Gb", "--1", "1e", "1ee3", "1Ki2",
                                 "abc", "1e3 ", " 1e3", "1e 3", "1e3\n", "1e+-3"}) {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    EXPECT_FALSE(q.ok()) << text;
    EXPECT_TRUE(absl::StrContains(q.status().message(), "quantity \"" + text + "\"")) << q.status();
  }
  EXPECT_TRUE(absl::StrContains(Quantity::Parse("1e100").status().message(), "too large"));
}

// ParseQuantity reads a number without digits as 0, with its suffix's format: "Ki" is a quantity
// (isQuantity("Ki") is true in CEL). Before, these were refused, and "1e3 " with a space was read.
TEST(QuantityTest, ANumberWithoutDigitsIsZero) {
  for (const std::string text : {"Ki", "m", "e3", "-", "+", ".", "-.", "M"}) {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_TRUE(q.ok()) << text << ": " << q.status();
    EXPECT_EQ(q->ToString(), "0") << text;
  }
}

TEST(QuantityTest, ComparesAddsAndConverts) {
  EXPECT_EQ(Q("1Ki").Compare(Q("1000")), 1);
  EXPECT_EQ(Q("1k").Compare(Q("1000")), 0);
  EXPECT_EQ(Q("1000m") == Q("1"), true);
  EXPECT_EQ(Q("-1").Compare(Q("0")), -1);
  EXPECT_EQ(Q("1Gi").Add(Q("512Mi"))->ToString(), "1536Mi");
  EXPECT_EQ(Q("1").Sub(Q("1.5"))->ToString(), "-500m");
  EXPECT_EQ(Q("1.5").Sign(), 1);
  EXPECT_EQ(Q("-1m").Sign(), -1);
  EXPECT_EQ(Q("0").Sign(), 0);
  EXPECT_TRUE(Q("2k").IsInteger());
  EXPECT_FALSE(Q("1.5").IsInteger());
  EXPECT_FALSE(Q("10E").IsInteger()) << "10^19 does not fit in int64";
  EXPECT_TRUE(Q("8Ei").IsInteger()) << "parsing caps it at int64's largest";
  EXPECT_EQ(*Q("2k").AsInteger(), 2000);
  EXPECT_FALSE(Q("1.5").AsInteger().ok());
  EXPECT_DOUBLE_EQ(Q("1.5").AsApproximateFloat(), 1.5);
  EXPECT_EQ(Quantity::FromInt64(-7).ToString(), "-7");
}

// Upstream's quantity_test.go (k8s.io/apimachinery/pkg/api/resource), by test name: the format
// a quantity remembers and the canonical form String() writes in it.

using Format = Quantity::Format;

// TestQuantityParse, its Format column: the suffix's kind; a binary quantity below 1 is decimal.
TEST(QuantityTest, QuantityParseFormats) {
  for (const auto& [text, format] : std::vector<std::pair<std::string, Format>>{
           {"0", Format::kDecimalSI},
           {"0n", Format::kDecimalSI},
           {"0Ki", Format::kBinarySI},
           {"0M", Format::kDecimalSI},
           {"1", Format::kDecimalSI},
           {"1Ki", Format::kBinarySI},
           {"3Ei", Format::kBinarySI},
           {"100Ti", Format::kBinarySI},
           {"5n", Format::kDecimalSI},
           {"1E", Format::kDecimalSI},
           {"12E", Format::kDecimalSI},
           {"1E-3", Format::kDecimalExponent},
           {"1e3", Format::kDecimalExponent},
           {"1E18", Format::kDecimalExponent},
           {"100.035k", Format::kDecimalSI},
           {"0.5e-2", Format::kDecimalExponent},
           {"1.3E+6", Format::kDecimalExponent},
           {"1.1E-9", Format::kDecimalExponent},
           {"0.00000012345", Format::kDecimalSI},
           {"100.035Ki", Format::kBinarySI},
           {"0.5Mi", Format::kBinarySI},
           {"0.025Ti", Format::kBinarySI},
           {"0.000000000001Ki", Format::kDecimalSI},  // rounds up, changes format
           {".001", Format::kDecimalSI},
           {"1.G", Format::kDecimalSI},
       }) {
    EXPECT_EQ(Q(text).format(), format) << text;
    EXPECT_EQ(Q("-" + text).format(), format) << "-" << text;
    EXPECT_EQ(Q("+" + text).format(), format) << "+" << text;
  }
}

// TestQuantityString: the canonical form of a quantity in each format; the same read back, and
// an alternate form of the value, write it again; the negated quantity writes it with a "-".
// Upstream builds each quantity from a mantissa, an exponent and a format; here NewQuantity's
// and NewMilliQuantity's counterparts do, or a parse in the format where the value needs it.
TEST(QuantityTest, QuantityString) {
  const auto binary = [](int64_t value) { return Quantity::FromInt64(value, Format::kBinarySI); };
  const auto exponent = [](int64_t value) {
    return Quantity::FromInt64(value, Format::kDecimalExponent);
  };
  struct Case {
    Quantity in;
    std::string expect;
    std::string alternate;
  };
  const std::vector<Case> cases = {
      {binary(1024 * 1024 * 1024), "1Gi", "1024Mi"},
      {binary(300 * 1024 * 1024), "300Mi", "307200Ki"},
      {binary(6 * 1024), "6Ki", ""},
      {binary(int64_t{1001} * 1024 * 1024 * 1024), "1001Gi", "1025024Mi"},
      {binary(int64_t{1024} * 1024 * 1024 * 1024), "1Ti", "1024Gi"},
      {binary(5), "5", "5000m"},
      {Quantity::FromMilli(500, Format::kBinarySI), "500m", "0.5"},
      {Quantity::FromInt64(1'000'000'000), "1G", "1000M"},
      {Q("1000M"), "1G", "0.001T"},
      {Q("1000000k"), "1G", ""},
      {Q("1000000000"), "1G", ""},
      {Quantity::FromMilli(1), "1m", "1000u"},
      {Quantity::FromMilli(80), "80m", ""},
      {Quantity::FromMilli(1080), "1080m", "1.08"},
      {Q("1.08"), "1080m", "1080000000n"},
      {Q("1.0800"), "1080m", ""},
      {Quantity::FromInt64(300'000'000), "300M", ""},
      {Quantity::FromInt64(1'000'000'000'000), "1T", ""},
      // Decimal SI has no suffix past E (10^18): the exponent is written instead.
      {Quantity::FromInt64(1'000'000'000'000'000'000), "1E", ""},
      {Q("1000E"), "1e21", "1000E"},
      {Q("5000E"), "5e21", "5000E"},
      {Q("1000000E"), "1e24", "1000000E"},
      {Q("1234567M"), "1234567M", ""},
      {Quantity::FromMilli(1234567, Format::kBinarySI), "1234567m", ""},
      {Quantity::FromInt64(3000), "3k", ""},
      {binary(1025), "1025", ""},
      {Quantity::FromInt64(0), "0", ""},
      {binary(0), "0", ""},
      {exponent(1'000'000'000), "1e9", ".001e12"},
      {Quantity::FromMilli(1, Format::kDecimalExponent), "1e-3", "0.001e0"},
      {Q("1e-9"), "1e-9", "1000e-12"},
      {Quantity::FromMilli(80, Format::kDecimalExponent), "80e-3", ""},
      {exponent(300'000'000), "300e6", ""},
      {exponent(1'000'000'000'000), "1e12", ""},
      {exponent(1000), "1e3", ""},
      {exponent(3000), "3e3", ""},
      {Quantity::FromInt64(3000), "3k", ""},
      {exponent(0), "0", "00"},
      {Q("1n"), "1n", ""},
      {Q("80n"), "80n", ""},
      {Q("1080n"), "1080n", ""},
      {Q("1.08u"), "1080n", ""},
      {Q("0.00000108"), "1080n", ""},
      {Q("1u"), "1u", ""},
      {Q("80u"), "80u", ""},
      {Q("1080u"), "1080u", ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.in.ToString(), c.expect);
    EXPECT_EQ(Q(c.expect).ToString(), c.expect);
    if (!c.alternate.empty()) {
      EXPECT_EQ(Q(c.alternate).ToString(), c.expect) << c.alternate;
    }
    if (c.in.Sign() == 0) continue;  // never "-0"
    // Zero minus the quantity: its negation, in its format.
    EXPECT_EQ(Quantity().Sub(c.in)->ToString(), "-" + c.expect);
  }
}

// TestQuantityParseEmit: read, then written canonically, and the same negated.
TEST(QuantityTest, QuantityParseEmit) {
  for (const auto& [in, expect] : std::vector<std::pair<std::string, std::string>>{
           {"1Ki", "1Ki"},
           {"1Mi", "1Mi"},
           {"1Gi", "1Gi"},
           {"1024Mi", "1Gi"},
           {"1000M", "1G"},
           {".001Ki", "1024m"},
           {".000001Ki", "1024u"},
           {".000000001Ki", "1024n"},
           {".000000000001Ki", "2n"},
       }) {
    EXPECT_EQ(Q(in).ToString(), expect) << in;
    EXPECT_EQ(Q("-" + in).ToString(), "-" + expect) << in;
  }
}

// TestQuantityParseZero and TestQuantityCanocicalizeZero: zero is "0" in any format.
TEST(QuantityTest, QuantityParseZero) {
  EXPECT_EQ(Q("0").ToString(), "0");
  EXPECT_EQ(Q("1000m").Sub(Q("1"))->ToString(), "0");
  EXPECT_EQ(Q("0Ki").ToString(), "0");
}

// TestQuantityAddZeroPreservesSuffix and TestQuantitySubZeroPreservesSuffix: zero added or taken
// away, on either side, keeps the other quantity's format.
TEST(QuantityTest, QuantityAddAndSubZeroPreserveSuffix) {
  const Quantity zero = Q("0");
  for (const std::string text : {"100m", "1Gi"}) {
    const Quantity value = Q(text);
    EXPECT_EQ(value.Add(zero)->ToString(), text);
    EXPECT_EQ(zero.Add(value)->ToString(), text);
    EXPECT_EQ(value.Sub(zero)->ToString(), text);
    EXPECT_EQ(zero.Sub(value)->ToString(), "-" + text);
  }
}

// TestQuantityNeg: 9.01 negated.
TEST(QuantityTest, QuantityNeg) { EXPECT_EQ(Quantity().Sub(Q("9.01"))->ToString(), "-9010m"); }

// TestNewSet: NewQuantity in each format, and its text read back to the same value.
TEST(QuantityTest, NewSet) {
  for (const auto& [value, format, expect] : std::vector<std::tuple<int64_t, Format, std::string>>{
           {1, Format::kDecimalSI, "1"},
           {1000, Format::kDecimalSI, "1k"},
           {1234000, Format::kDecimalSI, "1234k"},
           {1024, Format::kBinarySI, "1Ki"},
           {1000000, Format::kDecimalExponent, "1e6"},
           {1024 * 1024, Format::kBinarySI, "1Mi"},
       }) {
    const Quantity q = Quantity::FromInt64(value, format);
    EXPECT_EQ(q.ToString(), expect);
    EXPECT_EQ(Q(q.ToString()), q) << expect;
  }
}

// TestMilliNewSet: NewMilliQuantity in each format; a binary one with a fraction is decimal.
TEST(QuantityTest, MilliNewSet) {
  for (const auto& [value, format, expect] : std::vector<std::tuple<int64_t, Format, std::string>>{
           {1, Format::kDecimalSI, "1m"},
           {1000, Format::kDecimalSI, "1"},
           {1234000, Format::kDecimalSI, "1234"},
           {1024, Format::kBinarySI, "1024m"},
           {1000000, Format::kDecimalExponent, "1e3"},
           {1024 * 1024, Format::kBinarySI, "1048576m"},
       }) {
    const Quantity q = Quantity::FromMilli(value, format);
    EXPECT_EQ(q.ToString(), expect);
    EXPECT_EQ(Q(q.ToString()), q) << expect;
  }
}

// Not upstream's: the largest binary suffix is Ei (upstream drops the suffix past it), a sum is
// in the format of the quantity added to, and a binary quantity with a fraction or below 1024
// either way is written in decimal.
// ParseQuantity caps a binary quantity at int64's largest; a decimal one, and a sum, are not.
TEST(QuantityTest, ABinaryQuantityPastInt64IsCapped) {
  EXPECT_EQ(Q("8Ei").ToString(), "9223372036854775807");
  EXPECT_EQ(Q("10Ei").Compare(Q("9223372036854775807")), 0);
  EXPECT_EQ(Q("-10Ei").ToString(), "-9223372036854775807");
  EXPECT_EQ(Q("1000000000000000000000000000000Ki").ToString(), "9223372036854775807")
      << "past what the parse holds too";
  EXPECT_EQ(Q("9223372036854775807Ki").CeilInt64(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Q("10E").ToString(), "10E") << "decimal: not capped";
  EXPECT_EQ(Q("7Ei").Add(Q("7Ei"))->ToString(), "14Ei") << "a sum: not capped";
}

TEST(QuantityTest, BinaryEdges) {
  EXPECT_EQ(Q("1Ei").Add(Q("1Ei"))->ToString(), "2Ei");
  // A sum keeps the format of the quantity added to.
  EXPECT_EQ(Q("1023").Add(Quantity::FromInt64(1, Format::kBinarySI))->ToString(), "1024");
  EXPECT_EQ(Quantity::FromInt64(1, Format::kBinarySI).Add(Q("1023"))->ToString(), "1Ki");
  EXPECT_EQ(Quantity::FromInt64(-1023, Format::kBinarySI).ToString(), "-1023");
  EXPECT_EQ(Quantity::FromInt64(-1024, Format::kBinarySI).ToString(), "-1Ki");
  EXPECT_EQ(Q("1Ki").Add(Q("500m"))->ToString(), "1024500m");
}

}  // namespace
}  // namespace devmgr::kubeapi
