// JSON values read without trusting their types, for answers and files that may hold anything:
// StringMember, a string member of an object (nlohmann's value() throws when the member exists
// with another type), and IsInt64, an integer Go reads into an int64.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

// The string at `key` in `object`; empty when `object` is not an object, lacks `key`, or holds
// something other than a string there.
inline std::string StringMember(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// IsInt64: `value` is an integer within int64's range. nlohmann reads one past int64's largest
// as unsigned, and get<int64_t>() wraps it around (18446744073709551615 to -1); Go's decoder
// refuses it.
inline bool IsInt64(const nlohmann::json& value) {
  return value.is_number_integer() &&
         (!value.is_number_unsigned() ||
          value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

}  // namespace devmgr::kubeapi
