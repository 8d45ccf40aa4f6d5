// The selector evaluator against upstream's own tables (k8s.io/dynamic-resource-allocation/cel,
// compile_test.go): TestCEL case by case with its expressions, devices, matches and error texts
// and the worst-case cost it estimates for each (cost_estimate.h), TestCELFeatureCombinations
// and TestInterrupt.
#include "cel/program.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

// The table names only what each case sets, as upstream's does; the rest keep their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace devmgr::cel {
namespace {

constexpr char kDriver[] = "dra.example.com";

Value I(int64_t v) { return Value::Int(v); }
Value B(bool v) { return Value::Bool(v); }
Value S(std::string v) { return Value::String(std::move(v)); }
Value V(const std::string& v) { return Value::SemverOf(*kubeapi::Semver::Parse(v)); }
template <typename T>
Value L(std::vector<T> items, Value (*make)(T)) {
  List list;
  for (T item : items) list.push_back(make(std::move(item)));
  return Value::ListOf(std::move(list));
}
Value Vs(const std::vector<std::string>& items) {
  List list;
  for (const std::string& item : items) list.push_back(V(item));
  return Value::ListOf(std::move(list));
}
kubeapi::Quantity Q(const std::string& text) { return *kubeapi::Quantity::Parse(text); }

struct Case {
  std::string name;
  std::string expression;
  std::string driver;
  std::map<std::string, Value> attributes;
  std::map<std::string, kubeapi::Quantity> capacity;
  std::optional<bool> allow_multiple_allocations;
  bool new_expressions = false;
  bool consumable_capacity = false;
  // Unset: run with list-type attributes off and on.
  std::optional<bool> list_type_attributes;
  std::string compile_error;
  std::string match_error;
  bool match = false;
};

Device DeviceOf(const Case& c) {
  Device device;
  device.driver = c.driver;
  device.attributes = c.attributes;
  device.capacity = c.capacity;
  device.allow_multiple_allocations = c.allow_multiple_allocations;
  return device;
}

// 48 (ResourceSliceMaxAttributeValuesPerDevice) or more strings "value-0", "value-1", ...
Value ManyValues(int count) {
  List list;
  for (int i = 0; i < count; ++i) list.push_back(S(absl::StrCat("value-", i)));
  return Value::ListOf(std::move(list));
}

// 32 attributes (ResourceSliceMaxAttributesAndCapacitiesPerDevice) with 32-byte IDs.
std::map<std::string, Value> ManyAttributes() {
  std::map<std::string, Value> attributes;
  for (int i = 0; i < 32; ++i) {
    const std::string suffix = absl::StrCat("-", i);
    attributes[absl::StrCat("dra.example.com/", std::string(32 - suffix.size(), 'x'), suffix)] =
        S("abc");
  }
  return attributes;
}

std::vector<Case> TestCELCases() {
  const std::string d = kDriver;
  std::vector<Case> cases = {
      {.name = "true", .expression = "true", .match = true},
      {.name = "false", .expression = "false", .match = false},
      {.name = "syntax-error", .expression = "?!", .compile_error = "Syntax error"},
      {.name = "type-error",
       .expression = "1",
       .compile_error = "must evaluate to bool or the unknown type, not int"},
      {.name = "runtime-error-lookup-identifier",
       .expression =
           R"(device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0")))",
       .match_error = "no such key: noSuchAttr"},
      {.name = "runtime-error-lookup-map",
       .expression =
           R"(device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0")))",
       .match_error = "no such key: noSuchAttr"},
      {.name = "domain-check-negative",
       .expression = R"("no-such-domain" in device.attributes)",
       .match = false},
      {.name = "domain-check-positive",
       .expression = R"("dra.example.com" in device.attributes)",
       .attributes = {{"dra.example.com/something", B(true)}},
       .match = true},
      {.name = "empty-driver-name", .expression = R"(device.driver == "")", .match = true},
      {.name = "real-driver-name",
       .expression = R"(device.driver == "dra.example.com")",
       .driver = d,
       .match = true},
      {.name = "driver-name-qualifier",
       .expression = R"(device.attributes["dra.example.com"].name)",
       .driver = d,
       .attributes = {{"name", B(true)}},
       .match = true},
      {.name = "driver-name-qualifier-map-lookup",
       .expression = R"(device.attributes["dra.example.com"]["name"])",
       .driver = d,
       .attributes = {{"name", B(true)}},
       .match = true},
      {.name = "bind",
       .expression = R"(cel.bind(dra, device.attributes["dra.example.com"], dra.name))",
       .driver = d,
       .attributes = {{"name", B(true)}},
       .match = true},
      {.name = "qualified-attribute-name",
       .expression = R"(device.attributes["other.example.com"].name)",
       .driver = d,
       .attributes = {{"other.example.com/name", B(true)}},
       .match = true},
      {.name = "bool",
       .expression = R"(device.attributes["dra.example.com"].name)",
       .driver = d,
       .attributes = {{"name", B(true)}},
       .match = true},
      {.name = "int",
       .expression = R"(device.attributes["dra.example.com"].name > 0)",
       .driver = d,
       .attributes = {{"name", I(1)}},
       .match = true},
      {.name = "string",
       .expression = R"(device.attributes["dra.example.com"].name == "fish")",
       .driver = d,
       .attributes = {{"name", S("fish")}},
       .match = true},
      {.name = "macro-exists-on-int",
       .expression = R"(device.attributes["dra.example.com"].name.exists(x, x > 0))",
       .driver = d,
       .attributes = {{"name", I(1)}},
       .match_error = "got 'types.Int', expected iterable type"},
      {.name = "macro-exists-on-bool",
       .expression = R"(device.attributes["dra.example.com"].name.exists(x, x == true))",
       .driver = d,
       .attributes = {{"name", B(true)}},
       .match_error = "got 'types.Bool', expected iterable type"},
      {.name = "macro-exists-on-string",
       .expression = R"(device.attributes["dra.example.com"].name.exists(x, x == "fish"))",
       .driver = d,
       .attributes = {{"name", S("fish")}},
       .match_error = "got 'types.String', expected iterable type"},
      {.name = "list-result-type-causes-match-error",
       .expression = R"(device.attributes["dra.example.com"].names)",
       .driver = d,
       .attributes = {{"names", L<std::string>({"fish", "bird"}, S)}},
       .match_error = "CEL result of type list could not be converted to bool"},
      {.name = "includes-function-can-evaluate",
       .expression = R"(device.attributes["dra.example.com"].name.includes("fish"))",
       .driver = d,
       .attributes = {{"name", L<std::string>({"fish", "bird"}, S)}},
       .match = true},
      {.name = "list-of-bool",
       .expression = R"(device.attributes["dra.example.com"].names.size() == 2)",
       .driver = d,
       .attributes = {{"names", L<bool>({true, false}, B)}},
       .match = true},
      {.name = "list-of-int",
       .expression = R"(device.attributes["dra.example.com"].names.size() == 2)",
       .driver = d,
       .attributes = {{"names", L<int64_t>({1, 2}, I)}},
       .match = true},
      {.name = "list-of-string",
       .expression = R"(device.attributes["dra.example.com"].names.size() == 2)",
       .driver = d,
       .attributes = {{"names", L<std::string>({"fish", "bird"}, S)}},
       .match = true},
      {.name = "list-of-semver",
       .expression = R"(device.attributes["dra.example.com"].names.size() == 2)",
       .driver = d,
       .attributes = {{"names", Vs({"1.0.0", "2.0.0"})}},
       .match = true},
      {.name = "macro-on-list-of-int",
       .expression = R"(device.attributes["dra.example.com"].names.exists(x, x > 0))",
       .driver = d,
       .attributes = {{"names", L<int64_t>({1, 2}, I)}},
       .match = true},
      {.name = "macro-on-list-of-string",
       .expression = R"(device.attributes["dra.example.com"].names.all(x, x != ""))",
       .driver = d,
       .attributes = {{"names", L<std::string>({"fish", "bird"}, S)}},
       .match = true},
      {.name = "macro-on-list-of-semver",
       .expression =
           R"(device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1"))))",
       .driver = d,
       .attributes = {{"names", Vs({"1.0.0", "2.0.0"})}},
       .match = true},
      {.name = "includes-function-compilation-error",
       .expression = R"(device.attributes["dra.example.com"].attr.includes("fish"))",
       .driver = d,
       .new_expressions = true,
       .list_type_attributes = false,
       .compile_error = "undeclared reference to 'includes'"},
      {.name = "includes-function-compilation-and-eval-success",
       .expression = R"(device.attributes["dra.example.com"].attr.includes("fish"))",
       .driver = d,
       .attributes = {{"attr", S("fish")}},
       .new_expressions = true,
       .list_type_attributes = true,
       .match = true},
  };
  // The includes() table: a scalar or a list attribute, with the value there or not.
  struct Includes {
    const char* name;
    const char* argument;
    Value attribute;
    bool match;
  };
  const std::vector<Includes> includes = {
      {"bool-scalar-positive", "true", B(true), true},
      {"bool-scalar-negative", "true", B(false), false},
      {"bool-list-positive", "true", L<bool>({true, false}, B), true},
      {"bool-list-negative", "false", L<bool>({true, true}, B), false},
      {"int-scalar-positive", "1", I(1), true},
      {"int-scalar-negative", "1", I(2), false},
      {"int-list-positive", "1", L<int64_t>({1, 2}, I), true},
      {"int-list-negative", "3", L<int64_t>({1, 2}, I), false},
      {"string-scalar-positive", R"("fish")", S("fish"), true},
      {"string-scalar-negative", R"("bird")", S("fish"), false},
      {"string-list-positive", R"("fish")", L<std::string>({"fish", "bird"}, S), true},
      {"string-list-negative", R"("cat")", L<std::string>({"fish", "bird"}, S), false},
      {"semver-scalar-positive", R"(semver("1.0.0"))", V("1.0.0"), true},
      {"semver-scalar-negative", R"(semver("2.0.0"))", V("1.0.0"), false},
      {"semver-list-positive", R"(semver("1.0.0"))", Vs({"1.0.0", "2.0.0"}), true},
      {"semver-list-negative", R"(semver("3.0.0"))", Vs({"1.0.0", "2.0.0"}), false},
  };
  for (const Includes& c : includes) {
    cases.push_back({.name = absl::StrCat("includes-function-on-", c.name),
                     .expression = absl::StrCat(R"(device.attributes["dra.example.com"].name.)",
                                                "includes(", c.argument, ")"),
                     .driver = d,
                     .attributes = {{"name", c.attribute}},
                     .match = c.match});
  }
  std::vector<Case> rest = {
      {.name = "includes-function-on-very-long-list-positive",
       .expression = R"(device.attributes["dra.example.com"].name.includes("value-48"))",
       .driver = d,
       .attributes = {{"name", ManyValues(48)}},
       .match = false},
      {.name = "includes-function-on-very-long-list-runtime-error",
       .expression = R"(device.attributes["dra.example.com"].name.includes("value-49"))",
       .driver = d,
       .attributes = {{"name", ManyValues(49)}},
       .match_error = "'includes' function cannot be applied to lists longer than 48 values"},
      {.name = "in-operator-on-list",
       .expression = R"(1 in device.attributes["dra.example.com"].names)",
       .driver = d,
       .attributes = {{"names", L<int64_t>({1, 2, 3}, I)}},
       .match = true},
      {.name = "version",
       .expression = R"(device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1")))",
       .driver = d,
       .attributes = {{"name", V("1.0.0")}},
       .match = true},
      {.name = "version_v",
       .expression = R"(device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", )"
                     R"(true)) && isSemver("v1.0.0", true))",
       .driver = d,
       .attributes = {{"name", V("1.0.0")}},
       .match = true},
      {.name = "macro-exists-on-version",
       .expression =
           R"(device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1"))))",
       .driver = d,
       .attributes = {{"name", V("1.0.0")}},
       .match_error = "got 'cel.Semver', expected iterable type"},
      {.name = "quantity",
       .expression = R"(device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
       .driver = d,
       .capacity = {{"name", Q("1Mi")}},
       .match = true},
      {.name = "check-positive",
       .expression = R"("name" in device.capacity["dra.example.com"] && )"
                     R"(device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
       .driver = d,
       .capacity = {{"name", Q("1Mi")}},
       .match = true},
      {.name = "check-negative",
       .expression = R"(!("name" in device.capacity["dra.example.com"]) || )"
                     R"(device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
       .driver = d,
       .match = true},
      {.name = "all",
       .expression = R"(
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
)",
       .driver = d,
       .attributes =
           {{"bool", B(true)}, {"int", I(1)}, {"string", S("fish")}, {"version", V("1.0.0")}},
       .capacity = {{"quantity", Q("1Mi")}},
       .match = true},
      {.name = "many",
       .expression = R"(device.attributes["dra.example.com"].a && )"
                     R"(device.attributes["dra.example.com"].b && )"
                     R"(device.attributes["dra.example.com"].c)",
       .driver = d,
       .attributes = {{"a", B(true)}, {"b", B(true)}, {"c", B(true)}},
       .match = true},
      {.name = "check_attribute_domains",
       .expression = R"(device.attributes.exists_one(x, x == "dra.example.com"))",
       .driver = d,
       .attributes = {{"services", S("some_example_value")}},
       .match = true},
      {.name = "check_attribute_ids",
       .expression = R"(device.attributes["dra.example.com"].exists_one(x, x == "services"))",
       .driver = d,
       .attributes = {{"services", S("some_example_value")}},
       .match = true},
      {.name = "split_attribute",
       .expression =
           R"(device.attributes["dra.example.com"].services.split("example").size() >= 2)",
       .driver = d,
       .attributes = {{"services", S("some_example_value")}},
       .match = true},
      {.name = "regexp_attribute",
       .expression = R"(device.attributes["dra.example.com"].services.matches("[^a]?sym"))",
       .driver = d,
       .attributes = {{"services", S("asymetric")}},
       .match = true},
      {.name = "check_capacity_domains",
       .expression = R"(device.capacity.exists_one(x, x == "dra.example.com"))",
       .driver = d,
       .capacity = {{"memory", Q("1Mi")}},
       .match = true},
      {.name = "check_capacity_ids",
       .expression = R"(device.capacity["dra.example.com"].exists_one(x, x == "memory"))",
       .driver = d,
       .capacity = {{"memory", Q("1Mi")}},
       .match = true},
      {.name = "expensive",
       .expression =
           "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
           "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
           "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
           "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
       .driver = d,
       .attributes = ManyAttributes(),
       .match_error = "actual cost limit exceeded"},
      {.name = "allow_multiple_allocations",
       .expression = "device.allowMultipleAllocations == true",
       .driver = d,
       .allow_multiple_allocations = true,
       .consumable_capacity = true,
       .match = true},
      {.name = "allow_multiple_allocations_default",
       .expression = "device.allowMultipleAllocations == false",
       .driver = d,
       .consumable_capacity = true,
       .match = true},
      {.name = "allow_multiple_allocations_false",
       .expression = "device.allowMultipleAllocations == false",
       .driver = d,
       .allow_multiple_allocations = false,
       .consumable_capacity = true,
       .match = true},
      {.name = "allow_multiple_allocations_new",
       .expression = "device.allowMultipleAllocations == false",
       .driver = d,
       .allow_multiple_allocations = false,
       .new_expressions = true,
       .consumable_capacity = true,
       .match = true},
      {.name = "allow_multiple_allocations_enabled",
       .expression = "device.allowMultipleAllocations == false",
       .driver = d,
       .allow_multiple_allocations = false,
       .new_expressions = true,
       .consumable_capacity = true,
       .match = true},
      {.name = "allow_multiple_allocations_disabled",
       .expression = "device.allowMultipleAllocations == false",
       .driver = d,
       .new_expressions = true,
       .consumable_capacity = false,
       .compile_error = "undefined field 'allowMultipleAllocations'"},
  };
  cases.insert(cases.end(), rest.begin(), rest.end());
  return cases;
}

// Upstream's expectCost of each case of TestCEL that has one (the others: 0), the worst-case cost
// cel-go estimates for its expression.
uint64_t ExpectedCost(const std::string& name) {
  static const std::map<std::string, uint64_t> costs = {
      {"runtime-error-lookup-identifier", 6},
      {"runtime-error-lookup-map", 6},
      {"domain-check-negative", 3},
      {"domain-check-positive", 3},
      {"empty-driver-name", 2},
      {"real-driver-name", 4},
      {"driver-name-qualifier", 4},
      {"driver-name-qualifier-map-lookup", 4},
      {"bind", 15},
      {"qualified-attribute-name", 4},
      {"bool", 4},
      {"int", 5},
      {"string", 5},
      {"macro-exists-on-int", 389},
      {"macro-exists-on-bool", 389},
      {"macro-exists-on-string", 389},
      {"list-result-type-causes-match-error", 4},
      {"includes-function-can-evaluate", 52},
      {"list-of-bool", 6},
      {"list-of-int", 6},
      {"list-of-string", 6},
      {"list-of-semver", 6},
      {"macro-on-list-of-int", 389},
      {"macro-on-list-of-string", 261},
      {"macro-on-list-of-semver", 389},
      {"includes-function-compilation-and-eval-success", 52},
      {"includes-function-on-bool-scalar-positive", 52},
      {"includes-function-on-bool-scalar-negative", 52},
      {"includes-function-on-bool-list-positive", 52},
      {"includes-function-on-bool-list-negative", 52},
      {"includes-function-on-int-scalar-positive", 52},
      {"includes-function-on-int-scalar-negative", 52},
      {"includes-function-on-int-list-positive", 52},
      {"includes-function-on-int-list-negative", 52},
      {"includes-function-on-string-scalar-positive", 52},
      {"includes-function-on-string-scalar-negative", 52},
      {"includes-function-on-string-list-positive", 52},
      {"includes-function-on-string-list-negative", 52},
      {"includes-function-on-semver-scalar-positive", 53},
      {"includes-function-on-semver-scalar-negative", 53},
      {"includes-function-on-semver-list-positive", 53},
      {"includes-function-on-semver-list-negative", 53},
      {"includes-function-on-very-long-list-positive", 52},
      {"includes-function-on-very-long-list-runtime-error", 52},
      {"in-operator-on-list", 68},
      {"version", 6},
      {"version_v", 7},
      {"macro-exists-on-version", 453},
      {"quantity", 6},
      {"check-positive", 10},
      {"check-negative", 11},
      {"all", 52},
      {"many", 12},
      {"check_attribute_domains", 164},
      {"check_attribute_ids", 133},
      {"split_attribute", 19},
      {"regexp_attribute", 18},
      {"check_capacity_domains", 164},
      {"check_capacity_ids", 133},
      {"expensive", 85555551},
      {"allow_multiple_allocations", 3},
      {"allow_multiple_allocations_default", 3},
      {"allow_multiple_allocations_false", 3},
      {"allow_multiple_allocations_new", 3},
      {"allow_multiple_allocations_enabled", 3},
  };
  const auto found = costs.find(name);
  return found == costs.end() ? 0 : found->second;
}

void RunCase(const Case& c, bool list_type_attributes) {
  SCOPED_TRACE(absl::StrCat(c.name, " list-type-attributes=", list_type_attributes));
  CompileOptions options;
  options.check.new_expressions = c.new_expressions;
  options.check.list_type_attributes = list_type_attributes;
  options.check.consumable_capacity = c.consumable_capacity;
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(c.expression, options);
  if (!c.compile_error.empty()) {
    ASSERT_FALSE(program.ok()) << "expected compile error " << c.compile_error;
    EXPECT_TRUE(absl::StrContains(program.status().message(), c.compile_error)) << program.status();
    return;
  }
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ((*program)->estimated_cost().max, ExpectedCost(c.name));
  uint64_t cost = 0;
  absl::StatusOr<bool> matched = (*program)->Matches(DeviceOf(c), &cost);
  if (!c.match_error.empty()) {
    ASSERT_FALSE(matched.ok()) << "expected match error " << c.match_error;
    EXPECT_TRUE(absl::StrContains(matched.status().message(), c.match_error)) << matched.status();
    return;
  }
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_EQ(*matched, c.match);
  EXPECT_LE(cost, kDefaultCostLimit);
}

TEST(CelTest, TestCEL) {
  const std::vector<Case> cases = TestCELCases();
  EXPECT_EQ(cases.size(), 71u);  // every case of upstream's table
  for (const Case& c : cases) {
    if (c.list_type_attributes.has_value()) {
      RunCase(c, *c.list_type_attributes);
    } else {
      RunCase(c, false);
      RunCase(c, true);
    }
  }
}

// Which expressions compile in which environment: StoredExpressions (the default) takes all of
// the current version; NewExpressions only what the enabled feature gates add.
TEST(CelTest, TestCELFeatureCombinations) {
  struct Expectations {
    bool scalar_attribute;
    bool list_type_attributes;
    bool includes;
    bool multiple_allocations;
  };
  struct Environment {
    std::string name;
    bool new_expressions;
    bool consumable_capacity;
    bool list_type_attributes;
    Expectations compiles;
  };
  const Expectations everything{true, true, true, true};
  const std::vector<Environment> environments = {
      {"stored-expressions-no-features", false, false, false, everything},
      {"stored-expressions-consumable-capacity", false, true, false, everything},
      {"stored-expressions-list-type-attributes", false, false, true, everything},
      {"stored-expressions-all-features", false, true, true, everything},
      {"new-expressions-no-features", true, false, false, {true, false, false, false}},
      {"new-expressions-consumable-capacity", true, true, false, {true, false, false, true}},
      {"new-expressions-list-type-attributes", true, false, true, {true, true, true, false}},
      {"new-expressions-all-features", true, true, true, everything},
  };
  for (const Environment& environment : environments) {
    struct Expression {
      std::string name;
      std::string expression;
      Device device;
      bool compiles;
    };
    const Expectations& e = environment.compiles;
    const std::vector<Expression> expressions = {
        {"scalar-attribute",
         R"(device.attributes["dra.example.com"].ready)",
         {kDriver, std::nullopt, {{"ready", B(true)}}, {}},
         e.scalar_attribute},
        {"list-attribute",
         R"(device.attributes["dra.example.com"].ids.exists(id, id == 1))",
         {kDriver, std::nullopt, {{"ids", L<int64_t>({1, 2}, I)}}, {}},
         e.list_type_attributes},
        {"includes-function",
         R"(device.attributes["dra.example.com"].name.includes("fish"))",
         {kDriver, std::nullopt, {{"name", S("fish")}}, {}},
         e.includes},
        {"multiple-allocations",
         "device.allowMultipleAllocations",
         {kDriver, true, {}, {}},
         e.multiple_allocations},
        {"list-attribute-with-multiple-allocations",
         R"(device.allowMultipleAllocations && )"
         R"(device.attributes["dra.example.com"].ids.exists(id, id == 1))",
         {kDriver, true, {{"ids", L<int64_t>({1, 2}, I)}}, {}},
         e.list_type_attributes && e.multiple_allocations},
    };
    for (const Expression& expression : expressions) {
      SCOPED_TRACE(absl::StrCat(environment.name, "/", expression.name));
      CompileOptions options;
      options.check.new_expressions = environment.new_expressions;
      options.check.consumable_capacity = environment.consumable_capacity;
      options.check.list_type_attributes = environment.list_type_attributes;
      absl::StatusOr<std::shared_ptr<const Program>> program =
          Program::Compile(expression.expression, options);
      ASSERT_EQ(program.ok(), expression.compiles) << program.status();
      if (!program.ok()) continue;
      absl::StatusOr<bool> matched = (*program)->Matches(expression.device);
      ASSERT_TRUE(matched.ok()) << matched.status();
      EXPECT_TRUE(*matched);
    }
  }
}

// Upstream's TestEnhanceRuntimeError: the advice goes after a "no such key" error only, wrapped
// or not, whatever hint-like text it already has.
TEST(CelTest, TestEnhanceRuntimeError) {
  constexpr absl::string_view kHint =
      ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
      "with has() for optional fields";
  EXPECT_EQ(WithRuntimeHint("no such key: sharingStrategy"),
            absl::StrCat("no such key: sharingStrategy", kHint));
  EXPECT_EQ(WithRuntimeHint("some other error"), "some other error");
  EXPECT_EQ(WithRuntimeHint("context: no such key: fieldY"),
            absl::StrCat("context: no such key: fieldY", kHint));
  EXPECT_EQ(WithRuntimeHint("no such key: fieldZ. consider using CEL optional chaining"),
            absl::StrCat("no such key: fieldZ. consider using CEL optional chaining", kHint));
  // What the interpreter says for a device without the attribute gets it too.
  absl::StatusOr<std::shared_ptr<const Program>> program =
      Program::Compile(R"(device.attributes["dra.example.com"].model == "a")");
  ASSERT_TRUE(program.ok()) << program.status();
  Device device;
  device.driver = "dra.example.com";
  absl::StatusOr<bool> missing = (*program)->Matches(device);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(WithRuntimeHint(missing.status().message()), absl::StrCat("no such key: model", kHint));
}

TEST(CelTest, TestInterrupt) {
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(
      R"(device.attributes["dra.example.com"].map(key, device.attributes["dra.example.com"][key] )"
      R"(* 20).filter(e, e > 50).exists(e, e == 60))");
  ASSERT_TRUE(program.ok()) << program.status();
  Device device;
  for (int64_t i = 0; i < 1000; ++i)
    device.attributes[absl::StrCat("dra.example.com/attr", i)] = I(i);

  // deadline: it has passed already.
  absl::StatusOr<bool> late = (*program)->Matches(device, nullptr, {absl::Now(), nullptr});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_TRUE(absl::StrContains(late.status().message(), "operation interrupted")) << late.status();
  // cancel: cancelled before it starts.
  std::atomic<bool> cancelled{true};
  absl::StatusOr<bool> stopped =
      (*program)->Matches(device, nullptr, {absl::InfiniteFuture(), &cancelled});
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  // Neither: it runs to the end.
  absl::StatusOr<bool> done = (*program)->Matches(device);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(*done);
}

}  // namespace
}  // namespace devmgr::cel
