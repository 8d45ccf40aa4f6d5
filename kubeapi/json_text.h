// JsonText: a JSON value as text, its strings written as Go's encoding/json writes them: a byte
// that is not UTF-8 becomes U+FFFD. nlohmann's dump() throws on such a byte, and a string a
// driver or plugin passes in (a pool name, an attribute read from sysfs) may hold one.
#pragma once

#include <string>

namespace devmgr::kubeapi {

// For nlohmann::json and nlohmann::ordered_json; `indent` as dump()'s (-1: one line).
template <typename BasicJson>
std::string JsonText(const BasicJson& value, int indent = -1) {
  return value.dump(indent, ' ', false, BasicJson::error_handler_t::replace);
}

}  // namespace devmgr::kubeapi
