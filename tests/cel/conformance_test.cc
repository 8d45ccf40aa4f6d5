// cel-spec's simple conformance tests (google/cel-spec, tests/simple/testdata), every case by its
// name, from the JSON export of each file's tests (scripts/export_cel_conformance.py). A case
// outside devmgr's subset is in the export too, with the construct that puts it outside, and is
// reported here as skipped with that reason.
//
// How a case is checked. The expression is parsed and checked as Program::Compile does
// (parser.h, checker.h), with the default CheckOptions, except that its root is wrapped in
// dyn(): Check refuses a root that is neither bool nor dyn, and these expressions evaluate to
// any value. dyn() adds nothing but a step of cost, and the wrapped expression is checked as
// usual. It is then evaluated (interpreter.h) with the default cost limit, and the Value
// compared with the expected one exactly, as cel-spec asks: the same CEL type (1, 1u and 1.0
// differ), lists element by element, maps in any order, NaN matching NaN and a zero's sign
// kept. Compiling `(EXPR) == (EXPECTED)` instead would have hidden wrong types and NaNs,
// since CEL's == compares numbers across types and NaN equals nothing.
//
// An expected error: the expression must evaluate to an error, or, where cel-spec evaluates it
// unchecked (disable_check), may instead be refused when it is parsed or checked. cel-spec's
// texts are often prose ("return error for overflow"); a text is compared (as a substring) only
// where it is cel-go's own message, which devmgr reproduces (kCelGoTexts), and only when the
// phase that gives that message is the one that failed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "cel/ast.h"
#include "cel/checker.h"
#include "cel/functions.h"
#include "cel/interpreter.h"
#include "cel/parser.h"
#include "cel/program.h"
#include "nlohmann/json.hpp"
#include "tests/cel/conformance_path.h"

namespace devmgr::cel {
namespace {

using Json = nlohmann::json;

const Json& Cases() {
  static const Json* cases = [] {
    std::ifstream in(DEVMGR_CEL_CONFORMANCE);
    std::stringstream text;
    text << in.rdbuf();
    return new Json(Json::parse(text.str(), nullptr, /*allow_exceptions=*/false));
  }();
  return *cases;
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  if (!Cases().is_array()) return names;
  for (const Json& item : Cases()) names.push_back(item["name"].get<std::string>());
  return names;
}

const Json& CaseNamed(const std::string& name) {
  static const auto* by_name = [] {
    auto* index = new std::map<std::string, const Json*>();
    if (Cases().is_array()) {
      for (const Json& item : Cases()) index->emplace(item["name"].get<std::string>(), &item);
    }
    return index;
  }();
  static const Json kNone;
  const auto found = by_name->find(name);
  return found == by_name->end() ? kNone : *found->second;
}

// The outcome of one expression: its value, or the error of the phase that failed.
struct Outcome {
  enum class Phase { kValue, kParse, kCheck, kEvaluation };
  Phase phase = Phase::kValue;
  Value value;
  std::string error;
};

Outcome Execute(const std::string& expression) {
  Outcome out;
  absl::StatusOr<ExprPtr> parsed = Parse(expression);
  if (!parsed.ok()) {
    out.phase = Outcome::Phase::kParse;
    out.error = std::string(parsed.status().message());
    return out;
  }
  auto root = std::make_unique<Expr>();
  root->kind = Expr::Kind::kCall;
  root->name = "dyn";
  root->args.push_back(*std::move(parsed));
  if (absl::Status checked = Check(*root, expression, CheckOptions{}); !checked.ok()) {
    out.phase = Outcome::Phase::kCheck;
    out.error = std::string(checked.message());
    return out;
  }
  RegexCache regexes;
  EvalContext context(kDefaultCostLimit, Interruption{}, regexes);
  out.value = Evaluate(*root, Value(), context);
  if (out.value.is_error()) {
    out.phase = Outcome::Phase::kEvaluation;
    out.error = out.value.error();
  }
  return out;
}

// Print: a value as CEL would write it, for failure messages.
std::string Print(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull:
      return "null";
    case Value::Kind::kBool:
      return v.bool_value() ? "true" : "false";
    case Value::Kind::kInt:
      return std::to_string(v.int_value());
    case Value::Kind::kUint:
      return std::to_string(v.uint_value()) + "u";
    case Value::Kind::kDouble: {
      std::ostringstream out;
      out.precision(17);
      out << v.double_value();
      return out.str() + "(double)";
    }
    case Value::Kind::kString:
      return "\"" + absl::CEscape(v.string_value()) + "\"";
    case Value::Kind::kBytes:
      return "b\"" + absl::CEscape(v.bytes_value()) + "\"";
    case Value::Kind::kList: {
      std::string out = "[";
      for (const Value& item : v.list()) out += (out.size() > 1 ? ", " : "") + Print(item);
      return out + "]";
    }
    case Value::Kind::kMap: {
      std::string out = "{";
      for (const auto& [key, value] : v.map().entries) {
        out += (out.size() > 1 ? ", " : "") + Print(key) + ": " + Print(value);
      }
      return out + "}";
    }
    case Value::Kind::kOptional:
      return v.optional_value() == nullptr ? "optional.none()"
                                           : "optional.of(" + Print(*v.optional_value()) + ")";
    case Value::Kind::kError:
      return "error: " + v.error();
    default:
      return v.TypeName();
  }
}

bool SameDouble(double actual, const Json& expected) {
  if (expected.is_string()) {
    const std::string special = expected.get<std::string>();
    if (special == "NaN") return std::isnan(actual);
    if (special == "Infinity") return std::isinf(actual) && actual > 0;
    if (special == "-Infinity") return std::isinf(actual) && actual < 0;
    return false;
  }
  const double want = expected.get<double>();
  return actual == want && std::signbit(actual) == std::signbit(want);
}

// Matches: `actual` is the typed JSON value `expected` (see the export script for the form).
bool Matches(const Json& expected, const Value& actual) {
  using Kind = Value::Kind;
  if (expected.contains("null")) return actual.kind() == Kind::kNull;
  if (expected.contains("type")) {
    return actual.kind() == Kind::kType &&
           actual.type_value() == expected["type"].get<std::string>();
  }
  if (expected.contains("bool")) {
    return actual.kind() == Kind::kBool && actual.bool_value() == expected["bool"].get<bool>();
  }
  if (expected.contains("int")) {
    return actual.kind() == Kind::kInt && actual.int_value() == expected["int"].get<int64_t>();
  }
  if (expected.contains("uint")) {
    return actual.kind() == Kind::kUint && actual.uint_value() == expected["uint"].get<uint64_t>();
  }
  if (expected.contains("double")) {
    return actual.kind() == Kind::kDouble && SameDouble(actual.double_value(), expected["double"]);
  }
  if (expected.contains("string")) {
    return actual.kind() == Kind::kString &&
           actual.string_value() == expected["string"].get<std::string>();
  }
  if (expected.contains("bytes")) {
    std::string bytes;
    return absl::Base64Unescape(expected["bytes"].get<std::string>(), &bytes) &&
           actual.kind() == Kind::kBytes && actual.bytes_value() == bytes;
  }
  if (expected.contains("list")) {
    const Json& items = expected["list"];
    if (actual.kind() != Kind::kList || actual.list().size() != items.size()) return false;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Matches(items[i], actual.list()[i])) return false;
    }
    return true;
  }
  if (expected.contains("map")) {
    const Json& entries = expected["map"];
    if (actual.kind() != Kind::kMap || actual.map().entries.size() != entries.size()) {
      return false;
    }
    // Keys are unique on both sides, so each expected entry has at most one partner.
    for (const Json& entry : entries) {
      const auto partner =
          std::find_if(actual.map().entries.begin(), actual.map().entries.end(),
                       [&](const auto& pair) { return Matches(entry[0], pair.first); });
      if (partner == actual.map().entries.end() || !Matches(entry[1], partner->second)) {
        return false;
      }
    }
    return true;
  }
  return false;
}

// cel-go's own messages among cel-spec's expected errors, which devmgr's evaluator and checker
// reproduce, with the phase that gives each. Other texts are cel-spec's prose.
struct CelGoText {
  const char* text;
  bool checker;  // given by the checker, not at evaluation
};
constexpr CelGoText kCelGoTexts[] = {
    {"division by zero", false},
    {"modulus by zero", false},
    {"no such key", false},
    {"no such overload", false},
    {"Failed with repeated key", false},
    {"range error", false},
    {"index out of range", false},
    {"found no matching overload", true},
    {"undeclared reference", true},
};

class CelConformanceTest : public testing::TestWithParam<std::string> {};

TEST_P(CelConformanceTest, Case) {
  const Json& tc = CaseNamed(GetParam());
  ASSERT_TRUE(tc.is_object()) << GetParam();
  if (tc.contains("skip")) GTEST_SKIP() << tc["skip"].get<std::string>();
  const std::string expression = tc["expr"].get<std::string>();
  const Outcome outcome = Execute(expression);
  SCOPED_TRACE(expression);

  // Kubernetes' environment refuses some of what cel-spec's checks: list and map literals whose
  // items differ in type (the HomogeneousAggregateLiterals validator), and reverse() of a string
  // (Kubernetes has version 2 of the strings extension; reverse() came in version 3). An error
  // case cel-spec runs unchecked may be refused by the checker in any words (cel-go 0.26 says
  // "expected type 'bool' but found 'string'" of an operand of &&), as below.
  const bool unchecked_error = tc.contains("error") && tc.value("disable_check", false);
  if (outcome.phase == Outcome::Phase::kCheck && !unchecked_error &&
      (absl::StrContains(outcome.error, "expected type '") ||
       absl::StrContains(outcome.error, "'reverse' applied to 'string.()'"))) {
    GTEST_SKIP() << "outside Kubernetes' CEL environment: " << outcome.error;
  }

  if (tc.contains("value")) {
    // cel-spec evaluates some cases unchecked (disable_check); checked, as devmgr and Kubernetes
    // check every expression, those whose operands differ in type (1.0 == 1) are refused.
    if (tc.value("disable_check", false) && outcome.phase == Outcome::Phase::kCheck) {
      EXPECT_TRUE(absl::StrContains(outcome.error, "found no matching overload")) << outcome.error;
      return;
    }
    ASSERT_EQ(outcome.phase, Outcome::Phase::kValue) << outcome.error;
    EXPECT_TRUE(Matches(tc["value"], outcome.value))
        << "got " << Print(outcome.value) << ", want " << tc["value"].dump();
    return;
  }

  ASSERT_TRUE(tc.contains("error")) << tc.dump();
  ASSERT_NE(outcome.phase, Outcome::Phase::kValue)
      << "got " << Print(outcome.value) << ", want an error: " << tc["error"].dump();
  // cel-spec's error is an evaluation's. Where cel-spec checks the expression first, a checker
  // accepts it, and devmgr's must too; one it runs unchecked (disable_check) may be refused by
  // devmgr's checker instead, which is what a checked CEL does with it.
  // An error cel-spec gives in a checker's words is the checker's.
  const bool checked = !tc.value("disable_check", false);
  const bool checker_text = std::any_of(tc["error"].begin(), tc["error"].end(), [](const Json& e) {
    return std::any_of(std::begin(kCelGoTexts), std::end(kCelGoTexts), [&e](const CelGoText& t) {
      return t.checker && absl::StartsWith(e.get<std::string>(), t.text);
    });
  });
  if (checked) {
    EXPECT_EQ(outcome.phase, checker_text ? Outcome::Phase::kCheck : Outcome::Phase::kEvaluation)
        << outcome.error;
  }
  const bool by_checker = outcome.phase == Outcome::Phase::kCheck;
  for (const Json& want : tc["error"]) {
    const std::string text = want.get<std::string>();
    for (const CelGoText& known : kCelGoTexts) {
      if (absl::StartsWith(text, known.text) && known.checker == by_checker) {
        EXPECT_TRUE(absl::StrContains(outcome.error, text))
            << "got error " << outcome.error << ", want " << text;
      }
    }
  }
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
      '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(CelSpec, CelConformanceTest, testing::ValuesIn(CaseNames()), TestName);

// The export is all there: a broken one would otherwise pass with fewer cases.
TEST(CelConformanceCasesTest, TheWholeExportIsThere) {
  ASSERT_TRUE(Cases().is_array()) << "cannot read " << DEVMGR_CEL_CONFORMANCE;
  EXPECT_EQ(Cases().size(), 2456u);
  std::set<std::string> names;
  for (const std::string& name : CaseNames()) {
    EXPECT_TRUE(names.insert(TestName({name, 0})).second) << "two cases named " << name;
  }
  for (const char* name : {"basic/self_eval_zeroish/self_eval_int_zero",
                           "integer_math/int64_math/int64_overflow_positive",
                           "string/size/one_unicode", "macros/exists/list_elem_all_true"}) {
    EXPECT_TRUE(CaseNamed(name).is_object()) << name;
  }
}

}  // namespace
}  // namespace devmgr::cel
