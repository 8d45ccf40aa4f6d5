// Optional hooks a device plugin can give the SDK to change how its DevicePlugin RPCs are
// answered. Without hooks the SDK answers from the DeviceTree alone: Allocate returns the
// devices' nodes, mounts, envs, annotations (and CDI names when CDI is on), and
// GetDevicePluginOptions says that neither GetPreferredAllocation nor PreStartContainer is
// offered. Each hook present switches on the matching option. When a container gets several
// devices, a node or mount that more than one of them carries is listed once, and an env or
// annotation key that more than one sets gets their distinct values joined with ',' in the
// order of the request.
//
// Threading: hooks run on the SDK's hook thread, one call at a time per plugin, never on a gRPC
// thread; they may block (a slow device reset), and while one blocks, later calls to hooks of
// the same plugin wait; a call that ended meanwhile (the kubelet's deadline, the plugin's stop)
// is not given to its hook. `device_type` names the resource's device type ("gpu" in
// "example.com/gpu").
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::deviceplugin {

// A hook's answer: a value, "use the default" (std::nullopt, see UseDefault), or an error that
// goes back to the kubelet as the RPC status.
template <typename T>
using HookResult = absl::StatusOr<std::optional<T>>;

// UseDefault is the answer that makes the SDK run its own logic for this request.
inline constexpr std::nullopt_t UseDefault() { return std::nullopt; }

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Allocate replaces the default Allocate for this request, or returns UseDefault().
  virtual HookResult<v1beta1::AllocateResponse> Allocate(
      const std::string& device_type, const v1beta1::AllocateRequest& request) = 0;
};

class PreferredAllocator {
 public:
  virtual ~PreferredAllocator() = default;
  // GetPreferredAllocation picks devices for each container request, or returns UseDefault()
  // (the SDK then takes must_include first, then the rest in the order offered, preferring the
  // NUMA nodes of the devices already picked).
  virtual HookResult<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string& device_type, const v1beta1::PreferredAllocationRequest& request) = 0;
};

class PostAllocator {
 public:
  virtual ~PostAllocator() = default;
  // PostAllocate edits the response of Allocate (default or hook) before it is sent, e.g. to add
  // annotations for a CRI hook. An error fails the Allocate RPC.
  virtual absl::Status PostAllocate(const std::string& device_type,
                                    v1beta1::AllocateResponse& response) = 0;
};

class ContainerPreStarter {
 public:
  virtual ~ContainerPreStarter() = default;
  // PreStartContainer prepares the devices before the container starts; an error fails it.
  virtual absl::Status PreStartContainer(const std::string& device_type,
                                         const v1beta1::PreStartContainerRequest& request) = 0;
};

// Hooks: non-owning pointers, each null when the plugin does not implement that hook. The
// objects must outlive the Plugin they are given to.
struct Hooks {
  Allocator* allocator = nullptr;
  PreferredAllocator* preferred_allocator = nullptr;
  PostAllocator* post_allocator = nullptr;
  ContainerPreStarter* pre_starter = nullptr;
};

}  // namespace devmgr::deviceplugin
