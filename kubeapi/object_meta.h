// ObjectMeta: the parts of an object's metadata that devmgr's controllers and allocator read
// or write (name, generateName, namespace, uid, resourceVersion, ownerReferences), with the rest
// (labels, annotations, timestamps, managedFields, ...) kept as it came in `extra`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

using Json = nlohmann::json;

// metadata.ownerReferences[].
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  Json extra = Json::object();

  bool operator==(const OwnerReference&) const = default;
};

// metadata: the fields controllers set or use as preconditions; labels, annotations,
// timestamps, managedFields and the rest stay in `extra`.
struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  std::vector<OwnerReference> owner_references;
  Json extra = Json::object();

  bool operator==(const ObjectMeta&) const = default;
};

// DecodeObjectMeta reads `metadata`; InvalidArgument naming the field for a wrong type.
absl::StatusOr<ObjectMeta> DecodeObjectMeta(const Json& object);
// EncodeObjectMeta writes it back: the extras, with the modelled fields over them (empty ones
// left out).
Json EncodeObjectMeta(const ObjectMeta& meta);

}  // namespace devmgr::kubeapi
