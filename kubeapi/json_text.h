// JsonText: a JSON value as text that never throws for a string that is not UTF-8. A driver or
// plugin may pass one in (a pool name, an attribute read from sysfs), and nlohmann's dump()
// throws on it; Go's encoder, which the API server and the kubelet's peers read, writes U+FFFD
// for the bad bytes instead.
#pragma once

#include <string>

namespace devmgr::kubeapi {

// JsonText writes `value` (nlohmann::json or nlohmann::ordered_json) as dump(indent) does (-1:
// one line), with U+FFFD for what is not UTF-8: one for each bad sequence, where Go writes one
// for each bad byte of a truncated sequence.
template <typename BasicJson>
std::string JsonText(const BasicJson& value, int indent = -1) {
  return value.dump(indent, ' ', false, BasicJson::error_handler_t::replace);
}

}  // namespace devmgr::kubeapi
