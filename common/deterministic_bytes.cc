#include "common/deterministic_bytes.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

namespace devmgr {

std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes(message.ByteSizeLong(), '\0');
  {
    google::protobuf::io::ArrayOutputStream stream(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    // The sizes ByteSizeLong just computed.
    message.SerializeWithCachedSizes(&coded);
  }
  return bytes;
}

}  // namespace devmgr
