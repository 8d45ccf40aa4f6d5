// MetadataWriter: device metadata (KEP-5304, alpha), what the helper writes for a driver that
// asks for it (HelperOptions::device_metadata; upstream's kubeletplugin.EnableDeviceMetadata):
// for each request of a prepared claim, a file that tells the containers which devices they got
// and what the driver knows about them, and a CDI spec that bind-mounts it read-only into every
// container the request's devices go to.
//
// The file is DRA_DATA/dra-device-metadata/<namespace>_<claim>/<request>/metadata.json on the
// host (DRA_DATA: the driver's plugin data folder): a JSON stream holding one DeviceMetadata
// object per API version asked for, in that order, which a consumer reads until it meets a
// version it knows. In the container it is
// /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/<driver>-metadata.json,
// or .../resourceclaimtemplates/<pod claim name>/<request>/<driver>-metadata.json for a claim
// made from a template (its generated name unknown when the pod spec is written). The CDI spec is
// CDI_DIR/<driver>_metadata_<claim UID>_<request>.json, kind <driver>/metadata, device
// <claim UID>_<request>. A subrequest ("gpu/large") is filed under its request ("gpu") and named
// in full inside the file.
//
// Names from a claim (namespace, name, UID, request) are used as file names only when they are
// one: no '/', not "." or "..", not empty; anything else is refused, so that nothing is
// written or removed outside the two folders. Not thread-safe for one claim: the helper's calls
// for a claim do not overlap.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/claim.h"
#include "kubeletplugin/device.h"

namespace devmgr::kubeletplugin {

// The metadata API's versions this writer can encode.
inline constexpr char kMetadataV1alpha1[] = "metadata.resource.k8s.io/v1alpha1";
// Where a CDI-enabled container runtime looks for specs by default.
inline constexpr char kDefaultCdiDir[] = "/var/run/cdi";
// The container folder the metadata files are mounted under.
inline constexpr char kMetadataContainerDir[] = "/var/run/kubernetes.io/dra-device-attributes";

class MetadataWriter {
 public:
  // Create: the writer of `driver_name`'s files. `versions` ("metadata.resource.k8s.io/v1alpha1")
  // are encoded in the order given; ones this writer does not know are skipped, and none known
  // is InvalidArgument ("none of the requested metadata API versions [...] are supported").
  static absl::StatusOr<MetadataWriter> Create(std::string driver_name,
                                               std::filesystem::path plugin_data_dir,
                                               std::filesystem::path cdi_dir,
                                               const std::vector<std::string>& versions);

  // ProcessPreparedClaim writes the metadata file and the CDI spec of each request `devices`
  // serve (generation 1), and answers, by request name (subrequests folded into theirs), the
  // CDI device ID that mounts it.
  absl::StatusOr<std::map<std::string, std::string>> ProcessPreparedClaim(
      const dra::ResourceClaim& claim, const std::vector<Device>& devices) const;

  // CleanupClaim removes the claim's metadata files and CDI specs; nothing there is not an
  // error.
  absl::Status CleanupClaim(const std::string& namespace_name, const std::string& name,
                            const std::string& uid) const;

  // UpdateRequestMetadata rewrites the metadata file of a prepared claim's request (a
  // subrequest names its request's file) with `devices`, one generation later, in place, so
  // that containers that have it mounted already read the new content. NotFound when the
  // request has no file ("request ... not found in prepared claim ...").
  absl::Status UpdateRequestMetadata(const std::string& namespace_name, const std::string& name,
                                     const std::string& uid, const std::string& request,
                                     const std::vector<Device>& devices) const;

  // The host file of a claim's request (its base request name).
  std::filesystem::path MetadataFile(const std::string& namespace_name, const std::string& name,
                                     const std::string& request) const;
  // The CDI spec of a claim's request.
  std::filesystem::path CdiSpecFile(const std::string& uid, const std::string& request) const;

 private:
  MetadataWriter(std::string driver_name, std::filesystem::path plugin_data_dir,
                 std::filesystem::path cdi_dir, std::vector<std::string> versions);
  std::filesystem::path ClaimDir(const std::string& namespace_name, const std::string& name) const;
  // WriteMetadata writes one request's file: `request` as named in the allocation.
  absl::Status WriteMetadata(const std::string& namespace_name, const std::string& name,
                             const std::string& uid,
                             const std::optional<std::string>& pod_claim_name, int64_t generation,
                             const std::string& request, const std::vector<Device>& devices) const;
  absl::StatusOr<std::string> WriteCdiSpec(const dra::ResourceClaim& claim,
                                           const std::string& request) const;

  std::string driver_name_;
  std::filesystem::path plugin_data_dir_;
  std::filesystem::path cdi_dir_;
  std::vector<std::string> versions_;
};

}  // namespace devmgr::kubeletplugin
