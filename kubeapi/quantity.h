// Quantity: a Kubernetes resource quantity (resource.Quantity: "40Gi", "100m", "1.5", "2e3"),
// read from its text form and kept exactly, as a count of nano-units, the finest precision the
// API keeps: a value with more digits is rounded up there, as ParseQuantity rounds it. DRA
// device capacities are quantities, and CEL selectors compare and add them.
//
// The range is what 125 bits of nano-units hold (about 4e28); Kubernetes allows larger values,
// which are refused here with a clear error rather than approximated.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::kubeapi {

// 128-bit arithmetic, a GCC and Clang extension (pedantic builds would warn without the marker).
__extension__ using Int128 = __int128;

class Quantity {
 public:
  Quantity() = default;

  // Parse reads the text form: an optional sign, digits with at most one decimal point, then
  // nothing, a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m k M G T P E) or a
  // decimal exponent (e3, E-2). InvalidArgument saying why for anything else.
  static absl::StatusOr<Quantity> Parse(absl::string_view text);
  // FromInt64: a whole number.
  static Quantity FromInt64(int64_t value);

  // -1, 0 or 1 as this is less than, equal to or greater than `other`.
  int Compare(const Quantity& other) const;
  bool operator==(const Quantity& other) const { return nanos_ == other.nanos_; }

  // Add and Sub: OutOfRange when the result leaves the range.
  absl::StatusOr<Quantity> Add(const Quantity& other) const;
  absl::StatusOr<Quantity> Sub(const Quantity& other) const;

  // -1, 0 or 1.
  int Sign() const;
  // IsWhole: a whole number, of any size.
  bool IsWhole() const;
  // IsInteger: a whole number that fits in 64 signed bits (what AsInteger returns).
  bool IsInteger() const;
  // AsInteger: the value, when IsInteger; OutOfRange otherwise.
  absl::StatusOr<int64_t> AsInteger() const;
  double AsApproximateFloat() const;
  // CeilInt64: resource.Quantity's Value(): rounded up to a whole number, held to int64's range.
  int64_t CeilInt64() const;
  // The value in the plainest decimal form ("1073741824", "0.1", "-3").
  std::string ToString() const;

 private:
  explicit Quantity(Int128 nanos) : nanos_(nanos) {}
  Int128 nanos_ = 0;
};

}  // namespace devmgr::kubeapi
