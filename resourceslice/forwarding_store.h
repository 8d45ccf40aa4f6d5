// ForwardingSliceStore: a SliceStore that passes every call to another store, for stores that
// change or watch a few of the calls and leave the rest alone (a store that fails its first
// writes, one that records what it is asked, one that is slow to list). Override what changes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "resourceslice/slice_store.h"

namespace devmgr::resourceslice {

class ForwardingSliceStore : public SliceStore {
 public:
  // `inner` must outlive this store; a subclass may pass a member of its own (only the
  // reference is kept until the first call).
  explicit ForwardingSliceStore(SliceStore& inner) : inner_(inner) {}

  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> List(const SliceFilter& filter) override {
    return inner_.List(filter);
  }
  absl::StatusOr<kubeapi::ResourceSlice> Create(const kubeapi::ResourceSlice& slice) override {
    return inner_.Create(slice);
  }
  absl::StatusOr<kubeapi::ResourceSlice> Update(const kubeapi::ResourceSlice& slice) override {
    return inner_.Update(slice);
  }
  absl::Status Delete(const std::string& name, const std::string& uid,
                      const std::string& resource_version) override {
    return inner_.Delete(name, uid, resource_version);
  }
  absl::Status DeleteCollection(const SliceFilter& filter) override {
    return inner_.DeleteCollection(filter);
  }
  absl::StatusOr<std::string> NodeUid(const std::string& name) override {
    return inner_.NodeUid(name);
  }
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                    SliceChangeHandler on_change) override {
    return inner_.Watch(filter, std::move(on_change));
  }
  // Cancellable is not passed on (the default's nullptr stands): the inner store's view would
  // leave out this store's overrides.

 protected:
  SliceStore& inner() { return inner_; }

 private:
  SliceStore& inner_;
};

}  // namespace devmgr::resourceslice
