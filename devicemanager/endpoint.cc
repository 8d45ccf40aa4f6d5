#include "devicemanager/endpoint.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace devmgr::devicemanager {
namespace {

// An endpoint restored from the checkpoint: stopped from birth, so the plugin calls below are
// never reached (the public calls refuse a stopped endpoint first).
class RestoredEndpoint final : public Endpoint {
 public:
  explicit RestoredEndpoint(std::string resource_name) : Endpoint(std::move(resource_name), {}) {}

  const v1beta1::DevicePluginOptions& plugin_options() const override { return options_; }
  void StartListAndWatch() override {}
  void CancelStream() override {}

 private:
  absl::StatusOr<v1beta1::AllocateResponse> DoAllocate(
      const std::vector<std::string>& /*device_ids*/) override {
    return Unreachable();
  }
  absl::StatusOr<v1beta1::PreStartContainerResponse> DoPreStartContainer(
      const std::vector<std::string>& /*device_ids*/) override {
    return Unreachable();
  }
  absl::StatusOr<v1beta1::PreferredAllocationResponse> DoGetPreferredAllocation(
      const std::vector<std::string>& /*available*/,
      const std::vector<std::string>& /*must_include*/, int /*size*/) override {
    return Unreachable();
  }
  absl::Status Unreachable() const {
    return absl::InternalError(
        absl::StrCat("endpoint ", resource_name(), " restored from the checkpoint was called"));
  }

  const v1beta1::DevicePluginOptions options_;
};

}  // namespace

Endpoint::Endpoint(std::string resource_name, std::filesystem::path socket)
    : resource_name_(std::move(resource_name)), socket_(std::move(socket)) {}

EndpointSharedPtr Endpoint::NewStopped(std::string resource_name, absl::Time stop_time) {
  auto endpoint = std::make_shared<RestoredEndpoint>(std::move(resource_name));
  endpoint->MarkStopped(stop_time);
  return endpoint;
}

void Endpoint::MarkStopped(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (!stop_time_.has_value()) stop_time_ = now;
}

bool Endpoint::IsStopped() const {
  absl::MutexLock lock(&mu_);
  return stop_time_.has_value();
}

std::optional<absl::Time> Endpoint::stop_time() const {
  absl::MutexLock lock(&mu_);
  return stop_time_;
}

bool Endpoint::StopGracePeriodExpired(absl::Time now, absl::Duration grace) const {
  absl::MutexLock lock(&mu_);
  return stop_time_.has_value() && now - *stop_time_ > grace;
}

absl::StatusOr<v1beta1::AllocateResponse> Endpoint::Allocate(
    const std::vector<std::string>& device_ids) {
  if (IsStopped()) return StoppedError();
  return DoAllocate(device_ids);
}

absl::StatusOr<v1beta1::PreStartContainerResponse> Endpoint::PreStartContainer(
    const std::vector<std::string>& device_ids) {
  if (IsStopped()) return StoppedError();
  return DoPreStartContainer(device_ids);
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> Endpoint::GetPreferredAllocation(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) {
  if (IsStopped()) return StoppedError();
  return DoGetPreferredAllocation(available, must_include, size);
}

absl::Status Endpoint::StoppedError() const {
  return absl::FailedPreconditionError(
      absl::StrCat("endpoint ", resource_name_, " has been stopped"));
}

}  // namespace devmgr::devicemanager
