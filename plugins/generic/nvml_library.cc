#include "plugins/generic/nvml_library.h"

#include <dlfcn.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/library_symbols.h"

namespace devmgr::plugins {
namespace {

// NVML's status codes that this file tells apart.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlTimeout = 10;

// NVML_DEVICE_UUID_V2_BUFFER_SIZE.
constexpr unsigned int kUuidBufferSize = 96;

}  // namespace

struct NvmlLibrary::Functions {
  // NOLINTBEGIN(google-runtime-int): NVML's signatures
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*device_count)(unsigned int*) = nullptr;
  int (*device_by_index)(unsigned int, Device*) = nullptr;
  int (*minor_number)(Device, unsigned int*) = nullptr;
  int (*uuid)(Device, char*, unsigned int) = nullptr;
  int (*event_set_create)(NvmlEventSetOpaque**) = nullptr;
  int (*event_set_free)(NvmlEventSetOpaque*) = nullptr;
  int (*supported_events)(Device, unsigned long long*) = nullptr;
  int (*register_events)(Device, unsigned long long, NvmlEventSetOpaque*) = nullptr;
  int (*event_set_wait)(NvmlEventSetOpaque*, NvmlEventData*, unsigned int) = nullptr;
  // NOLINTEND(google-runtime-int)
};

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& library) {
  // Never closed: NVML may keep threads of its own until the process ends.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "NVML (", library, ") cannot be loaded: ", dlerror(), "; it comes with NVIDIA's driver"));
  }
  auto functions = std::make_unique<Functions>();
  LibrarySymbols symbols(handle);
  symbols.Find("nvmlInit_v2", functions->init);
  symbols.Find("nvmlShutdown", functions->shutdown);
  symbols.Find("nvmlErrorString", functions->error_string);
  symbols.Find("nvmlDeviceGetCount_v2", functions->device_count);
  symbols.Find("nvmlDeviceGetHandleByIndex_v2", functions->device_by_index);
  symbols.Find("nvmlDeviceGetMinorNumber", functions->minor_number);
  symbols.Find("nvmlDeviceGetUUID", functions->uuid);
  symbols.Find("nvmlEventSetCreate", functions->event_set_create);
  symbols.Find("nvmlEventSetFree", functions->event_set_free);
  symbols.Find("nvmlDeviceGetSupportedEventTypes", functions->supported_events);
  symbols.Find("nvmlDeviceRegisterEvents", functions->register_events);
  symbols.Find("nvmlEventSetWait_v2", functions->event_set_wait);
  if (symbols.missing() != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(library, " has no function ",
                                                      symbols.missing(),
                                                      ": NVIDIA's driver 450 or later is needed"));
  }
  if (const int code = functions->init(); code != kNvmlSuccess) {
    return absl::FailedPreconditionError(absl::StrCat(
        "NVML (", library, ") cannot start: nvmlInit: ", functions->error_string(code)));
  }
  std::unique_ptr<NvmlLibrary> nvml(new NvmlLibrary(std::move(functions)));
  if (const int code = nvml->functions_->event_set_create(&nvml->event_set_);
      code != kNvmlSuccess) {
    return nvml->Error("nvmlEventSetCreate", code);
  }
  return nvml;
}

NvmlLibrary::NvmlLibrary(std::unique_ptr<Functions> functions) : functions_(std::move(functions)) {}

NvmlLibrary::~NvmlLibrary() {
  if (event_set_ != nullptr) functions_->event_set_free(event_set_);
  functions_->shutdown();
}

absl::Status NvmlLibrary::Error(const char* call, int code) const {
  return absl::FailedPreconditionError(absl::StrCat(call, ": ", functions_->error_string(code)));
}

absl::StatusOr<std::vector<NvmlLibrary::Gpu>> NvmlLibrary::Gpus() const {
  unsigned int count = 0;
  if (const int code = functions_->device_count(&count); code != kNvmlSuccess) {
    return Error("nvmlDeviceGetCount", code);
  }
  std::vector<Gpu> gpus;
  for (unsigned int index = 0; index < count; ++index) {
    Gpu gpu;
    if (const int code = functions_->device_by_index(index, &gpu.handle); code != kNvmlSuccess) {
      return Error("nvmlDeviceGetHandleByIndex", code);
    }
    absl::StatusOr<unsigned int> minor = MinorOf(gpu.handle);
    if (!minor.ok()) return minor.status();
    gpu.minor = *minor;
    char uuid[kUuidBufferSize] = {};
    if (const int code = functions_->uuid(gpu.handle, uuid, sizeof(uuid)); code != kNvmlSuccess) {
      return Error("nvmlDeviceGetUUID", code);
    }
    gpu.uuid = uuid;
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

absl::StatusOr<unsigned int> NvmlLibrary::MinorOf(Device device) const {
  unsigned int minor = 0;
  if (const int code = functions_->minor_number(device, &minor); code != kNvmlSuccess) {
    return Error("nvmlDeviceGetMinorNumber", code);
  }
  return minor;
}

absl::Status NvmlLibrary::Watch(const Gpu& gpu) {
  unsigned long long supported = 0;  // NOLINT(google-runtime-int)
  if (const int code = functions_->supported_events(gpu.handle, &supported); code != kNvmlSuccess) {
    return Error("nvmlDeviceGetSupportedEventTypes", code);
  }
  if ((supported & kNvmlXidEvent) == 0) {
    return absl::FailedPreconditionError("the GPU reports no XID events to NVML");
  }
  if (const int code = functions_->register_events(gpu.handle, kNvmlXidEvent, event_set_);
      code != kNvmlSuccess) {
    return Error("nvmlDeviceRegisterEvents", code);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<NvmlLibrary::Event>> NvmlLibrary::Wait(absl::Duration timeout) {
  NvmlEventData data{};
  const auto milliseconds = static_cast<unsigned int>(absl::ToInt64Milliseconds(timeout));
  const int code = functions_->event_set_wait(event_set_, &data, milliseconds);
  if (code == kNvmlTimeout) return std::nullopt;
  if (code != kNvmlSuccess) return Error("nvmlEventSetWait", code);
  return Event{.device = data.device, .type = data.type, .data = data.data};
}

}  // namespace devmgr::plugins
