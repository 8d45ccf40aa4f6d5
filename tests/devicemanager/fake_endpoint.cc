#include "tests/devicemanager/fake_endpoint.h"

#include <utility>

namespace devmgr::testing {

FakeEndpoint::FakeEndpoint(std::string resource_name, std::filesystem::path socket,
                           v1beta1::DevicePluginOptions options,
                           devicemanager::EndpointCallbacks& callbacks)
    : devicemanager::Endpoint(std::move(resource_name), std::move(socket)),
      options_(std::move(options)),
      callbacks_(callbacks) {}

void FakeEndpoint::StartListAndWatch() {
  absl::MutexLock lock(&mu_);
  if (stream_ == Stream::kNotStarted) stream_ = Stream::kRunning;
}

void FakeEndpoint::CancelStream() {
  if (EndOnce()) {
    callbacks_.OnStreamEnded(shared_from_this(), absl::CancelledError("stream cancelled"));
  }
}

void FakeEndpoint::EndStream(const absl::Status& status) {
  if (EndOnce()) callbacks_.OnStreamEnded(shared_from_this(), status);
}

bool FakeEndpoint::EndOnce() {
  absl::MutexLock lock(&mu_);
  if (stream_ != Stream::kRunning) return false;
  stream_ = Stream::kEnded;
  return true;
}

bool FakeEndpoint::PushDevices(std::vector<devicemanager::Device> devices) {
  {
    absl::MutexLock lock(&mu_);
    if (stream_ != Stream::kRunning) return false;
  }
  callbacks_.OnDevicesUpdated(*this, std::move(devices));
  return true;
}

void FakeEndpoint::OnAllocate(AllocateFn fn) {
  absl::MutexLock lock(&mu_);
  allocate_ = std::move(fn);
}

void FakeEndpoint::OnGetPreferredAllocation(PreferredFn fn) {
  absl::MutexLock lock(&mu_);
  preferred_ = std::move(fn);
}

void FakeEndpoint::OnPreStartContainer(PreStartFn fn) {
  absl::MutexLock lock(&mu_);
  pre_start_ = std::move(fn);
}

std::vector<FakeEndpoint::PreferredRequest> FakeEndpoint::preferred_requests() const {
  absl::MutexLock lock(&mu_);
  return preferred_requests_;
}

absl::StatusOr<v1beta1::AllocateResponse> FakeEndpoint::DoAllocate(
    const std::vector<std::string>& device_ids) {
  AllocateFn fn;
  {
    absl::MutexLock lock(&mu_);
    fn = allocate_;
  }
  ++allocate_calls_;
  if (fn != nullptr) return fn(device_ids);
  v1beta1::AllocateResponse response;
  response.add_container_responses();
  return response;
}

absl::StatusOr<v1beta1::PreStartContainerResponse> FakeEndpoint::DoPreStartContainer(
    const std::vector<std::string>& device_ids) {
  PreStartFn fn;
  {
    absl::MutexLock lock(&mu_);
    fn = pre_start_;
  }
  ++pre_start_calls_;
  if (fn != nullptr) return fn(device_ids);
  return v1beta1::PreStartContainerResponse();
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> FakeEndpoint::DoGetPreferredAllocation(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) {
  PreferredFn fn;
  {
    absl::MutexLock lock(&mu_);
    fn = preferred_;
    preferred_requests_.push_back({available, must_include, size});
  }
  ++preferred_calls_;
  if (fn != nullptr) return fn(available, must_include, size);
  return v1beta1::PreferredAllocationResponse();
}

absl::StatusOr<devicemanager::EndpointSharedPtr> FakeEndpointFactory::Connect(
    std::string resource_name, std::filesystem::path socket,
    devicemanager::EndpointCallbacks& callbacks, const devicemanager::ConnectLimits& limits) {
  absl::MutexLock lock(&mu_);
  last_dial_deadline_ = limits.dial_deadline;
  auto endpoint =
      std::make_shared<FakeEndpoint>(resource_name, std::move(socket), options_, callbacks);
  endpoints_[resource_name] = endpoint;
  return endpoint;
}

absl::Time FakeEndpointFactory::last_dial_deadline() const {
  absl::MutexLock lock(&mu_);
  return last_dial_deadline_;
}

void FakeEndpointFactory::set_plugin_options(v1beta1::DevicePluginOptions options) {
  absl::MutexLock lock(&mu_);
  options_ = std::move(options);
}

std::shared_ptr<FakeEndpoint> FakeEndpointFactory::endpoint(
    const std::string& resource_name) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(resource_name);
  return it == endpoints_.end() ? nullptr : it->second;
}

}  // namespace devmgr::testing
