// GpuHealth: what `devmgr plugin generic` asks, at every rescan, of the NVIDIA GPU behind a
// device of a group with NVML health (generic_config.h): whether the GPU may still be used.
// XidWatch answers from NVML's XID events; tests give answers of their own.
#pragma once

#include <cstdint>
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
};

}  // namespace devmgr::plugins
