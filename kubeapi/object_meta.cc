#include "kubeapi/object_meta.h"

#include <utility>

#include "kubeapi/json_fields.h"

namespace devmgr::kubeapi {
namespace {

using internal::Fields;
using internal::PutString;

absl::StatusOr<OwnerReference> DecodeOwner(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  OwnerReference owner;
  for (auto [key, target] :
       {std::pair{"apiVersion", &owner.api_version}, std::pair{"kind", &owner.kind},
        std::pair{"name", &owner.name}, std::pair{"uid", &owner.uid}}) {
    absl::StatusOr<std::string> value = fields.String(key);
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  absl::StatusOr<std::optional<bool>> controller = fields.OptionalBool("controller");
  if (!controller.ok()) return controller.status();
  owner.controller = *controller;
  owner.extra = std::move(fields).Rest();
  return owner;
}

Json EncodeOwner(const OwnerReference& owner) {
  Json out = owner.extra;
  out["apiVersion"] = owner.api_version;
  out["kind"] = owner.kind;
  out["name"] = owner.name;
  out["uid"] = owner.uid;
  if (owner.controller.has_value()) out["controller"] = *owner.controller;
  return out;
}

}  // namespace

absl::StatusOr<ObjectMeta> DecodeObjectMeta(const Json& object) {
  Fields fields(object, "metadata");
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  ObjectMeta meta;
  for (auto [key, target] :
       {std::pair{"name", &meta.name}, std::pair{"generateName", &meta.generate_name},
        std::pair{"namespace", &meta.namespace_name}, std::pair{"uid", &meta.uid},
        std::pair{"resourceVersion", &meta.resource_version}}) {
    absl::StatusOr<std::string> value = fields.String(key);
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  absl::StatusOr<std::vector<OwnerReference>> owners =
      fields.List<OwnerReference>("ownerReferences", DecodeOwner);
  if (!owners.ok()) return owners.status();
  meta.owner_references = *std::move(owners);
  meta.extra = std::move(fields).Rest();
  return meta;
}

Json EncodeObjectMeta(const ObjectMeta& meta) {
  Json out = meta.extra;
  PutString(out, "name", meta.name);
  PutString(out, "generateName", meta.generate_name);
  PutString(out, "namespace", meta.namespace_name);
  PutString(out, "uid", meta.uid);
  PutString(out, "resourceVersion", meta.resource_version);
  if (!meta.owner_references.empty()) {
    Json owners = Json::array();
    for (const OwnerReference& owner : meta.owner_references) owners.push_back(EncodeOwner(owner));
    out["ownerReferences"] = std::move(owners);
  }
  return out;
}

}  // namespace devmgr::kubeapi
