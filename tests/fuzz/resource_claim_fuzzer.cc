// Fuzz target for the ResourceClaim and DeviceClass decoders (kubeapi/resource_claim.h), which
// read what users write in pod manifests, class files and `devmgr dra allocate`'s inputs: any
// JSON is refused with InvalidArgument or decoded; a decoded claim, encoded, decodes to the same
// value and encodes to the same JSON (nothing lost or invented on the way).
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "kubeapi/resource_claim.h"
#include "tests/fuzz/invariant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using devmgr::fuzz::Invariant;
  using devmgr::kubeapi::Json;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;

  const absl::StatusOr<devmgr::kubeapi::DeviceClass> device_class =
      devmgr::kubeapi::DecodeDeviceClass(json);
  Invariant(device_class.ok() || device_class.status().code() == absl::StatusCode::kInvalidArgument,
            "a malformed class is InvalidArgument");

  const absl::StatusOr<devmgr::kubeapi::ResourceClaim> claim =
      devmgr::kubeapi::DecodeResourceClaim(json);
  if (!claim.ok()) {
    Invariant(claim.status().code() == absl::StatusCode::kInvalidArgument,
              "a malformed claim is InvalidArgument");
    return 0;
  }
  const Json encoded = devmgr::kubeapi::EncodeResourceClaim(*claim);
  const absl::StatusOr<devmgr::kubeapi::ResourceClaim> again =
      devmgr::kubeapi::DecodeResourceClaim(encoded);
  Invariant(again.ok(), "an encoded claim decodes");
  Invariant(*again == *claim, "an encoded claim decodes to the same value");
  Invariant(devmgr::kubeapi::EncodeResourceClaim(*again) == encoded,
            "encoding is a fixpoint after one round");
  return 0;
}
