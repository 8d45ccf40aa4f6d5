// StringMember: a string member of a JSON object read without trusting its type, for answers
// and files that may hold anything where a string is expected (nlohmann's value() throws when
// the member exists with another type).
#pragma once

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

}  // namespace devmgr::kubeapi
