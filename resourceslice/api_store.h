// ApiSliceStore: the SliceStore of a cluster, ResourceSlices on its Kubernetes API server
// through kubeclient::Client. Driver and node filters become field selectors; the API has none
// for the pool, so a pool filter is applied to what the server sends. Codes are the client's:
// a stale update or delete is Aborted (409), a slice that is gone NotFound.
//
// Thread-safety: as the client's, every method may be called from any thread at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "kubeclient/client.h"
#include "resourceslice/slice_store.h"

namespace devmgr::resourceslice {

class ApiSliceStore final : public SliceStore {
 public:
  // `client` is not owned and must outlive the store. `logger` hears of each failed list or
  // watch of a Watch (each is retried); may be null. `cancel`, when not null, ends the
  // ResourceSlice requests and the Node lookup as Cancellable says, and must outlive the store.
  explicit ApiSliceStore(kubeclient::Client& client, LoggerPtr logger = nullptr,
                         const kubeclient::Cancellation* cancel = nullptr)
      : client_(client), logger_(std::move(logger)), cancel_(cancel) {}

  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> List(const SliceFilter& filter) override;
  absl::StatusOr<kubeapi::ResourceSlice> Create(const kubeapi::ResourceSlice& slice) override;
  absl::StatusOr<kubeapi::ResourceSlice> Update(const kubeapi::ResourceSlice& slice) override;
  absl::Status Delete(const std::string& name, const std::string& uid,
                      const std::string& resource_version) override;
  // Without a pool, one deletecollection request; with one, the pool's slices one by one.
  // InvalidArgument, deleting nothing, for a filter that names no node (nor asks for the slices
  // without one): in a cluster that would be every node's slices.
  absl::Status DeleteCollection(const SliceFilter& filter) override;
  absl::StatusOr<std::string> NodeUid(const std::string& name) override;
  // A watch of the server (kubeclient/slice_reflector.h): calls come on its thread; the slices
  // there at the start are reported as added.
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                    SliceChangeHandler on_change) override;
  // Its ResourceSlice requests (lists and writes) end once `cancel` is set; NodeUid's lookup
  // and a Watch (which its own end stops) do not heed it.
  std::unique_ptr<SliceStore> Cancellable(const kubeclient::Cancellation& cancel) override;

 private:
  kubeclient::Client& client_;
  const LoggerPtr logger_;
  // Ends the ResourceSlice requests; null: nothing does.
  const kubeclient::Cancellation* const cancel_;
};

}  // namespace devmgr::resourceslice
