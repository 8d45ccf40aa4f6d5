#include "resourceslice/api_store.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubeclient/slice_reflector.h"

namespace devmgr::resourceslice {
namespace {

kubeclient::ListOptions Selecting(const SliceFilter& filter) {
  kubeclient::ListOptions options;
  std::optional<std::string> node_name;
  if (filter.without_node_name) {
    node_name = "";
  } else if (!filter.node_name.empty()) {
    node_name = filter.node_name;
  }
  options.field_selector = kubeclient::SliceFieldSelector(filter.driver, node_name);
  return options;
}

// The reflector behind a watch; stopped when the watch ends.
class ReflectorWatch final : public SliceWatch {
 public:
  explicit ReflectorWatch(std::unique_ptr<kubeclient::SliceReflector> reflector)
      : reflector_(std::move(reflector)) {}

  std::optional<CachedSlices> Cached(const SliceFilter& filter) const override {
    std::optional<kubeclient::SliceReflector::Snapshot> snapshot = reflector_->Slices(
        [&](const kubeapi::ResourceSlice& slice) { return filter.Matches(slice); });
    if (!snapshot.has_value()) return std::nullopt;
    return CachedSlices{std::move(snapshot->slices), std::move(snapshot->resource_version)};
  }
  bool Synced() const override { return reflector_->lists() > 0; }

 private:
  std::unique_ptr<kubeclient::SliceReflector> reflector_;
};

}  // namespace

std::unique_ptr<SliceWatch> ApiSliceStore::Watch(const SliceFilter& filter,
                                                 SliceChangeHandler on_change) {
  kubeclient::SliceReflectorOptions options;
  options.client = &client_;
  options.field_selector = Selecting(filter).field_selector;
  options.on_error = [logger = logger_,
                      selector = options.field_selector](const absl::Status& status) {
    DEVMGR_LOG(logger, err, "Failed to watch ResourceSlices, retrying", "fieldSelector", selector,
               "err", status);
  };
  // The server selects by driver and node; the pool is checked here.
  options.on_change = [pool = filter.pool_name, on_change = std::move(on_change)](
                          const kubeapi::ResourceSlice* before,
                          const kubeapi::ResourceSlice* after) {
    const auto in_pool = [&](const kubeapi::ResourceSlice* slice) {
      return slice != nullptr && (pool.empty() || slice->spec.pool.name == pool) ? slice : nullptr;
    };
    const kubeapi::ResourceSlice* was = in_pool(before);
    const kubeapi::ResourceSlice* is = in_pool(after);
    if (was != nullptr || is != nullptr) on_change(was, is);
  };
  absl::StatusOr<std::unique_ptr<kubeclient::SliceReflector>> reflector =
      kubeclient::SliceReflector::Start(std::move(options));
  if (!reflector.ok()) return nullptr;
  return std::make_unique<ReflectorWatch>(*std::move(reflector));
}

std::unique_ptr<SliceStore> ApiSliceStore::Cancellable(const kubeclient::Cancellation& cancel) {
  return std::make_unique<ApiSliceStore>(client_, logger_, &cancel);
}

absl::StatusOr<std::vector<kubeapi::ResourceSlice>> ApiSliceStore::List(const SliceFilter& filter) {
  absl::StatusOr<kubeclient::SliceList> list =
      client_.ListResourceSlices(Selecting(filter), cancel_);
  if (!list.ok()) return list.status();
  std::vector<kubeapi::ResourceSlice> out = std::move(list->items);
  if (!filter.pool_name.empty()) {
    std::erase_if(out, [&](const kubeapi::ResourceSlice& slice) {
      return slice.spec.pool.name != filter.pool_name;
    });
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.metadata.name < b.metadata.name; });
  return out;
}

absl::StatusOr<kubeapi::ResourceSlice> ApiSliceStore::Create(const kubeapi::ResourceSlice& slice) {
  return client_.CreateResourceSlice(slice, cancel_);
}

absl::StatusOr<kubeapi::ResourceSlice> ApiSliceStore::Update(const kubeapi::ResourceSlice& slice) {
  return client_.UpdateResourceSlice(slice, cancel_);
}

absl::Status ApiSliceStore::Delete(const std::string& name, const std::string& uid,
                                   const std::string& resource_version) {
  return client_.DeleteResourceSlice(name, {uid, resource_version}, cancel_);
}

absl::Status ApiSliceStore::DeleteCollection(const SliceFilter& filter) {
  // A node's wipe names its node; without one the request would reach every node's slices.
  if (filter.node_name.empty() && !filter.without_node_name) {
    return absl::InvalidArgumentError(
        "refusing to delete the ResourceSlices of every node: the filter names no node");
  }
  if (filter.pool_name.empty()) return client_.DeleteResourceSlices(Selecting(filter), cancel_);
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices = List(filter);
  if (!slices.ok()) return slices.status();
  for (const kubeapi::ResourceSlice& slice : *slices) {
    absl::Status deleted = client_.DeleteResourceSlice(slice.metadata.name, {}, cancel_);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ApiSliceStore::NodeUid(const std::string& name) {
  absl::StatusOr<nlohmann::json> node = client_.GetNode(name, cancel_);
  if (!node.ok()) return node.status();
  const nlohmann::json& object = *node;
  const nlohmann::json uid =
      object.is_object() && object.contains("metadata") && object["metadata"].is_object()
          ? object["metadata"].value("uid", nlohmann::json())
          : nlohmann::json();
  if (!uid.is_string() || uid.get<std::string>().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("Node \"", name, "\" has no metadata.uid"));
  }
  return uid.get<std::string>();
}

}  // namespace devmgr::resourceslice
