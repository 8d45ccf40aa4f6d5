// StoreSliceWiper: the DRA manager's SliceWiper over a SliceStore (the node's local store, or
// the API server's): this node's slices of one driver, or of all, go with one DeleteCollection
// with the kubelet's field selectors spec.nodeName and spec.driver.
#pragma once

#include <string>
#include <utility>

#include "dra/slice_wiper.h"
#include "resourceslice/slice_store.h"

namespace devmgr::node {

class StoreSliceWiper final : public dra::SliceWiper {
 public:
  // `store` is not owned and must outlive the wiper.
  StoreSliceWiper(resourceslice::SliceStore& store, std::string node_name)
      : store_(store), node_name_(std::move(node_name)) {}

  absl::Status WipeResourceSlices(const std::string& driver_name) override {
    return store_.DeleteCollection({driver_name, node_name_, ""});
  }

 private:
  resourceslice::SliceStore& store_;
  const std::string node_name_;
};

}  // namespace devmgr::node
