// StoreService and GrpcSliceStore: a SliceStore served over gRPC
// (proto/devmgr/resourceslices/v1) and reached through it. `devmgr serve` serves its local store
// on devmgr.sock; a driver on a node without a cluster publishes into it through
// GrpcSliceStore, and `devmgr slices` reads it. Slices travel as Kubernetes JSON; absl status
// codes map to gRPC codes one to one.
#pragma once

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "devmgr/resourceslices/v1/api.grpc.pb.h"
#include "resourceslice/slice_store.h"

namespace devmgr::resourceslice {

// SliceText: a slice as the ResourceSlices service carries it (its Kubernetes JSON).
std::string SliceText(const kubeapi::ResourceSlice& slice);

// StoreService answers the ResourceSlices service from `store` (not owned; must outlive it).
class StoreService final : public devmgr::resourceslices::v1::ResourceSlices::Service {
 public:
  explicit StoreService(SliceStore& store) : store_(store) {}

  grpc::Status List(grpc::ServerContext* context,
                    const devmgr::resourceslices::v1::ListRequest* request,
                    devmgr::resourceslices::v1::ListResponse* response) override;
  grpc::Status Create(grpc::ServerContext* context,
                      const devmgr::resourceslices::v1::SliceRequest* request,
                      devmgr::resourceslices::v1::SliceResponse* response) override;
  grpc::Status Update(grpc::ServerContext* context,
                      const devmgr::resourceslices::v1::SliceRequest* request,
                      devmgr::resourceslices::v1::SliceResponse* response) override;
  grpc::Status Delete(grpc::ServerContext* context,
                      const devmgr::resourceslices::v1::DeleteRequest* request,
                      devmgr::resourceslices::v1::DeleteResponse* response) override;
  grpc::Status DeleteCollection(grpc::ServerContext* context,
                                const devmgr::resourceslices::v1::Filter* request,
                                devmgr::resourceslices::v1::DeleteResponse* response) override;
  grpc::Status GetNodeUid(grpc::ServerContext* context,
                          const devmgr::resourceslices::v1::GetNodeUidRequest* request,
                          devmgr::resourceslices::v1::GetNodeUidResponse* response) override;

 private:
  SliceStore& store_;
};

// GrpcSliceStore: a SliceStore on the other end of `channel`, each call with `timeout`.
// Thread-safe.
class GrpcSliceStore final : public SliceStore {
 public:
  GrpcSliceStore(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout)
      : channel_(std::move(channel)),
        stub_(devmgr::resourceslices::v1::ResourceSlices::NewStub(channel_)),
        timeout_(timeout) {}
  // The daemon's store at its admin socket `socket`, over a connection of the store's own: a
  // daemon that restarted is reached at once (common/channel_reconnect.h).
  GrpcSliceStore(const std::filesystem::path& socket, absl::Duration timeout);

  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> List(const SliceFilter& filter) override;
  absl::StatusOr<kubeapi::ResourceSlice> Create(const kubeapi::ResourceSlice& slice) override;
  absl::StatusOr<kubeapi::ResourceSlice> Update(const kubeapi::ResourceSlice& slice) override;
  absl::Status Delete(const std::string& name, const std::string& uid,
                      const std::string& resource_version) override;
  absl::Status DeleteCollection(const SliceFilter& filter) override;
  absl::StatusOr<std::string> NodeUid(const std::string& name) override;
  // nullptr: the service has no watch (a driver's own controller is the only writer of its
  // slices in the daemon's store, besides the node's wipe, after which the driver registers
  // again and publishes anew).
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                    SliceChangeHandler on_change) override;

 private:
  // Context: a client context with the deadline, once the socket's peer, if it came back, is
  // connected again.
  std::unique_ptr<grpc::ClientContext> Context() const;

  std::shared_ptr<grpc::Channel> channel_;
  // Empty when the store was given a channel.
  const std::filesystem::path socket_;
  std::unique_ptr<devmgr::resourceslices::v1::ResourceSlices::Stub> stub_;
  const absl::Duration timeout_;
};

}  // namespace devmgr::resourceslice
