// StoreSliceWiper: the DRA manager's SliceWiper over SliceStores (the node's local store, and the
// API server's when the node is in a cluster): this node's slices of one driver, or of all, go
// with one DeleteCollection per store with the kubelet's field selectors spec.nodeName and
// spec.driver.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dra/slice_wiper.h"
#include "resourceslice/slice_store.h"

namespace devmgr::node {

class StoreSliceWiper final : public dra::SliceWiper {
 public:
  // The stores are not owned and must outlive the wiper.
  StoreSliceWiper(std::vector<resourceslice::SliceStore*> stores, std::string node_name)
      : stores_(std::move(stores)), node_name_(std::move(node_name)) {}

  // Every store is wiped; the first error is returned (the wipe is retried as a whole, and a
  // store already wiped has nothing left to delete).
  absl::Status WipeResourceSlices(const std::string& driver_name) override {
    absl::Status first;
    for (resourceslice::SliceStore* store : stores_) {
      first.Update(store->DeleteCollection({driver_name, node_name_, ""}));
    }
    return first;
  }

 private:
  const std::vector<resourceslice::SliceStore*> stores_;
  const std::string node_name_;
};

}  // namespace devmgr::node
