// A DRA driver's pool published into the daemon's ResourceSlice store (its ResourceSlices
// service on devmgr.sock), as a driver on a node without a cluster publishes it: the
// ResourceSlice controller of the SDK (resourceslice/controller.h) over GrpcSliceStore.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "bench/driver/publish_pool.h"
#include "devmgr/resourceslices/v1/api.grpc.pb.h"
#include "resourceslice/controller.h"
#include "resourceslice/forwarding_store.h"
#include "resourceslice/store_service.h"

namespace devmgr::bench {
namespace {

namespace api = devmgr::resourceslices::v1;

constexpr char kPublishDriver[] = "publish.bench.example.com";
// The daemon's node (serve's default --node-name), which owns the slices.
constexpr char kNode[] = "node";
// Publishing 10,000 devices takes a tenth of a second or more: fewer samples than the latency
// rows take.
constexpr int kPublishSamples = 20;

// RecordingStore passes every call to `store` and keeps the request of each create, encoded as
// GrpcSliceStore sends it: the floor sends the same requests.
class RecordingStore final : public resourceslice::ForwardingSliceStore {
 public:
  explicit RecordingStore(resourceslice::SliceStore& store) : ForwardingSliceStore(store) {}

  absl::StatusOr<kubeapi::ResourceSlice> Create(const kubeapi::ResourceSlice& slice) override {
    creates_.emplace_back().set_slice(resourceslice::SliceText(slice));
    return ForwardingSliceStore::Create(slice);
  }

  std::vector<api::SliceRequest> TakeCreates() { return std::move(creates_); }

 private:
  std::vector<api::SliceRequest> creates_;
};

// Publish runs a controller over `store` until it has written `resources` and checks that it
// created `slices` slices.
absl::Status Publish(resourceslice::SliceStore& store,
                     const resourceslice::DriverResources& resources, size_t slices) {
  resourceslice::ControllerOptions options;
  options.driver_name = kPublishDriver;
  options.store = &store;
  options.owner = resourceslice::Owner{"v1", "Node", kNode, ""};
  options.resources = resources;
  options.run_worker = false;
  absl::Status failure;
  options.error_handler = [&failure](const resourceslice::ControllerError& error) {
    failure = absl::InternalError(error.ToString());
  };
  absl::StatusOr<std::unique_ptr<resourceslice::Controller>> controller =
      resourceslice::Controller::Start(std::move(options));
  if (!controller.ok()) return controller.status();
  // GrpcSliceStore has no watch: the controller reads the store itself and is synced at once.
  if (!(*controller)->Synced()) return absl::InternalError("the controller is not synced");
  (*controller)->ProcessReady();
  if (!failure.ok()) return failure;
  const int64_t created = (*controller)->GetStats().num_creates;
  if (created != static_cast<int64_t>(slices)) {
    return absl::InternalError(
        absl::StrCat("the controller created ", created, " slices, not ", slices));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MeasurePublish(const std::filesystem::path& /*root*/, BenchDaemon& daemon,
                            const Options& flags, std::vector<Row>& rows) {
  const int devices = flags.publish_devices;
  const size_t slices =
      static_cast<size_t>((devices + kPublishedDevicesPerSlice - 1) / kPublishedDevicesPerSlice);
  const int samples = std::min(flags.samples, kPublishSamples);
  const resourceslice::DriverResources resources = PublishedPool(devices, kNode);
  resourceslice::GrpcSliceStore store(daemon.admin(), kCallTimeout);
  const resourceslice::SliceFilter mine{kPublishDriver, "", ""};
  auto clear = [&] { return store.DeleteCollection(mine); };

  // Once, untimed, for the requests the floor sends.
  RecordingStore recording(store);
  if (absl::Status status = Publish(recording, resources, slices); !status.ok()) return status;
  const std::vector<api::SliceRequest> creates = recording.TakeCreates();
  if (absl::Status status = clear(); !status.ok()) return status;

  std::vector<double> measured;
  for (int i = 0; i < samples; ++i) {
    const auto start = Clock::now();
    if (absl::Status status = Publish(store, resources, slices); !status.ok()) return status;
    measured.push_back(MicrosSince(start));
    if (absl::Status status = clear(); !status.ok()) return status;
  }

  auto stub = api::ResourceSlices::NewStub(daemon.admin());
  std::vector<double> floor;
  for (int i = 0; i < samples; ++i) {
    const auto start = Clock::now();
    for (const api::SliceRequest& request : creates) {
      grpc::ClientContext context;
      SetDeadline(context);
      api::SliceResponse response;
      if (absl::Status status = FromGrpc("Create", stub->Create(&context, request, &response));
          !status.ok()) {
        return status;
      }
    }
    floor.push_back(MicrosSince(start));
    if (absl::Status status = clear(); !status.ok()) return status;
  }
  rows.push_back(Timed(absl::StrCat("DRA publish ", devices, " devices as ", slices,
                                    " ResourceSlices into the daemon"),
                       measured, floor,
                       "the same creates, encoded in advance, sent one after the other", 1000,
                       "ms"));
  return absl::OkStatus();
}

}  // namespace devmgr::bench
