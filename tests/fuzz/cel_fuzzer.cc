// Fuzz target for the CEL evaluator (cel/program.h), which reads selectors from DeviceClasses and
// ResourceClaims that any user writes: any text is either refused at compile time with
// InvalidArgument, or evaluates against a device to a bool or an evaluation error, within the
// cost limit; never a crash, a hang or another kind of failure. A program that compiled once
// compiles again to the same result.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cel/program.h"
#include "tests/fuzz/invariant.h"

namespace {

devmgr::cel::Device FuzzDevice() {
  devmgr::cel::Device device;
  device.driver = "gpu.example.com";
  device.attributes["model"] = devmgr::cel::Value::String("a100");
  device.attributes["index"] = devmgr::cel::Value::Int(3);
  device.attributes["ready"] = devmgr::cel::Value::Bool(true);
  device.attributes["version"] =
      devmgr::cel::Value::SemverOf(*devmgr::kubeapi::Semver::Parse("1.2.3"));
  device.attributes["ids"] =
      devmgr::cel::Value::ListOf({devmgr::cel::Value::Int(1), devmgr::cel::Value::Int(2)});
  device.capacity["memory"] = *devmgr::kubeapi::Quantity::Parse("40Gi");
  return device;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using devmgr::fuzz::Invariant;
  const std::string text(reinterpret_cast<const char*>(data), size);
  devmgr::cel::CompileOptions options;
  options.cost_limit = 100'000;  // enough for every selector, small enough to keep runs quick
  const absl::StatusOr<std::shared_ptr<const devmgr::cel::Program>> program =
      devmgr::cel::Program::Compile(text, options);
  if (!program.ok()) {
    Invariant(program.status().code() == absl::StatusCode::kInvalidArgument,
              "text that does not compile is InvalidArgument");
    return 0;
  }
  static const devmgr::cel::Device device = FuzzDevice();
  uint64_t cost = 0;
  const absl::StatusOr<bool> matched = (*program)->Matches(device, &cost);
  Invariant(matched.ok() || matched.status().code() == absl::StatusCode::kInvalidArgument,
            "an evaluation gives a bool or an evaluation error");
  // The cost may pass the limit by the step that passed it, never by a whole loop.
  Invariant(cost <= options.cost_limit + 100'000, "the cost limit stops the evaluation");
  const absl::StatusOr<bool> again = (*program)->Matches(device);
  Invariant(again.ok() == matched.ok() && (!again.ok() || *again == *matched),
            "an evaluation is deterministic");
  return 0;
}
