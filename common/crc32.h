// CRC-32 with the IEEE polynomial (zlib's crc32, Go's crc32.ChecksumIEEE) of bytes given in
// pieces: start from kCrc32Start and feed every piece in order.
#pragma once

#include <zlib.h>

#include <cstdint>

#include "absl/strings/string_view.h"

namespace devmgr {

inline constexpr uint32_t kCrc32Start = 0;

inline uint32_t Crc32Feed(uint32_t crc, absl::string_view bytes) {
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

}  // namespace devmgr
