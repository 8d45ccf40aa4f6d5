// A stand-in for NVIDIA's libnvidia-ml.so.1, built as a shared library for tests of
// `devmgr plugin generic`'s NVML health (plugins/generic/nvml_library.h), which load it with
// --nvml-library. It exports the functions devmgr calls, with NVML's C signatures, and plays
// back a script: the file named by the environment variable FAKE_NVML_SCRIPT, whose lines are
//
//   gpu MINOR UUID [unwatchable]   a GPU, in NVML's order; unwatchable: its events cannot be
//                                  registered ("Not Supported")
//   init-error CODE                nvmlInit_v2 fails with CODE
//   xid MINOR XID                  an XID event of that GPU (delivered once it is registered)
//   xid-unnamed XID                an XID event of a device whose minor NVML cannot give
//   wait-error CODE                nvmlEventSetWait_v2 fails with CODE
//
// The GPUs and init-error are read by nvmlInit_v2; the events in order, each once, by the
// waits, which read the file again each time so that a test appends events while the plugin
// runs. A wait with nothing to deliver returns NVML's timeout after its timeout.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "plugins/generic/nvml_library.h"

using devmgr::plugins::NvmlDeviceOpaque;
using devmgr::plugins::NvmlEventData;
using devmgr::plugins::NvmlEventSetOpaque;

struct devmgr::plugins::NvmlDeviceOpaque {
  unsigned int minor = 0;
  std::string uuid;
  bool watchable = true;
  bool registered = false;
};

struct devmgr::plugins::NvmlEventSetOpaque {
  // Event lines already delivered.
  size_t delivered = 0;
};

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kTimeout = 10;
constexpr int kUnknown = 999;

// Reallocated only by nvmlInit_v2, before handles are given out.
std::vector<NvmlDeviceOpaque>& Gpus() {
  static auto* gpus = new std::vector<NvmlDeviceOpaque>();
  return *gpus;
}

// The device of xid-unnamed events.
NvmlDeviceOpaque& Unnamed() {
  static auto* unnamed = new NvmlDeviceOpaque();
  return *unnamed;
}

std::vector<std::string> ScriptLines() {
  std::vector<std::string> lines;
  const char* path = std::getenv("FAKE_NVML_SCRIPT");  // NOLINT(concurrency-mt-unsafe)
  if (path == nullptr) return lines;
  std::ifstream in(path);
  std::string line;
  // A line being appended has no newline yet: it is read at a later wait.
  while (std::getline(in, line)) {
    if (!in.eof()) lines.push_back(line);
  }
  return lines;
}

NvmlDeviceOpaque* GpuOfMinor(unsigned int minor) {
  for (NvmlDeviceOpaque& gpu : Gpus()) {
    if (gpu.minor == minor) return &gpu;
  }
  return nullptr;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  Gpus().clear();
  for (const std::string& line : ScriptLines()) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "init-error") {
      int code = kUnknown;
      words >> code;
      return code;
    }
    if (kind != "gpu") continue;
    NvmlDeviceOpaque gpu;
    std::string flag;
    words >> gpu.minor >> gpu.uuid >> flag;
    gpu.watchable = flag != "unwatchable";
    Gpus().push_back(gpu);
  }
  return kSuccess;
}

int nvmlShutdown() { return kSuccess; }

const char* nvmlErrorString(int code) {
  switch (code) {
    case kSuccess:
      return "Success";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case 9:
      return "Driver Not Loaded";
    case kTimeout:
      return "Timeout";
    case 15:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(Gpus().size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, NvmlDeviceOpaque** device) {
  if (index >= Gpus().size()) return kInvalidArgument;
  *device = &Gpus()[index];
  return kSuccess;
}

int nvmlDeviceGetMinorNumber(NvmlDeviceOpaque* device, unsigned int* minor) {
  if (device == &Unnamed()) return kUnknown;
  *minor = device->minor;
  return kSuccess;
}

int nvmlDeviceGetUUID(NvmlDeviceOpaque* device, char* uuid, unsigned int size) {
  if (device->uuid.size() >= size) return kInvalidArgument;
  device->uuid.copy(uuid, device->uuid.size());
  uuid[device->uuid.size()] = '\0';
  return kSuccess;
}

int nvmlEventSetCreate(NvmlEventSetOpaque** set) {
  *set = new NvmlEventSetOpaque();
  return kSuccess;
}

int nvmlEventSetFree(NvmlEventSetOpaque* set) {
  delete set;
  return kSuccess;
}

// NOLINTNEXTLINE(google-runtime-int): NVML's signature
int nvmlDeviceGetSupportedEventTypes(NvmlDeviceOpaque* device, unsigned long long* types) {
  *types = device->watchable ? devmgr::plugins::kNvmlXidEvent : 0;
  return kSuccess;
}

// NOLINTNEXTLINE(google-runtime-int): NVML's signature
int nvmlDeviceRegisterEvents(NvmlDeviceOpaque* device, unsigned long long types,
                             NvmlEventSetOpaque* /*set*/) {
  if (!device->watchable) return kNotSupported;
  device->registered = (types & devmgr::plugins::kNvmlXidEvent) != 0;
  return kSuccess;
}

int nvmlEventSetWait_v2(NvmlEventSetOpaque* set, NvmlEventData* data, unsigned int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    size_t seen = 0;
    for (const std::string& line : ScriptLines()) {
      std::istringstream words(line);
      std::string kind;
      words >> kind;
      if (kind != "xid" && kind != "xid-unnamed" && kind != "wait-error") continue;
      if (seen++ < set->delivered) continue;
      ++set->delivered;
      if (kind == "wait-error") {
        int code = kUnknown;
        words >> code;
        return code;
      }
      NvmlDeviceOpaque* device = &Unnamed();
      if (kind == "xid") {
        unsigned int minor = 0;
        words >> minor;
        device = GpuOfMinor(minor);
        if (device == nullptr || !device->registered) continue;
      }
      *data = NvmlEventData{};
      data->device = device;
      data->type = devmgr::plugins::kNvmlXidEvent;
      words >> data->data;
      return kSuccess;
    }
    // The fake's own poll of its script, as NVML's wait blocks in the driver.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  return kTimeout;
}

}  // extern "C"
