#include "deviceplugin/cdi.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "common/file_id.h"
#include "common/file_store.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/temp_dir.h"

namespace devmgr::deviceplugin {
namespace {

DeviceMap TwoDevices() {
  DeviceMap devices;
  devices["d0"] = DeviceInfo{.nodes = {{"/dev/d0", "/dev/x0", "rw"}},
                             .mounts = {{"/opt/lib", "/usr/lib/x", true}},
                             .envs = {{"X", "0"}}};
  devices["d1"] = DeviceInfo{.health = Health::kUnhealthy, .nodes = {{"/dev/d1", "", "r"}}};
  return devices;
}

TEST(CdiTest, NamesFollowVendorAndClass) {
  CdiOptions options{.vendor = "example.com"};
  EXPECT_EQ(CdiKind(options, "gpu"), "example.com/gpu");
  EXPECT_EQ(CdiDeviceName(options, "gpu", "d0"), "example.com/gpu=d0");
  EXPECT_EQ(CdiSpecFileName(options, "gpu"), "example.com-gpu.json");
  options.class_name = "accel";
  EXPECT_EQ(CdiDeviceName(options, "gpu", "d0"), "example.com/accel-gpu=d0");
}

TEST(CdiTest, ATypeMayHaveAKindOfItsOwn) {
  CdiOptions options{.vendor = "example.com", .kinds = {{"gpu", "other.io/accel"}}};
  EXPECT_EQ(CdiKind(options, "gpu"), "other.io/accel");
  EXPECT_EQ(CdiDeviceName(options, "gpu", "d0"), "other.io/accel=d0");
  EXPECT_EQ(CdiSpecFileName(options, "gpu"), "other.io-accel.json");
  EXPECT_EQ(CdiKind(options, "fpga"), "example.com/fpga");
  EXPECT_TRUE(IsValidCdiKind("other.io/accel"));
  EXPECT_FALSE(IsValidCdiKind("other.io"));
  EXPECT_FALSE(IsValidCdiKind("a/b/c"));
  EXPECT_FALSE(IsValidCdiKind("/b"));

  testing::TempDir dir;
  options.folder = dir.path();
  ASSERT_TRUE(WriteCdiSpec(options, "gpu", TwoDevices()).ok());
  auto spec = nlohmann::json::parse(*ReadWholeFile(dir.Sub("other.io-accel.json")));
  EXPECT_EQ(spec["kind"], "other.io/accel");
  options.kinds["gpu"] = "no-slash";
  EXPECT_EQ(WriteCdiSpec(options, "gpu", TwoDevices()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CdiTest, SpecHasTheVersion050Shape) {
  CdiOptions options{.vendor = "example.com"};
  auto spec = nlohmann::json::parse(BuildCdiSpec(options, "gpu", TwoDevices()));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "example.com/gpu");
  ASSERT_EQ(spec["devices"].size(), 2u);
  const auto& d0 = spec["devices"][0];
  EXPECT_EQ(d0["name"], "d0");
  EXPECT_EQ(d0["containerEdits"]["deviceNodes"][0]["path"], "/dev/x0");
  EXPECT_EQ(d0["containerEdits"]["deviceNodes"][0]["hostPath"], "/dev/d0");
  EXPECT_EQ(d0["containerEdits"]["deviceNodes"][0]["permissions"], "rw");
  EXPECT_EQ(d0["containerEdits"]["env"][0], "X=0");
  options.with_envs = false;
  EXPECT_FALSE(nlohmann::json::parse(
                   BuildCdiSpec(options, "gpu", TwoDevices()))["devices"][0]["containerEdits"]
                   .contains("env"));
  EXPECT_EQ(d0["containerEdits"]["mounts"][0]["hostPath"], "/opt/lib");
  EXPECT_EQ(d0["containerEdits"]["mounts"][0]["containerPath"], "/usr/lib/x");
  EXPECT_EQ(d0["containerEdits"]["mounts"][0]["options"][0], "ro");
  // No container path: the host path is used in the container too.
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["path"], "/dev/d1");
}

TEST(CdiTest, WriteReplacesAtomicallyAndRemoveDeletes) {
  testing::TempDir dir;
  CdiOptions options{.folder = dir.Sub("cdi"), .vendor = "example.com"};
  ASSERT_TRUE(WriteCdiSpec(options, "gpu", TwoDevices()).ok());
  DeviceMap one;
  one["d9"] = DeviceInfo{.nodes = {{"/dev/d9", "", "rw"}}};
  one["bare"] = DeviceInfo{};  // no edits: CDI would refuse it, and the whole spec with it
  ASSERT_TRUE(WriteCdiSpec(options, "gpu", one).ok());
  const auto file = dir.Sub("cdi") / "example.com-gpu.json";
  auto spec = nlohmann::json::parse(*ReadWholeFile(file));
  ASSERT_EQ(spec["devices"].size(), 1u);
  EXPECT_EQ(spec["devices"][0]["name"], "d9");
  // Nothing but the spec is left in the folder (no temporary files).
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.Sub("cdi"))) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  ASSERT_TRUE(RemoveCdiSpec(options, "gpu").ok());
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_TRUE(RemoveCdiSpec(options, "gpu").ok());
}

// `placed` names the file at the path that holds what the write wrote: after an error past the
// rename (the folder's sync) too, and none when the write failed before it and the file there
// holds other bytes.
TEST(CdiTest, PlacedNamesTheFileThatHoldsWhatTheWriteWrote) {
  testing::TempDir dir;
  CdiOptions options{.folder = dir.path(), .vendor = "example.com"};
  const auto file = dir.Sub("example.com-gpu.json");
  std::optional<FileId> placed;
  ASSERT_TRUE(WriteCdiSpec(options, "gpu", TwoDevices(), &placed).ok());
  EXPECT_EQ(placed, StatId(file));

  DeviceMap one;
  one["d9"] = DeviceInfo{.nodes = {{"/dev/d9", "", "rw"}}};
  auto fail_at = [](FileStore::WriteStep failing) {
    return [failing](FileStore::WriteStep step) {
      return step == failing ? absl::UnavailableError("injected") : absl::OkStatus();
    };
  };
  options.fault_hook = fail_at(FileStore::WriteStep::kSyncFolder);
  EXPECT_EQ(WriteCdiSpec(options, "gpu", one, &placed).code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed, StatId(file));
  EXPECT_EQ(nlohmann::json::parse(*ReadWholeFile(file))["devices"].size(), 1u);

  options.fault_hook = fail_at(FileStore::WriteStep::kRename);
  EXPECT_EQ(WriteCdiSpec(options, "gpu", TwoDevices(), &placed).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(placed.has_value()) << "the file there holds the last write's one device";
}

// The CDI library's rules: a vendor and a class begin with a letter, a device name with a letter
// or digit; all end with one; '.' is allowed in the three, ':' in device names only.
TEST(CdiTest, NamesFollowTheCdiLibrarysRules) {
  EXPECT_TRUE(IsValidCdiKind("example.com/gpu-x_2.a"));
  EXPECT_TRUE(IsValidCdiKind("a/b"));
  EXPECT_FALSE(IsValidCdiKind("3dfx.com/gpu")) << "a vendor begins with a letter";
  EXPECT_FALSE(IsValidCdiKind("example.com/0gpu")) << "a class begins with a letter";
  EXPECT_FALSE(IsValidCdiKind("example.com/gpu-")) << "and ends with a letter or digit";
  EXPECT_FALSE(IsValidCdiKind("example.com./gpu"));
  EXPECT_FALSE(IsValidCdiKind("example.com/g:pu"));
  EXPECT_TRUE(IsValidCdiDeviceName("0"));
  EXPECT_TRUE(IsValidCdiDeviceName("0000:3b:00.0"));
  EXPECT_TRUE(IsValidCdiDeviceName("GPU-6f1c_a.b"));
  EXPECT_FALSE(IsValidCdiDeviceName(""));
  EXPECT_FALSE(IsValidCdiDeviceName("has space"));
  EXPECT_FALSE(IsValidCdiDeviceName("-a"));
  EXPECT_FALSE(IsValidCdiDeviceName("a:"));
  EXPECT_FALSE(IsValidCdiDeviceName("by-label=x"));
  EXPECT_FALSE(IsValidCdiDeviceName("caf\xc3\xa9"));

  DeviceMap devices = TwoDevices();
  devices["has space"] = devices["d0"];
  const auto spec = nlohmann::json::parse(BuildCdiSpec(CdiOptions{.vendor = "v"}, "t", devices));
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], "d0");
  EXPECT_EQ(spec["devices"][1]["name"], "d1");
}

TEST(CdiTest, RejectsBadNames) {
  testing::TempDir dir;
  CdiOptions options{.folder = dir.path(), .vendor = "bad/vendor"};
  EXPECT_EQ(WriteCdiSpec(options, "gpu", TwoDevices()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace devmgr::deviceplugin
