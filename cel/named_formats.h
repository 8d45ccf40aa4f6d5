// Kubernetes' named formats (k8s.io/apiserver's CEL format library): `format.dns1123Label()`,
// `format.named("uuid")` and the other formats of names and strings that the API server checks,
// each with the messages it gives for a value that breaks it, for `<format>.validate(s)`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::cel {

struct NamedFormat {
  // The name format.named() takes ("dns1123Label"), and the function that gives the format
  // ("format.dns1123Label").
  const char* name;
  const char* function;
  // The length of the regular expression upstream estimates the check's cost by.
  size_t regex_size;
  // Validate: the messages for `value`, empty when it has the format.
  std::vector<std::string> (*validate)(absl::string_view value);
};

// The number of named formats; NamedFormatAt(i) for i below it gives each once.
inline constexpr size_t kNamedFormatCount = 13;
const NamedFormat& NamedFormatAt(size_t index);

// FindNamedFormat: the format format.named(name) gives, or null for a name that is none.
const NamedFormat* FindNamedFormat(absl::string_view name);

}  // namespace devmgr::cel
