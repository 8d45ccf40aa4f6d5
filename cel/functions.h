// The functions of the CEL subset, one table for the checker (which overloads exist, with
// which types) and the interpreter (what each does): CEL's operators and standard functions,
// the string extensions Kubernetes enables (version 2), the lists extension (version 3; its
// sortBy macro is the interpreter's), the sets extension, Kubernetes' lists, regex, Semver,
// Quantity, IP, CIDR, URL and format libraries, optional values, type(), and DRA's includes(). A
// function that is not here is not in the subset, and an expression calling it is refused when
// it is compiled.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cel/types.h"
#include "cel/value.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace devmgr::cel {

// CompileRegex: `pattern` compiled, or InvalidArgument with Go's regexp error for it ("error
// parsing regexp: missing closing ]: `[`"): cel-go and Kubernetes compile patterns with Go's
// regexp package, whose syntax RE2's is.
absl::StatusOr<std::shared_ptr<const re2::RE2>> CompileRegex(const std::string& pattern);

// RegexCache: the regular expressions a program's evaluations compiled, kept for the next
// ones (a selector is evaluated once per device). Thread-safe.
class RegexCache {
 public:
  // Get: the compiled RE2 for `pattern`, or the error that it is not one.
  absl::StatusOr<std::shared_ptr<const re2::RE2>> Get(const std::string& pattern)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const re2::RE2>> compiled_ ABSL_GUARDED_BY(mu_);
};

// When an evaluation must stop early: a deadline, or a flag another thread sets.
struct Interruption {
  absl::Time deadline = absl::InfiniteFuture();
  const std::atomic<bool>* cancelled = nullptr;
};

// What one evaluation may use and must account for: its cost (cel-go's runtime cost, roughly:
// one a step, more for work on strings and lists), an interruption (looked at every 100 steps,
// as cel-go's interrupt check frequency) and the program's regular expressions.
class EvalContext {
 public:
  EvalContext(uint64_t cost_limit, Interruption interruption, RegexCache& regexes)
      : cost_limit_(cost_limit), interruption_(interruption), regexes_(regexes) {}

  // AddCost counts `cost` more; false once the limit is passed or the evaluation interrupted.
  // A step that passes the limit counts up to one past it, no further: what a call estimates
  // before its work (lists.range(n) pays n first) can be far beyond any limit, and must neither
  // stand as the evaluation's cost nor wrap the count around.
  bool AddCost(uint64_t cost) {
    cost_ += std::min(cost, cost_limit_ - std::min(cost_, cost_limit_) + 1);
    // Large work (a long string or list) is looked at before it is done, not a hundred steps on.
    if (++steps_ % 100 == 0 || cost >= kLargeCost) CheckInterruption();
    return !stopped();
  }
  uint64_t cost() const { return cost_; }

  // Why an evaluation stopped early.
  enum class Stop { kNone, kCostLimit, kDeadline, kCancelled };
  Stop stop() const {
    if (interrupted_ != Stop::kNone) return interrupted_;
    return cost_ > cost_limit_ ? Stop::kCostLimit : Stop::kNone;
  }
  bool stopped() const { return stop() != Stop::kNone; }
  // cel-go's text for stop().
  std::string StopReason() const;
  RegexCache& regexes() { return regexes_; }

 private:
  void CheckInterruption();

  static constexpr uint64_t kLargeCost = 1000;
  const uint64_t cost_limit_;
  const Interruption interruption_;
  uint64_t cost_ = 0;
  uint64_t steps_ = 0;
  Stop interrupted_ = Stop::kNone;
  RegexCache& regexes_;
};

// The most values a list attribute has (ResourceSliceMaxAttributeValuesPerDevice): what
// includes() looks at.
inline constexpr size_t kMaxAttributeValues = 48;

// Features of the environment that the DRA feature gates add.
enum class Feature { kNone, kListTypeAttributes };

using FunctionImpl = Value (*)(const std::vector<Value>& args, EvalContext& context);

struct Overload {
  // The function: "contains", "_+_", "quantity", "optional.of".
  const char* name;
  // Receiver style (x.f(y)): params[0] is the receiver.
  bool member;
  std::vector<Type> params;
  Type result;
  FunctionImpl impl;
  Feature feature = Feature::kNone;
};

// SortByKeys: `list` ordered by `keys`, the key at each index its item's (cel-go's
// @sortByAssociatedKeys, which sort() and the sortBy macro call): keys of one type with an order,
// equal keys keeping their items' order.
Value SortByKeys(const Value& list, const Value& keys, EvalContext& context);

// Every overload, in resolution order.
const std::vector<Overload>& Overloads();

// Fits: a value of this kind may be passed as `param` (dyn takes every value).
bool Fits(const Type& param, const Value& value);

// GoTypeName: the name cel-go's errors give a value's type ("types.Int", "cel.Semver").
std::string GoTypeName(const Value& value);

}  // namespace devmgr::cel
