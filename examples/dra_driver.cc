// A whole DRA driver on devmgr's helper (kubeletplugin/helper.h): it publishes one pool of
// counters as ResourceSlices, prepares a claim by answering a CDI device per allocated device
// of its own, and unprepares by forgetting. Run beside `devmgr serve --root-dir DIR`:
//
//   dra_driver DIR counter.example.com node
//
// Claims are read from the daemon (a cluster's driver would read them from the API server), and
// the slices go to the daemon's local store (`devmgr slices list --root-dir DIR`).
#include <signal.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/unix_socket.h"
#include "kubeletplugin/admin_claim_lookup.h"
#include "kubeletplugin/helper.h"
#include "resourceslice/store_service.h"

namespace {

using devmgr::kubeletplugin::Device;
using devmgr::kubeletplugin::NamespacedObject;
using devmgr::kubeletplugin::PrepareResult;

constexpr int kCounters = 4;

class CounterDriver final : public devmgr::kubeletplugin::DriverPlugin {
 public:
  CounterDriver(std::string driver, std::string pool)
      : driver_(std::move(driver)), pool_(std::move(pool)) {}

  // What the driver has: counter-0 .. counter-3 in one slice of the node's pool.
  devmgr::resourceslice::DriverResources Resources() const {
    devmgr::resourceslice::Slice slice;
    for (int i = 0; i < kCounters; ++i) {
      devmgr::kubeapi::Device device;
      device.name = absl::StrCat("counter-", i);
      device.extra["attributes"] = {{"index", {{"int", i}}}};
      slice.devices.push_back(device);
    }
    devmgr::resourceslice::DriverResources resources;
    resources.pools[pool_].slices.push_back(slice);
    return resources;
  }

  absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<devmgr::dra::ResourceClaim>& claims) override {
    std::map<std::string, PrepareResult> results;
    absl::MutexLock lock(&mu_);
    for (const devmgr::dra::ResourceClaim& claim : claims) {
      PrepareResult& result = results[claim.uid];
      // The helper checked that the claim is allocated; take the devices that are ours.
      for (const auto& allocated : *claim.allocation) {
        if (allocated.driver != driver_) continue;
        result.devices.push_back(
            Device{.requests = {allocated.request},
                   .pool_name = allocated.pool,
                   .device_name = allocated.device,
                   .cdi_device_ids = {absl::StrCat(driver_, "/counter=", allocated.device)},
                   .share_id = allocated.share_id});
      }
      prepared_.insert(claim.uid);
    }
    return results;
  }

  absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
      const std::vector<NamespacedObject>& claims) override {
    std::map<std::string, absl::Status> results;
    absl::MutexLock lock(&mu_);
    for (const NamespacedObject& claim : claims) {
      prepared_.erase(claim.uid);  // not prepared is no error
      results[claim.uid] = absl::OkStatus();
    }
    return results;
  }

 private:
  const std::string driver_;
  const std::string pool_;
  absl::Mutex mu_;
  std::set<std::string> prepared_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: dra_driver KUBELET_DIR DRIVER NODE\n";
    return 2;
  }
  const std::filesystem::path root = std::filesystem::absolute(argv[1]);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  // A path too long for a socket, or one gRPC would read as a list of addresses (and so dial
  // another socket), is refused before anything is dialled.
  const std::filesystem::path daemon_socket = root / "devmgr.sock";
  if (absl::Status valid = devmgr::ValidateSocketPath(daemon_socket); !valid.ok()) {
    std::cerr << valid.message() << "\n";
    return 2;
  }
  devmgr::resourceslice::GrpcSliceStore slices(daemon_socket, absl::Seconds(10));
  CounterDriver driver(argv[2], argv[3]);

  devmgr::kubeletplugin::HelperOptions options;
  options.driver_name = argv[2];
  options.kubelet_dir = root;
  options.claim_lookup = devmgr::kubeletplugin::AdminClaimLookup(daemon_socket, absl::Seconds(10));
  options.slice_store = &slices;
  options.node_name = argv[3];
  absl::StatusOr<std::unique_ptr<devmgr::kubeletplugin::Helper>> helper =
      devmgr::kubeletplugin::Helper::Start(driver, std::move(options));
  if (!helper.ok()) {
    std::cerr << "dra_driver: " << helper.status().message() << '\n';
    return 1;
  }
  if (absl::Status published = (*helper)->PublishResources(driver.Resources()); !published.ok()) {
    std::cerr << "dra_driver: " << published.message() << '\n';
    return 1;
  }
  std::cout << "serving " << (*helper)->service_socket() << "; Ctrl-C stops\n";
  int signal = 0;
  sigwait(&stop, &signal);
  (*helper)->Stop();
  return 0;
}
