// The DRA node API's versions carry the same messages (proto/dra/v1 and v1beta1 differ only in
// their package, as dra-health's v1 and v1alpha1 do): ConvertVersion moves a message of one into
// its twin of the other through its bytes; within one version it is a plain copy. For the driver
// client, the driver helper and test drivers that serve both.
#pragma once

#include <type_traits>

namespace devmgr::dra {

template <typename To, typename From>
To ConvertVersion(const From& from) {
  if constexpr (std::is_same_v<To, From>) {
    return from;
  } else {
    To to;
    to.ParseFromString(from.SerializeAsString());
    return to;
  }
}

}  // namespace devmgr::dra
