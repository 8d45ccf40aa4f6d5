// EstimateCost against the estimates upstream's tests expect: cel-go's TestCost (checker) for its
// expressions of literals, Kubernetes' library cost tests
// (apiserver/pkg/cel/library, TestTwoVariableComprehensionCost, TestSetsCost, TestIPCost,
// TestCIDRCost, TestStringLibrary, TestQuantityCost, TestSemverCost, TestListsCost) for
// expressions of literals, where DRA's environment estimates as theirs does (a call's result
// compared with `== ...` where upstream's expression is not a bool adds that comparison's cost,
// noted), resource.k8s.io's CEL-cost scenario, and the sizes DRA declares for `device`.
#include "cel/cost_estimate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cel/program.h"

namespace devmgr::cel {
namespace {

struct Case {
  std::string expression;
  uint64_t min;
  uint64_t max;
};

void ExpectEstimates(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expression);
    CompileOptions options;
    options.check.list_type_attributes = true;
    absl::StatusOr<std::shared_ptr<const Program>> program =
        Program::Compile(c.expression, options);
    ASSERT_TRUE(program.ok()) << program.status();
    EXPECT_EQ((*program)->estimated_cost(), (CostRange{c.min, c.max}));
  }
}

TEST(CostEstimateTest, TestCost) {
  constexpr uint64_t kEqualityOfUnknownSizes = 1844674407370955264;  // a tenth of 2^64, rounded
  ExpectEstimates({
      {"[1, 2, 3].all(x, true)", 20, 20},
      {"'123'.matches('[0-9]')", 2, 2},
      {"true || false", 0, 0},
      {"true && false", 0, 0},
      {"1 < 2", 1, 1},
      {"1 <= 2", 1, 1},
      {"1 == 2", 1, 1},
      {"2 > 1", 1, 1},
      {"2 >= 1", 1, 1},
      {"2 in [1, 2, 3]", 13, 13},
      {"((5 != 6) == (1 == 2)) == ((3 <= 4) == (9 != 9))", 7, 7},
      // + 10 for [] and nothing for comparing with an empty list.
      {"[1,2,3,4,5].filter(x, x % 2 == 0) == []", 41 + 10, 101 + 10},
      {"[1,2,3,4,5].map(x, x) == []", 86 + 10, 86 + 10},
      {"[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0) == []", 117 + 10, 177 + 10},
      {"[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", 108, 118},
      {"[1,2,3,4,5].map(x, x).map(x, x) == []", 162 + 10, 162 + 10},
      // + 1 for comparing an item of size 1.
      {"[1,2,3,4,5].map(x, x)[4] == 5", 87 + 1, 87 + 1},
      // + 10 for [1,2] and 1 for comparing two lists of size 2.
      {"[[1,2],[1,2],[1,2],[1,2],[1,2]][4] == [1,2]", 61 + 11, 61 + 11},
      {"{'a': [1,2], 'b': [1,2], 'c': [1,2], 'd': [1,2], 'e': [1,2]}.b == [1,2]", 81 + 11, 81 + 11},
      {"[[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]].all(y, y.all(y, y == 1))", 76, 136},
      {"[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))", 157, 217},
      {"[\"a\", \"ab\", \"abc\", \"abcd\", \"abcde\"].map(x, [x, x]).all(y, y.all(y, "
       "y.startsWith('a')))",
       157, 217},
      {"[1,2,3,4,5].map(x, x).map(x, x) + [1] == []", 173 + 10, 173 + 10},
      {"[1,2,3].all(i, i in [1,2,3].map(j, j + j))", 20, 230},
      {"dyn([1,2,3]).all(i, i in dyn([1,2,3]).map(j, j + j))", 21, 234},
      {"{'hello': 'hi'}['hello'] != {'hello': 'bye'}['hello']", 63, 63},
      {"['hello', 'hi'][0] != ['hello', 'bye'][1]", 23, 23},
      {"type(1) == int", 3, 2 + kEqualityOfUnknownSizes},
  });
}

TEST(CostEstimateTest, TestTwoVariableComprehensionCost) {
  ExpectEstimates({
      {"{'a': 1, 'b': 2}.all(k, v, v > 0)", 37, 41},
      {"{'a': 1, 'b': 2}.exists(k, v, v > 0)", 39, 43},
      {"{'a': 1, 'b': 2}.existsOne(k, v, v > 0)", 38, 40},
      // + 30 for {} and nothing for comparing with an empty map.
      {"{'a': 1, 'b': 2}.transformMap(k, v, v + 1) == {}", 71 + 30, 71 + 30},
      {"{'a': 1, 'b': 2}.transformMap(k, v, v < 5, v + 1) == {}", 67 + 30, 75 + 30},
      {"{'a': 1, 'b': 2}.transformMapEntry(k, v, {k: v + 1}) == {}", 131 + 30, 131 + 30},
      {"{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1}) == {}", 67 + 30, 135 + 30},
      {"[1, 2].all(i, v, v > 0)", 17, 21},
      {"[1, 2].exists(i, v, v > 0)", 19, 23},
      {"[1, 2].existsOne(i, v, v > 0)", 18, 20},
      {"[1, 2].transformList(i, v, v + 1) == []", 49 + 10, 49 + 10},
      {"[1, 2].transformList(i, v, v < 5, v + 1) == []", 27 + 10, 53 + 10},
  });
}

TEST(CostEstimateTest, TestSetsCost) {
  ExpectEstimates({
      {"sets.intersects([1], [1])", 22, 22},
      {"sets.intersects([1], [1, 1])", 23, 23},
      {"!sets.equivalent([1], [1, 2])", 26, 26},
      {"!sets.intersects([], [])", 22, 22},
      {"!sets.intersects([1], [2])", 23, 23},
  });
}

TEST(CostEstimateTest, TestURLsCost) {
  ExpectEstimates({
      {"url('https:://kubernetes.io/').getScheme() == ''", 4, 4},
      {"url('https:://kubernetes.io/').getHost() == ''", 4, 4},
      {"url('https:://kubernetes.io/') == url('https:://kubernetes.io/')", 7, 9},
      {"url('https:://kubernetes.io/') == url('http://x.b')", 5, 5},
  });
}

TEST(CostEstimateTest, TestIPCost) {
  ExpectEstimates({
      {"ip('192.168.0.1').family() == 4", 3 + 1, 3 + 1},
      {"ip('2001:db8:3333:4444:5555:6666:7777:8888').isLoopback()", 5, 5},
      {"ip('2001:db8:3333:4444:5555:6666:7777:8888') == ip('192.168.0.1')", 7, 7},
      {"ip.isCanonical('192.168.0.1')", 3, 3},
      {"ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8, 8},
      {"ip.isCanonical('2001:db8::abcd')", 3, 3},
  });
}

TEST(CostEstimateTest, TestCIDRCost) {
  ExpectEstimates({
      {"cidr('192.168.0.0/16').ip() == ip('192.168.0.0')", 3 + 2 + 1, 3 + 2 + 1},
      {"cidr('192.168.0.0/16').containsCIDR(cidr('192.0.0.0/30'))", 7, 11},
      {"cidr('192.168.0.0/16').containsCIDR('192.168.0.0/16')", 7, 11},
      {"cidr('192.168.0.0/16').containsIP(ip('192.169.0.1'))", 5, 8},
      {"cidr('192.168.0.0/16').containsIP('192.0.0.1')", 4, 7},
      {"cidr('2001:db8::/32').containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", 7, 10},
      {"cidr('2001:db8::/32') == cidr('2001:db8::/32')", 5, 5},
  });
}

TEST(CostEstimateTest, TestStringLibrary) {
  ExpectEstimates({
      {"'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", 7, 9},
      {"'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()", 7, 9},
      {"strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", 7, 11},
      // + 0 for comparing with an empty string.
      {"'abc 123 def 123'.replace('123', '456') == ''", 3, 3},
      {"'abc 123 def 123'.replace('', 'x') == ''", 3, 3},
      {"'abc 123 def 123'.substring(5) == ''", 2, 2},
      {"'  abc 123 def 123  '.trim() == ''", 2, 2},
      // + 10 for [] and nothing for comparing with an empty list.
      {"'abc 123 def 123'.split(' ', 1) == []", 3 + 10, 3 + 10},
      {"'abc 123 def 123'.findAll('123', 1) == []", 2 + 10, 2 + 10},
      {"'abc 123 def 123'.find('123') == ''", 2, 2},
  });
}

TEST(CostEstimateTest, TestQuantityCost) {
  ExpectEstimates({
      {"quantity(\"200M\") == quantity(\"200M\")", 3, 3},
      {"quantity(\"200M\") == quantity(\"0.2G\") && quantity(\"0.2G\") == quantity(\"200M\")", 3,
       6},
      {"quantity(\"50M\").isLessThan(quantity(\"50Mi\"))", 3, 3},
      {"quantity(\"200M\").compareTo(quantity(\"0.2G\")) > 0", 4, 4},
      {"quantity(\"50k\").add(quantity(\"20\")) == quantity(\"50.02k\")", 5, 5},
      {"quantity(\"50k\").sub(20) == quantity(\"49980\")", 4, 4},
      {"quantity(\"50k\").add(20).sub(quantity(\"100k\")).sub(-50000).asInteger() > 0", 7, 7},
      {"quantity(\"50\").isInteger()", 2, 2},
      {"quantity(\"50.703k\").asApproximateFloat() > 0.0", 3, 3},
  });
}

TEST(CostEstimateTest, TestSemverCost) {
  ExpectEstimates({
      {"isSemver(\"1.0.0\")", 1, 1},
      {"isSemver(\"1234.56789012345.67890123456789\")", 4, 4},
      {"semver(\"1.2.3\").major() == 1", 2 + 1, 2 + 1},
      {"semver(\"1.0.0\").isLessThan(semver(\"1.1.0\"))", 3, 3},
      {"semver(\"1.0.0\").compareTo(semver(\"1.2.3\")) == 0", 3 + 1, 3 + 1},
  });
}

TEST(CostEstimateTest, TestListsCost) {
  ExpectEstimates({
      {"[1, 2, 3, 4, 5].sum() == 15", 15 + 1, 15 + 1},
      {"[1.0, 2.0, 3.0, 4.0, 5.0].isSorted()", 15, 15},
      {"[false, true, false, true, false].isSorted()", 15, 15},
      {"[1, 2, 3, 4, 5].max() == 5", 15 + 1, 15 + 1},
      {"[1, 2, 3, 4, 5].indexOf(3) == 2", 15 + 1, 15 + 1},
  });
}

// The scenario CEL-cost of resource.k8s.io's TestValidateClaim: 85,555,551, far over the limit.
TEST(CostEstimateTest, NestedComprehensionsOverTheLimit) {
  std::string selector = "int('1'.find('[0-9]*')) < 100";
  for (const char* variable : {"z5", "z4", "z3", "z2", "z", "y", "x"}) {
    selector =
        std::string("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(") + variable + ", " + selector + ")";
  }
  // At the least each all() sees its first item false: 10 + 3 x 10 + 1.
  ExpectEstimates({{selector, 41, 85'555'551}});
  EXPECT_EQ(SelectorMaxCost(selector).value_or(0), 85'555'551U);
  const absl::StatusOr<uint64_t> broken = SelectorMaxCost("device.driver ==");
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(broken.status().message().rfind("compilation failed: ERROR: <input>:1:", 0), 0u)
      << broken.status();
}

// What `device` holds is bounded by what DRA declares: a driver name of 63 characters, 32
// domains of 32 attributes, an attribute of 64; a comparison costs a tenth of the shorter side.
TEST(CostEstimateTest, DeviceSizesAreDeclared) {
  ExpectEstimates({
      // device (1), .driver (1), == of at most 15 characters (1 or 2).
      {"device.driver == \"dra.example.com\"", 3, 4},
      // device.attributes (2), the index (1), .model (1), device.driver (2), and == of at most 63
      // characters (1 to 7).
      {"device.attributes[\"dra.example.com\"].model == device.driver", 7, 13},
      // Up to 32 domains, each visited at 3 (the step, its condition) plus the predicate (3).
      {"device.attributes.all(d, d.size() > 0)", 3, 3 + 32 * (3 + 3)},
      // Every value of every domain: up to 32 x 32 visits; the inner range costs 4, each inner
      // predicate 7.
      {"device.attributes.all(d, device.attributes[d].all(k, device.attributes[d][k] != 0))", 3,
       3 + 32 * (3 + 4 + 1 + 32 * (3 + 7))},
      // includes() walks at most the 48 values of a list attribute.
      {"device.attributes[\"d\"][\"l\"].includes(1)", 4, 4 + 48},
      // An attribute's string is at most 64 characters: (0 to 64 + 1) / 10 times a quarter of the
      // pattern's length.
      {"device.attributes[\"d\"][\"s\"].matches(\"^a+$\")", 4 + 1, 4 + 7},
  });
}

TEST(CostEstimateTest, TestNameFormatCost) {
  ExpectEstimates({
      // + 1 for hasValue().
      {"format.named(\"dns1123Subdomain\").value().validate(\"my-name\").hasValue()", 34 + 1,
       34 + 1},
      {"format.named(\"dns1123Label\").value() == format.named(\"dns1123Label\").value()", 5, 11},
  });
}

// Equality of Kubernetes' types: only == of two values of one type is Kubernetes' own estimate;
// != and == of a dyn are cel-go's, a tenth of the shorter size, unknown for a value without one.
// (Worked out by hand from upstream's code.)
TEST(CostEstimateTest, EqualityOfKubernetesTypes) {
  ExpectEstimates({
      {"url('http://x.b') == url('https:://kubernetes.io/')", 5, 7},
      {"ip(\"10.0.0.1\") != ip(\"10.0.0.2\")", 3, 2 + 1844674407370955264},
      // A capacity's quantity is of size 0 (DRA declares none).
      {"device.capacity[\"d\"][\"memory\"] == quantity(\"1Gi\")", 6, 6},
      {"device.capacity[\"d\"][\"memory\"] != quantity(\"1Gi\")", 5, 5},
      // A field of a domain's capacities is no declared capacity: its size is unknown.
      {"device.capacity[\"dra.example.com\"].memory != quantity(\"1Gi\")", 6,
       5 + 1844674407370955264},
      // An attribute (dyn, at most 64) against a version.
      {"device.attributes[\"d\"].version == semver(\"1.0.0\")", 6, 12},
  });
}

// cel-go extends paths as Go appends to slices: where the array has room, a later extension
// overwrites an earlier one's last part. (Worked out by hand from upstream's code.)
TEST(CostEstimateTest, PathsShareTheirArraysAsGoSlicesDo) {
  ExpectEstimates({
      // The key's path ends in @values once the value's is made: 64 (an attribute), not 32.
      {"device.attributes[\"dra.example.com\"].exists(k, v, k.contains(\"mem\"))", 4, 388},
      // Of capacities the key then reads as a quantity, of size 0.
      {"device.capacity[\"dra.example.com\"].exists(k, v, k.contains(\"mem\"))", 4, 164},
      // dra.l's count is read after the inner exists() wrote @keys into dra's array: 32, not 64.
      {"cel.bind(dra, device.attributes[\"d\"], dra.l.exists(x, dra.exists(k, k == \"a\")))", 16,
       6352},
      // A negative limit of split() is no bound (Go's uint64 of -1).
      {"device.driver.split(\"/\", -1).all(p, p != \"\")", 3, 18446744073709551615U},
  });
}

// Where a size cannot be bounded the estimate is 2^64 - 1, as cel-go's: joining strings whose
// sizes are unknown.
TEST(CostEstimateTest, UnboundedSizesExceedEveryLimit) {
  EXPECT_GT(SelectorMaxCost("['a', 'b'].join() == 'ab'").value_or(0), 1'000'000U);
  EXPECT_GT(SelectorMaxCost("[device.driver].join() == ''").value_or(0), 1'000'000U);
  EXPECT_LT(SelectorMaxCost("device.driver.lowerAscii() == 'x'").value_or(UINT64_MAX), 1'000'000U);
}

}  // namespace
}  // namespace devmgr::cel
