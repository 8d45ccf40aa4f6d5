// Which PCI function an NVIDIA GPU's node stands for, from the driver's procfs files
// (plugins/generic/nvidia_gpus.h), over the fake node of tests/plugins/fake_host.h, whose GPU
// nodes are /dev/null and /dev/zero and whose driver takes their major for its own.
#include "plugins/generic/nvidia_gpus.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/plugins/fake_host.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::plugins {
namespace {

using testing::FakeGpuHost;
using testing::TempDir;

dev_t NumberOf(const char* node) {
  struct stat st {};
  EXPECT_EQ(::stat(node, &st), 0) << node;
  return st.st_rdev;
}

class NvidiaGpusTest : public ::testing::Test {
 protected:
  std::optional<std::string> AddressOf(const char* node) {
    absl::StatusOr<std::optional<std::string>> address =
        NvidiaGpuPciAddress(NumberOf(node), host_.proc_root());
    EXPECT_TRUE(address.ok()) << address.status();
    return address.ok() ? *address : "error";
  }
  void ListDevices(const std::string& text) {
    std::ofstream(host_.proc_root() / "devices") << text;
  }

  TempDir dir_;
  FakeGpuHost host_{dir_.path()};
};

TEST_F(NvidiaGpusTest, EachGpuIsFoundByItsDeviceMinor) {
  EXPECT_EQ(AddressOf("/dev/null"), "0000:00:04.0");
  EXPECT_EQ(AddressOf("/dev/zero"), "0000:80:04.0");
  // The driver's major, a minor no GPU has (as nvidiactl's 255).
  EXPECT_EQ(AddressOf("/dev/full"), std::nullopt);
}

TEST_F(NvidiaGpusTest, TheMajorIsTheOneTheDriverRegisteredUnderEitherName) {
  const std::string major_of_null = std::to_string(major(NumberOf("/dev/null")));
  // The proprietary modules before the open ones register "nvidia-frontend".
  ListDevices("Character devices:\n" + major_of_null + " nvidia-frontend\n");
  EXPECT_EQ(AddressOf("/dev/null"), "0000:00:04.0");
  // The GPUs' minors under another major (nvidia-uvm's, a block device's) are not theirs.
  ListDevices("Character devices:\n" + major_of_null + " nvidia-uvm\n\nBlock devices:\n" +
              major_of_null + " nvidia\n");
  EXPECT_EQ(AddressOf("/dev/null"), std::nullopt);
  ListDevices("Character devices:\n195 nvidia\n");
  EXPECT_EQ(AddressOf("/dev/null"), std::nullopt);
}

TEST_F(NvidiaGpusTest, NoDriverMeansNoGpu) {
  TempDir empty;
  absl::StatusOr<std::optional<std::string>> address =
      NvidiaGpuPciAddress(NumberOf("/dev/null"), empty.path());
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, std::nullopt);
  // A driver that lists no GPU folder.
  std::filesystem::remove_all(host_.proc_root() / "driver" / "nvidia" / "gpus");
  EXPECT_EQ(AddressOf("/dev/null"), std::nullopt);
}

TEST_F(NvidiaGpusTest, AGpuFolderWithoutADeviceMinorIsSkippedAndAGarbledOneIsAnError) {
  std::ofstream(host_.InformationFile(0)) << "Model: \t\t NVIDIA H200\n";
  EXPECT_EQ(AddressOf("/dev/null"), std::nullopt);
  EXPECT_EQ(AddressOf("/dev/zero"), "0000:80:04.0");
  std::ofstream(host_.InformationFile(0)) << "Device Minor: \t -1\n";
  absl::StatusOr<std::optional<std::string>> address =
      NvidiaGpuPciAddress(NumberOf("/dev/zero"), host_.proc_root());
  ASSERT_FALSE(address.ok());
  EXPECT_NE(address.status().message().find(host_.InformationFile(0).string()), std::string::npos)
      << address.status();
}

}  // namespace
}  // namespace devmgr::plugins
