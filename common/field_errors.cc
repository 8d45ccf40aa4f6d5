#include "common/field_errors.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/go_quote.h"
#include "common/k8s_names.h"

namespace devmgr {

void FieldErrors::Invalid(absl::string_view path, absl::string_view value,
                          absl::string_view detail) {
  Add(path, absl::StrCat("Invalid value: ", value, ": ", detail));
}

void FieldErrors::InvalidString(absl::string_view path, absl::string_view value,
                                absl::string_view detail) {
  Invalid(path, GoQuote(value), detail);
}

void FieldErrors::Required(absl::string_view path, absl::string_view detail) {
  Add(path, detail.empty() ? "Required value" : absl::StrCat("Required value: ", detail));
}

void FieldErrors::Forbidden(absl::string_view path, absl::string_view detail) {
  Add(path, absl::StrCat("Forbidden: ", detail));
}

void FieldErrors::Duplicate(absl::string_view path, absl::string_view value) {
  Add(path, absl::StrCat("Duplicate value: ", GoQuote(value)));
}

void FieldErrors::TooMany(absl::string_view path, size_t actual, size_t max) {
  Add(path, absl::StrCat("Too many: ", actual, ": must have at most ", max, " items"));
}

void FieldErrors::TooLong(absl::string_view path, size_t max) {
  Add(path, absl::StrCat("Too long: may not be more than ", max, " bytes"));
}

void FieldErrors::NotSupported(absl::string_view path, absl::string_view value,
                               std::initializer_list<absl::string_view> supported) {
  Add(path, absl::StrCat("Unsupported value: ", GoQuote(value), ": supported values: ",
                         absl::StrJoin(supported, ", ", [](std::string* out, absl::string_view s) {
                           out->append(GoQuote(s));
                         })));
}

void FieldErrors::EachInvalid(absl::string_view path, absl::string_view value,
                              const std::vector<std::string>& messages) {
  for (const std::string& message : messages) InvalidString(path, value, message);
}

absl::Status FieldErrors::Result() const {
  if (errors_.empty()) return absl::OkStatus();
  if (errors_.size() == 1) return absl::InvalidArgumentError(errors_.front());
  std::vector<absl::string_view> unique;
  std::set<absl::string_view> seen;
  for (const std::string& error : errors_) {
    if (seen.insert(error).second) unique.push_back(error);
  }
  if (unique.size() == 1) return absl::InvalidArgumentError(unique.front());
  return absl::InvalidArgumentError(absl::StrCat("[", absl::StrJoin(unique, ", "), "]"));
}

void FieldErrors::Add(absl::string_view path, absl::string_view body) {
  errors_.push_back(absl::StrCat(path, ": ", body));
}

void CheckDriverName(FieldErrors& errors, absl::string_view name, const std::string& path) {
  constexpr size_t kDriverNameMaxLength = 63;
  if (name.empty()) errors.Required(path);
  if (name.size() > kDriverNameMaxLength) errors.TooLong(path, kDriverNameMaxLength);
  errors.EachInvalid(path, name, Dns1123SubdomainErrors(absl::AsciiStrToLower(name)));
}

}  // namespace devmgr
