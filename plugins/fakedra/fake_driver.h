// FakeDraDriver: the fake DRA driver behind `devmgr plugin fake-dra`, a real gRPC peer to test a
// node's DRA side against (devmgr's dra::Manager, or a kubelet), and the first driver built on
// devmgr's DRA driver helper (kubeletplugin/helper.h), which lays out its sockets as upstream's
// helper does (<root>/plugins/<driver>/dra.sock, <root>/plugins_registry/<driver>-reg.sock, the
// rolling-update names in a rolling update), registers, reads each claim before the driver sees
// it and serialises the calls.
//
// Its devices are "dev-0" .. "dev-<N-1>" in one pool named after the node, published as
// ResourceSlices when it is given a store (the daemon's local one, through devmgr.sock).
// NodePrepareResources keeps the allocation results of each claim that name this driver and
// answers one device per result, with the CDI device ID "<driver>/device=<device>"; a device
// that is not one of its own fails that claim. Its "Prepared claim" log line names the opaque
// parameters the claim's allocation configures for this driver ("config"). With a CDI folder it
// writes one spec file for all its devices at start (through the SDK's CDI writer) and removes it
// at stop. NodeUnprepareResources forgets the claims (or fails every claim, with unprepare_error
// set). It serves DRAResourceHealth v1 (FlipHealth).
//
// Faults for tests: a latency before every prepare, an error every claim fails with (of every
// prepare, or of every unprepare), or prepare calls that hang until Release (or Stop).
//
// Threading: calls run one at a time on the helper's worker thread. Every public method is
// thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/stop_once.h"
#include "dra/claim.h"
#include "kubeletplugin/helper.h"
#include "plugins/fakedra/device_health.h"
#include "resourceslice/controller.h"

namespace devmgr::plugins {

// The class of the CDI kind the fake's devices have: "<driver>/device".
inline constexpr char kFakeDraCdiClass[] = "device";

// ClaimLookup: where the helper reads the claims (the CLI asks the daemon's admin API).
using ClaimLookup = kubeletplugin::ClaimLookup;

struct FakeDraOptions {
  std::string driver_name;
  // The kubelet's root folder: sockets go to its plugins/ and plugins_registry/.
  std::filesystem::path root_dir = "/var/lib/kubelet";
  // The pool of the devices: the node's name, as a driver publishing one pool per node names it.
  std::string pool = "node";
  // Non-empty: run as the driver pod with this UID in a rolling update (socket names above).
  std::string rolling_update_uid{};
  int64_t devices = 1;
  bool serve_v1 = true;
  bool serve_v1beta1 = true;
  // Serve DRAResourceHealth v1 and v1alpha1 (device health, see FlipHealth) and list both at
  // registration.
  bool serve_health = true;
  // How often each health stream gets every device's health again, flips or not: within the
  // kubelet's default health check timeout (30 s), or the devices read Unknown.
  absl::Duration health_report_interval = absl::Seconds(10);
  // Non-empty: write the devices' CDI spec file into this folder.
  std::filesystem::path cdi_dir{};
  absl::Duration prepare_latency = absl::ZeroDuration();
  // Non-empty: every claim of every NodePrepareResources fails with this text.
  std::string prepare_error{};
  // Non-empty: every claim of every NodeUnprepareResources fails with this text (and stays
  // prepared).
  std::string unprepare_error{};
  // Every NodePrepareResources waits until Release (or Stop).
  bool prepare_hang = false;
  // Whether the registration socket and the service socket are served (HelperOptions): one
  // driver as two processes. The ResourceSlices are published by the one that serves the
  // service.
  bool serve_registration = true;
  bool serve_service = true;
  // Required.
  ClaimLookup claim_lookup{};
  // Where the devices are published as ResourceSlices (one pool named after the node, owned by
  // the Node, at most 128 devices a slice, each with the attribute "index"), republished each
  // time the kubelet confirms the registration. Null: not published. Not owned; must outlive the
  // driver.
  resourceslice::SliceStore* slice_store = nullptr;
  // How long Stop lets calls in progress end before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(2);
  LoggerPtr logger{};
};

// What the kubelet said in its last NotifyRegistrationStatus.
struct FakeDraRegistration {
  int notifications = 0;
  bool registered = false;
  std::string error{};
};

class FakeDraDriver final : private kubeletplugin::DriverPlugin {
 public:
  // Start validates `options`, writes the CDI spec (if asked), starts the helper (which serves
  // the service socket, then the registrar socket) and publishes the devices (with a store).
  // InvalidArgument for a bad option or a socket path over the unix limit; the errno's code when
  // a folder, a socket or the spec cannot be made.
  static absl::StatusOr<std::unique_ptr<FakeDraDriver>> Start(FakeDraOptions options);

  // Stops (see Stop).
  ~FakeDraDriver() override;
  FakeDraDriver(const FakeDraDriver&) = delete;
  FakeDraDriver& operator=(const FakeDraDriver&) = delete;

  // Stop releases hung calls, stops the helper (calls in progress get shutdown_grace), and
  // removes the CDI spec. Idempotent; blocks until every call has ended (a Stop called while
  // another runs, until that one has returned).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Release ends every hang and latency wait, now and later.
  void Release();

  // FlipHealth turns the next device (round-robin) unhealthy, or healthy again, and reports it
  // on the health streams. Nothing without serve_health.
  void FlipHealth();

  const std::filesystem::path& service_socket() const { return helper_->service_socket(); }
  const std::filesystem::path& registrar_socket() const { return helper_->registrar_socket(); }
  // The CDI spec file, or empty without a CDI folder.
  std::filesystem::path CdiSpecPath() const;
  // CdiDeviceId is what prepare answers for `device`: "<driver>/device=<device>".
  std::string CdiDeviceId(absl::string_view device) const;

  int64_t prepare_calls() const { return prepare_calls_.load(); }
  int64_t unprepare_calls() const { return unprepare_calls_.load(); }
  // UIDs of the claims prepared and not unprepared since, sorted.
  std::vector<std::string> PreparedClaims() const ABSL_LOCKS_EXCLUDED(mu_);
  FakeDraRegistration registration() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit FakeDraDriver(FakeDraOptions options);
  void StopNow() ABSL_LOCKS_EXCLUDED(mu_);

  // DriverPlugin, on the helper's worker.
  absl::StatusOr<std::map<std::string, kubeletplugin::PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& claims) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
      const std::vector<kubeletplugin::NamespacedObject>& claims) override ABSL_LOCKS_EXCLUDED(mu_);

  // PrepareClaim: the devices of one claim, or why it cannot be prepared.
  absl::StatusOr<std::vector<kubeletplugin::Device>> PrepareClaim(
      const dra::ResourceClaim& claim) const;
  bool IsOwnDevice(absl::string_view pool, absl::string_view device) const;
  // Resources: the devices as the pool the driver publishes.
  resourceslice::DriverResources Resources() const;
  void OnRegistrationStatus(bool registered, const std::string& error) ABSL_LOCKS_EXCLUDED(mu_);

  const FakeDraOptions options_;

  std::atomic<int64_t> prepare_calls_{0};
  std::atomic<int64_t> unprepare_calls_{0};
  absl::Notification released_;

  mutable absl::Mutex mu_;
  // UIDs of the prepared claims.
  std::set<std::string> prepared_ ABSL_GUARDED_BY(mu_);
  FakeDraRegistration registration_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Runs StopNow once (common/stop_once.h).
  StopOnce stop_once_;
  bool cdi_written_ = false;

  // Served beside DRAPlugin by the helper, which is destroyed first; null without serve_health.
  std::unique_ptr<FakeDeviceHealth> health_;
  std::unique_ptr<kubeletplugin::Helper> helper_;
};

}  // namespace devmgr::plugins
