// Fuzz target for the ResourceSlice codec (kubeapi/resource_slice.h), which reads what an API
// server, a driver or `devmgr slices` hands over: any bytes either fail to parse as JSON, are
// refused with InvalidArgument, or decode into a slice whose encoding decodes back to the same
// value and encodes to the same JSON (nothing is lost or invented on the way).
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "kubeapi/resource_slice.h"
#include "tests/fuzz/invariant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using devmgr::fuzz::Invariant;
  using devmgr::kubeapi::Json;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  const absl::StatusOr<devmgr::kubeapi::ResourceSlice> slice =
      devmgr::kubeapi::DecodeResourceSlice(json);
  if (!slice.ok()) {
    Invariant(slice.status().code() == absl::StatusCode::kInvalidArgument,
              "a malformed slice is InvalidArgument");
    return 0;
  }
  const Json encoded = devmgr::kubeapi::EncodeResourceSlice(*slice);
  const absl::StatusOr<devmgr::kubeapi::ResourceSlice> again =
      devmgr::kubeapi::DecodeResourceSlice(encoded);
  Invariant(again.ok(), "an encoded slice decodes");
  Invariant(*again == *slice, "an encoded slice decodes to the same value");
  Invariant(devmgr::kubeapi::EncodeResourceSlice(*again) == encoded,
            "encoding is a fixpoint after one round");
  return 0;
}
