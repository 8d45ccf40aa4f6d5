// The versions of the resource.k8s.io API group that devmgr speaks, and the conversion of its
// objects between them, at the JSON level: the client reads and writes v1's shape whatever
// version the server serves.
//
// v1beta2 has v1's shape. v1beta1 differs in two places: a ResourceSlice device keeps everything
// but its name under `basic`, and a ResourceClaim request carries the fields v1 puts under
// `exactly` at its own level. Fields neither version knows are carried over as they are.
#pragma once

#include <string_view>

#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

// Most preferred first, the order in which a client tries them (upstream's draclient).
enum class ResourceVersion { kV1 = 0, kV1beta2 = 1, kV1beta1 = 2 };
inline constexpr int kResourceVersionCount = 3;

// "v1", "v1beta2", "v1beta1".
std::string_view VersionName(ResourceVersion version);
// "resource.k8s.io/v1", ...
std::string GroupVersion(ResourceVersion version);

// The version an object names in its apiVersion (v1 when it names none, or another group's).
ResourceVersion VersionOf(const nlohmann::json& object);

// A ResourceSlice object read with `version`, in v1's shape (apiVersion set to v1's).
nlohmann::json ResourceSliceToV1(nlohmann::json slice, ResourceVersion version);
// A ResourceSlice object in v1's shape, as `version` takes it (apiVersion set to it).
nlohmann::json ResourceSliceFromV1(nlohmann::json slice, ResourceVersion version);
// A ResourceClaim object read with `version`, in v1's shape (apiVersion set to v1's).
nlohmann::json ResourceClaimToV1(nlohmann::json claim, ResourceVersion version);

}  // namespace devmgr::kubeapi
