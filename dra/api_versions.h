// The DRA node API's versions carry the same messages (proto/dra/v1 and v1beta1 differ only in
// their package): ConvertVersion moves a message of one into its twin of the other through its
// bytes. For the driver client and for test drivers that serve both.
#pragma once

namespace devmgr::dra {

template <typename To, typename From>
To ConvertVersion(const From& from) {
  To to;
  to.ParseFromString(from.SerializeAsString());
  return to;
}

}  // namespace devmgr::dra
