#include "cel/program.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cel/interpreter.h"
#include "cel/parser.h"

namespace devmgr::cel {
namespace {

// The domain and the ID of a qualified name ("domain/id", or an ID of `driver`'s domain).
std::pair<std::string, std::string> Qualify(const std::string& name, const std::string& driver) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return {driver, name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

// ByDomain: the values grouped as domain -> (id -> value), an unknown domain reading as empty.
template <typename Entries, typename ToValue>
Value ByDomain(const Entries& entries, const std::string& driver, ToValue to_value) {
  Map outer;
  outer.default_empty_map = true;
  std::map<std::string, Map> domains;
  for (const auto& [name, value] : entries) {
    auto [domain, id] = Qualify(name, driver);
    domains[domain].entries.emplace_back(Value::String(id), to_value(value));
  }
  for (auto& [domain, inner] : domains) {
    outer.entries.emplace_back(Value::String(domain), Value::MapOf(std::move(inner)));
  }
  return Value::MapOf(std::move(outer));
}

// Precompile: the patterns written out in matches(), find() and findAll() calls, compiled into
// `regexes` before any evaluation, as cel-go's regex optimizations do when the program is built;
// one that is not a regular expression fails the build ("program instantiation failed: ...").
absl::Status Precompile(const Expr& e, RegexCache& regexes) {
  if (e.kind == Expr::Kind::kCall &&
      (e.name == "matches" || e.name == "find" || e.name == "findAll")) {
    // The pattern: x.f(p, ...) or matches(x, p).
    const Expr& pattern = *e.args[e.operand != nullptr ? 0 : 1];
    if (pattern.kind == Expr::Kind::kConst && pattern.constant.kind() == Value::Kind::kString) {
      absl::StatusOr<std::shared_ptr<const re2::RE2>> regex =
          regexes.Get(pattern.constant.string_value());
      if (!regex.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("program instantiation failed: ", regex.status().message()));
      }
    }
  }
  if (e.operand != nullptr) {
    if (absl::Status status = Precompile(*e.operand, regexes); !status.ok()) return status;
  }
  for (const ExprPtr& arg : e.args) {
    if (absl::Status status = Precompile(*arg, regexes); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

Value DeviceValue(const Device& device) {
  Map fields;
  fields.entries.emplace_back(Value::String("driver"), Value::String(device.driver));
  fields.entries.emplace_back(Value::String("allowMultipleAllocations"),
                              Value::Bool(device.allow_multiple_allocations.value_or(false)));
  fields.entries.emplace_back(
      Value::String("attributes"),
      ByDomain(device.attributes, device.driver, [](const Value& value) { return value; }));
  fields.entries.emplace_back(
      Value::String("capacity"),
      ByDomain(device.capacity, device.driver,
               [](const kubeapi::Quantity& quantity) { return Value::QuantityOf(quantity); }));
  return Value::MapOf(std::move(fields));
}

absl::StatusOr<std::shared_ptr<const Program>> Program::Compile(std::string expression,
                                                                CompileOptions options) {
  absl::StatusOr<ExprPtr> root = Parse(expression);
  if (!root.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compilation failed: ", root.status().message()));
  }
  if (absl::Status checked = Check(**root, expression, options.check); !checked.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("compilation failed: ", checked.message()));
  }
  auto program =
      std::shared_ptr<Program>(new Program(std::move(expression), *std::move(root), options));
  if (absl::Status built = Precompile(*program->root_, program->regexes_); !built.ok()) {
    return built;
  }
  return program;
}

absl::StatusOr<bool> Program::Matches(const Device& device, uint64_t* cost,
                                      Interruption interruption) const {
  return MatchesValue(DeviceValue(device), cost, interruption);
}

absl::StatusOr<bool> Program::MatchesValue(const Value& device, uint64_t* cost,
                                           Interruption interruption) const {
  EvalContext context(options_.cost_limit, interruption, regexes_);
  const Value result = Evaluate(*root_, device, context);
  if (cost != nullptr) *cost = context.cost();
  switch (context.stop()) {
    case EvalContext::Stop::kDeadline:
      return absl::DeadlineExceededError(context.StopReason());
    case EvalContext::Stop::kCancelled:
      return absl::CancelledError(context.StopReason());
    default:
      break;
  }
  if (result.is_error()) return absl::InvalidArgumentError(result.error());
  if (result.kind() != Value::Kind::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("CEL result of type ", result.TypeName(), " could not be converted to bool"));
  }
  return result.bool_value();
}

absl::StatusOr<uint64_t> SelectorMaxCost(const std::string& expression, const CheckOptions& check) {
  CompileOptions options;
  options.check = check;
  absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(expression, options);
  if (!program.ok()) return program.status();
  return (*program)->estimated_cost().max;
}

std::string WithRuntimeHint(absl::string_view message) {
  if (!absl::StrContains(message, "no such key:")) return std::string(message);
  return absl::StrCat(message,
                      ". consider using CEL optional chaining (.? followed by orValue()) or "
                      "guarding the check with has() for optional fields");
}

}  // namespace devmgr::cel
