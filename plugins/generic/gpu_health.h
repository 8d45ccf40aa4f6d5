// GpuHealth: what `devmgr plugin generic` asks, at every rescan, of the NVIDIA GPU behind a
// device of a group with NVML health (generic_config.h): whether the GPU may still be used; and
// what tells the scanner to rescan when that may have changed.
// XidWatch answers from NVML's XID events; tests give answers of their own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace devmgr::plugins {

class GpuHealth {
 public:
  virtual ~GpuHealth() = default;

  // Fault: why the GPU whose device node has the minor `minor` must not be used ("XID 79"), or
  // nullopt when it may. An XID in `ignored_xids` says nothing of the GPU (an application's
  // fault) and makes no fault. Called from the scanner's thread while others may change the
  // answer.
  virtual std::optional<std::string> Fault(unsigned int minor,
                                           const std::vector<uint64_t>& ignored_xids) const = 0;

  // OnChange: `changed` is called, from any thread, whenever an answer of Fault may have changed,
  // so that the scanner looks again at once rather than at its next rescan; an empty function
  // stops the calls. Once OnChange returns, the function it replaced is neither running nor
  // called again.
  virtual void OnChange(std::function<void()> changed) = 0;
};

}  // namespace devmgr::plugins
