#include "kubeapi/resource_versions.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;

// The fields of a v1 ExactDeviceRequest, which v1beta1 keeps on the request itself.
constexpr const char* kExactFields[] = {"deviceClassName", "selectors",   "allocationMode", "count",
                                        "adminAccess",     "tolerations", "capacity"};

// Each object of the list at obj[key] (when there is one), changed by `change`.
template <typename Change>
void ForEachIn(Json& object, const char* key, Change change) {
  if (!object.is_object()) return;
  auto list = object.find(key);
  if (list == object.end() || !list->is_array()) return;
  for (Json& item : *list) {
    if (item.is_object()) change(item);
  }
}

Json* Spec(Json& object) {
  if (!object.is_object()) return nullptr;
  auto spec = object.find("spec");
  return spec != object.end() && spec->is_object() ? &*spec : nullptr;
}

}  // namespace

std::string_view VersionName(ResourceVersion version) {
  switch (version) {
    case ResourceVersion::kV1beta2:
      return "v1beta2";
    case ResourceVersion::kV1beta1:
      return "v1beta1";
    case ResourceVersion::kV1:
      break;
  }
  return "v1";
}

std::string GroupVersion(ResourceVersion version) {
  return absl::StrCat("resource.k8s.io/", std::string(VersionName(version)));
}

ResourceVersion VersionOf(const Json& object) {
  auto it = object.find("apiVersion");
  if (it == object.end() || !it->is_string()) return ResourceVersion::kV1;
  for (int i = 0; i < kResourceVersionCount; ++i) {
    const auto version = static_cast<ResourceVersion>(i);
    if (it->get<std::string>() == GroupVersion(version)) return version;
  }
  return ResourceVersion::kV1;
}

Json ResourceSliceToV1(Json slice, ResourceVersion version) {
  if (!slice.is_object()) return slice;
  if (version == ResourceVersion::kV1beta1) {
    if (Json* spec = Spec(slice); spec != nullptr) {
      ForEachIn(*spec, "devices", [](Json& device) {
        // A `basic` that is not an object stays as it came (kept among the device's fields
        // nothing models, not dropped); `null` is none.
        auto basic = device.find("basic");
        if (basic == device.end() || !(basic->is_object() || basic->is_null())) return;
        Json fields = std::move(*basic);
        device.erase(basic);
        if (fields.is_null()) return;
        for (auto& [key, value] : fields.items()) device[key] = std::move(value);
      });
    }
  }
  slice["apiVersion"] = GroupVersion(ResourceVersion::kV1);
  return slice;
}

Json ResourceSliceFromV1(Json slice, ResourceVersion version) {
  if (!slice.is_object()) return slice;
  if (version == ResourceVersion::kV1beta1) {
    if (Json* spec = Spec(slice); spec != nullptr) {
      ForEachIn(*spec, "devices", [](Json& device) {
        Json basic = Json::object();
        for (auto it = device.begin(); it != device.end();) {
          if (it.key() == "name") {
            ++it;
            continue;
          }
          basic[it.key()] = std::move(it.value());
          it = device.erase(it);
        }
        device["basic"] = std::move(basic);
      });
    }
  }
  slice["apiVersion"] = GroupVersion(version);
  return slice;
}

Json ResourceClaimToV1(Json claim, ResourceVersion version) {
  if (!claim.is_object()) return claim;
  if (version == ResourceVersion::kV1beta1) {
    if (Json* spec = Spec(claim); spec != nullptr) {
      auto devices = spec->find("devices");
      if (devices != spec->end() && devices->is_object()) {
        ForEachIn(*devices, "requests", [](Json& request) {
          // A request with subrequests (firstAvailable) has no exact part.
          auto first_available = request.find("firstAvailable");
          if (first_available != request.end() && first_available->is_array() &&
              !first_available->empty()) {
            return;
          }
          Json exactly = Json::object();
          for (const char* field : kExactFields) {
            auto it = request.find(field);
            if (it == request.end()) continue;
            exactly[field] = std::move(*it);
            request.erase(it);
          }
          if (!exactly.empty()) request["exactly"] = std::move(exactly);
        });
      }
    }
  }
  claim["apiVersion"] = GroupVersion(ResourceVersion::kV1);
  return claim;
}

}  // namespace devmgr::kubeapi
