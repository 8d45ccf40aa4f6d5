// The API server's field errors (k8s.io/apimachinery's field.Error) gathered while an object is
// checked, and their aggregate as Go prints it: what devmgr reports for an object that reaches it
// without an API server (a manifest, a slice a driver publishes, a name a plugin registers with),
// in the texts a user compares with a cluster's.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// The errors in the order found, each "<path>: <what>".
class FieldErrors {
 public:
  // `value` as Go prints it in the error: a string quoted (GoQuote), a number as it is.
  void Invalid(absl::string_view path, absl::string_view value, absl::string_view detail);
  void InvalidString(absl::string_view path, absl::string_view value, absl::string_view detail);
  void Required(absl::string_view path, absl::string_view detail = "");
  void Forbidden(absl::string_view path, absl::string_view detail);
  void Duplicate(absl::string_view path, absl::string_view value);
  void TooMany(absl::string_view path, size_t actual, size_t max);
  void TooLong(absl::string_view path, size_t max);
  void NotSupported(absl::string_view path, absl::string_view value,
                    std::initializer_list<absl::string_view> supported);
  // One Invalid per message of a name format (common/k8s_names.h).
  void EachInvalid(absl::string_view path, absl::string_view value,
                   const std::vector<std::string>& messages);

  bool empty() const { return errors_.empty(); }
  // Go's aggregate of the errors: OK without any; InvalidArgument with the one error, or all
  // between brackets, repeats left out.
  absl::Status Result() const;

 private:
  void Add(absl::string_view path, absl::string_view body);

  std::vector<std::string> errors_;
};

// CheckDriverName: core validation's ValidateCSIDriverName, which DRA driver names follow (a
// DNS-1123 subdomain once lower-cased, at most 63 bytes).
void CheckDriverName(FieldErrors& errors, absl::string_view name, const std::string& path);

}  // namespace devmgr
