// Quantity: a Kubernetes resource quantity (resource.Quantity: "40Gi", "100m", "1.5", "2e3"),
// read from its text form and kept exactly, as a count of nano-units, the finest precision the
// API keeps: a value with more digits is rounded up there, as ParseQuantity rounds it. It
// remembers the kind of suffix it was written with, and is written back in that kind, in
// resource.Quantity's canonical form ("1.5Gi" as "1536Mi", "1.5" as "1500m"). DRA device
// capacities are quantities, and CEL selectors compare and add them.
//
// The range is what 125 bits of nano-units hold (about 4e28); Kubernetes allows larger values,
// which are refused here with a clear error rather than approximated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::kubeapi {

// 128-bit arithmetic, a GCC and Clang extension (pedantic builds would warn without the marker).
__extension__ using Int128 = __int128;

class Quantity {
 public:
  // Format: resource.Quantity's Format, the kind of suffix ToString writes.
  enum class Format : uint8_t {
    kDecimalExponent,  // 12e6
    kBinarySI,         // 12Mi
    kDecimalSI,        // 12M
  };

  Quantity() = default;

  // Parse reads the text form: an optional sign, digits with at most one decimal point, then
  // nothing, a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m k M G T P E) or a
  // decimal exponent (e3, E-2). InvalidArgument saying why for anything else. The format is
  // the suffix's kind (none is decimal SI); a binary one of a value between 0 and 1 is decimal
  // SI ("0.000000000001Ki" is 2n), as ParseQuantity makes it; a binary one past int64's largest
  // is that largest ("10Ei" is 9223372036854775807), as ParseQuantity caps it.
  static absl::StatusOr<Quantity> Parse(absl::string_view text);
  // FromInt64: a whole number (resource.NewQuantity).
  static Quantity FromInt64(int64_t value, Format format = Format::kDecimalSI);
  // FromMilli: `milli` thousandths (resource.NewMilliQuantity).
  static Quantity FromMilli(int64_t milli, Format format = Format::kDecimalSI);

  Format format() const { return format_; }

  // -1, 0 or 1 as this is less than, equal to or greater than `other`.
  int Compare(const Quantity& other) const;
  bool operator==(const Quantity& other) const { return nanos_ == other.nanos_; }

  // Add and Sub: OutOfRange when the result leaves the range. The result keeps this one's
  // format, or takes `other`'s when this one is zero, as resource.Quantity's Add and Sub do.
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
  // AsInt64: resource.Quantity's AsInt64, which CEL's isInteger() and asInteger() use. It
  // depends on how the quantity was written and computed, not on its value alone: upstream
  // keeps a quantity as a 64-bit mantissa with a decimal scale (or, past what that holds, as
  // an arbitrary-precision decimal), and only a mantissa at a scale of 0 or more converts. So
  // "2", "2k" and "1Gi" convert, "2.0", "2000m" and "1.5Gi" do not, nor does a sum that
  // carries a fraction's scale ("1.5" + "0.5").
  std::optional<int64_t> AsInt64() const;
  double AsApproximateFloat() const;
  // ExactMilli: the value in thousandths, when it is a whole number of them within int64's
  // range (resource.Quantity's MilliValue where that loses nothing); nullopt otherwise.
  std::optional<int64_t> ExactMilli() const;
  // CeilInt64: resource.Quantity's Value(): rounded up to a whole number, held to int64's range.
  int64_t CeilInt64() const;
  // ToString: resource.Quantity's String(), the canonical form in the quantity's format: the
  // largest suffix that keeps the number whole. Binary SI ("2Gi", "1536Mi") for a whole number
  // of at least 1024 either way, else decimal SI ("1023", "100m", "1500m", "2k", past the E
  // suffix "1e21"); decimal exponent "2e3", "80e-3", "1500". Zero is "0". Upstream has no
  // binary suffix past Ei and drops it there; here such a value (a sum: parsing caps one
  // below 8Ei) stays in Ei ("1024Ei").
  // Not kept: upstream's String() gives back the text a quantity was parsed from when that
  // parse took its fast path in a form it deems canonical, sign and leading zeros included
  // ("+1", "01k", "1.500"); here the text is always rebuilt ("1", "1k", "1500m").
  std::string ToString() const;

 private:
  // The scale of a value kept as an arbitrary-precision decimal upstream (inf.Dec).
  static constexpr int kDecimalForm = -128;

  Quantity(Int128 nanos, int scale, Format format)
      : nanos_(nanos), scale_(static_cast<int8_t>(scale)), format_(format) {}
  // The mantissa upstream keeps (the value over 10^scale_); nullopt in the decimal form.
  std::optional<int64_t> Mantissa() const;
  // ScaleOfSum: the scale upstream's int64Amount.Add leaves for this plus `sign` * other.
  int ScaleOfSum(const Quantity& other, int sign) const;
  // FormatOfSum: the format of this plus or minus `other`.
  Format FormatOfSum(const Quantity& other) const { return nanos_ == 0 ? other.format_ : format_; }

  Int128 nanos_ = 0;
  // Upstream's decimal scale of the mantissa (-9 to 100), or kDecimalForm.
  int8_t scale_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace devmgr::kubeapi
