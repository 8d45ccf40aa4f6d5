// Program: a DRA device selector (a CEL expression over the variable `device`), compiled once
// and evaluated for each device, as k8s.io/dynamic-resource-allocation/cel's
// CompileCELExpression and DeviceMatches. devmgr's own evaluator (no C++ CEL library is
// available here): the subset DRA selectors use (parser.h, checker.h, functions.h), refused
// at compile time outside it, never evaluated approximately.
//
// Thread-safety: a Program is immutable; Matches may be called from any thread at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cel/ast.h"
#include "cel/checker.h"
#include "cel/cost_estimate.h"
#include "cel/functions.h"
#include "cel/value.h"
#include "kubeapi/quantity.h"

namespace devmgr::cel {

// Kubernetes' limit on one evaluation's cost (CELSelectorExpressionMaxCost).
inline constexpr uint64_t kDefaultCostLimit = 1'000'000;

// Device: what a selector sees of a device (upstream's cel.Device).
struct Device {
  // The domain of attribute and capacity names that have none, and device.driver.
  std::string driver;
  std::optional<bool> allow_multiple_allocations;
  // By qualified name ("model" or "gpu.example.com/model"): an int, bool, string or Semver, or
  // a list of one of those (list-type attributes).
  std::map<std::string, Value> attributes;
  std::map<std::string, kubeapi::Quantity> capacity;
};

struct CompileOptions {
  CheckOptions check;
  uint64_t cost_limit = kDefaultCostLimit;
};

class Program {
 public:
  // Compile: InvalidArgument "compilation failed: ..." for text that is not an expression of
  // the subset or does not evaluate to bool (see checker.h for the texts), or "program
  // instantiation failed: ..." for a pattern written out in find(), findAll() or matches(x, p)
  // that is not a regular expression (upstream compiles those when it builds the program).
  static absl::StatusOr<std::shared_ptr<const Program>> Compile(std::string expression,
                                                                CompileOptions options = {});

  // Matches: whether the device is selected. An evaluation error (a missing attribute:
  // "no such key: x"; a type mismatch; a result that is not a bool: "CEL result of type T could
  // not be converted to bool"; the cost limit: "... actual cost limit exceeded") is
  // InvalidArgument with that text, as upstream's error. `cost`, when given, receives the cost
  // the evaluation used.
  // An evaluation interrupted (`interruption`'s deadline passed or its flag set) ends with
  // DeadlineExceeded or Cancelled, "operation interrupted: ...".
  absl::StatusOr<bool> Matches(const Device& device, uint64_t* cost = nullptr,
                               Interruption interruption = {}) const;
  // The same for a device whose value (DeviceValue) was built once for many selectors.
  absl::StatusOr<bool> MatchesValue(const Value& device, uint64_t* cost = nullptr,
                                    Interruption interruption = {}) const;

  const std::string& expression() const { return expression_; }
  // The least and the greatest cost of an evaluation, estimated when compiled as cel-go's
  // checker estimates it (cost_estimate.h; upstream's CompilationResult.MaxCost is the greatest).
  CostRange estimated_cost() const { return estimated_cost_; }

 private:
  Program(std::string expression, ExprPtr root, CompileOptions options)
      : expression_(std::move(expression)),
        root_(std::move(root)),
        options_(options),
        estimated_cost_(EstimateCost(*root_)) {}

  const std::string expression_;
  const ExprPtr root_;
  const CompileOptions options_;
  const CostRange estimated_cost_;
  mutable RegexCache regexes_;
};

// SelectorMaxCost: the greatest estimated cost of `expression` compiled as `check` says, by
// default with everything of the environment (the API server's environment for stored
// selectors; new_expressions for those of an object it creates), or Compile's error when it does
// not compile there (kubeapi::SelectorCost, for the API server's refusal of a selector that does
// not compile or is too complex).
absl::StatusOr<uint64_t> SelectorMaxCost(const std::string& expression,
                                         const CheckOptions& check = {});

// DeviceValue: the value of the variable `device`.
Value DeviceValue(const Device& device);

// WithRuntimeHint: a runtime error's message, with upstream's advice appended when it is a
// "no such key" error (a selector reading an attribute or capacity a device does not have), as
// the allocator reports it (upstream's EnhanceRuntimeError).
std::string WithRuntimeHint(absl::string_view message);

}  // namespace devmgr::cel
