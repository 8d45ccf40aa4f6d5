// XidWatch and NvmlLibrary against tests/plugins/fake_nvml.cc, a stand-in for libnvidia-ml that
// plays a script of GPUs and events (DEVMGR_FAKE_NVML names the built library; each test writes
// its own script and names it in FAKE_NVML_SCRIPT).
#include "plugins/generic/xid_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "plugins/generic/nvml_library.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::plugins {
namespace {

using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

std::string FakeNvml() {
  const char* path = std::getenv("DEVMGR_FAKE_NVML");  // NOLINT(concurrency-mt-unsafe)
  return path == nullptr ? "" : path;
}

class XidWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(FakeNvml().empty()) << "DEVMGR_FAKE_NVML is not set: run through meson test";
    // Before any watch's thread reads it.
    ::setenv("FAKE_NVML_SCRIPT", script_.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  }

  // Append adds lines to the script; the fake reads each once it ends with its newline.
  void Append(const std::string& lines) { std::ofstream(script_, std::ios::app) << lines; }

  std::unique_ptr<XidWatch> Start(const std::string& gpus) {
    Append(gpus);
    absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(FakeNvml());
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    if (!nvml.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<XidWatch>> watch =
        XidWatch::Start(*std::move(nvml), {.wait = absl::Milliseconds(20)});
    EXPECT_TRUE(watch.ok()) << watch.status();
    return watch.ok() ? *std::move(watch) : nullptr;
  }

  TempDir dir_;
  const std::string script_ = (dir_.path() / "script").string();
};

constexpr char kTwoGpus[] = "gpu 0 GPU-aaaa\ngpu 1 GPU-bbbb\n";
const std::vector<uint64_t> kApplication = {13, 31, 43, 45, 68, 109};

TEST_F(XidWatchTest, OpenListsTheGpusInNvmlsOrder) {
  Append("gpu 3 GPU-3333\ngpu 1 GPU-1111\n");
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(FakeNvml());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  absl::StatusOr<std::vector<NvmlLibrary::Gpu>> gpus = (*nvml)->Gpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].minor, 3u);
  EXPECT_EQ((*gpus)[0].uuid, "GPU-3333");
  EXPECT_EQ((*gpus)[1].minor, 1u);
  EXPECT_EQ((*gpus)[1].uuid, "GPU-1111");
  // No event within the wait: nullopt, not an error.
  absl::StatusOr<std::optional<NvmlLibrary::Event>> event = (*nvml)->Wait(absl::Milliseconds(1));
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->has_value());
}

// Each failure names the library, or the NVML call and NVML's own words.
TEST_F(XidWatchTest, OpenNamesTheLibraryAndNvmlsReason) {
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> missing =
      NvmlLibrary::Open(dir_.path() / "libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(
      missing.status().message(),
      "NVML (" + (dir_.path() / "libnvidia-ml.so.1").string() + ") cannot be loaded: "))
      << missing.status();
  // A library that is no NVML.
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> other = NvmlLibrary::Open("libz.so.1");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "libz.so.1 has no function nvmlInit_v2: NVIDIA's driver 450 or later is needed");
  Append("gpu 0 GPU-aaaa\ninit-error 9\n");
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> unloaded = NvmlLibrary::Open(FakeNvml());
  ASSERT_FALSE(unloaded.ok());
  EXPECT_EQ(unloaded.status().message(),
            "NVML (" + FakeNvml() + ") cannot start: nvmlInit: Driver Not Loaded");
}

// An XID outside the group's ignored ones is a fault of its GPU from then on; the other GPU
// stays fine, and a minor NVML does not list is a fault of its own.
TEST_F(XidWatchTest, AnXidOutsideTheIgnoredOnesIsAFaultForGood) {
  std::unique_ptr<XidWatch> watch = Start(kTwoGpus);
  ASSERT_NE(watch, nullptr);
  EXPECT_EQ(watch->Fault(0, kApplication), std::nullopt);
  EXPECT_EQ(watch->Fault(1, kApplication), std::nullopt);
  EXPECT_EQ(watch->Fault(7, kApplication), "NVML lists no GPU with device minor 7");

  // Events come in order: once GPU 0's 79 shows, GPU 1's 13 came before it.
  Append("xid 1 13\nxid 0 79\n");
  ASSERT_TRUE(WaitFor([&] { return watch->Fault(0, kApplication).has_value(); }, 10s));
  EXPECT_EQ(watch->Fault(0, kApplication), "XID 79");
  EXPECT_EQ(watch->Fault(0, {79}), std::nullopt);
  EXPECT_EQ(watch->Fault(1, kApplication), std::nullopt);
  EXPECT_EQ(watch->Fault(1, {}), "XID 13");

  // The first XID the group does not ignore is named.
  Append("xid 0 48\n");
  ASSERT_TRUE(WaitFor([&] { return watch->Fault(0, {79}).has_value(); }, 10s));
  EXPECT_EQ(watch->Fault(0, {79}), "XID 48");
  EXPECT_EQ(watch->Fault(0, {}), "XID 79");
}

// The scanner is told of each XID a GPU reports for the first time (it may make the GPU
// faulty), not of a repeat, and of a failed watch; a listener replaced hears no more.
TEST_F(XidWatchTest, ANewXidOrAFailedWatchTellsTheListener) {
  std::unique_ptr<XidWatch> watch = Start(kTwoGpus);
  ASSERT_NE(watch, nullptr);
  std::atomic<int> first{0};
  watch->OnChange([&first] { ++first; });
  // Events come in order: once GPU 1's 48 shows, the others came before it.
  Append("xid 1 13\nxid 0 79\nxid 0 79\nxid 1 48\n");
  ASSERT_TRUE(WaitFor([&] { return watch->Fault(1, {13}).has_value(); }, 10s));
  EXPECT_EQ(first, 3);

  std::atomic<int> second{0};
  watch->OnChange([&second] { ++second; });
  Append("wait-error 15\n");
  ASSERT_TRUE(WaitFor([&] { return watch->Fault(0, {79}).has_value(); }, 10s));
  EXPECT_EQ(second, 1);
  EXPECT_EQ(first, 3);
}

// As NVIDIA's device plugin: a GPU whose events NVML cannot register is served unhealthy.
TEST_F(XidWatchTest, AGpuWhoseEventsCannotBeWatchedIsFaultyFromTheStart) {
  std::unique_ptr<XidWatch> watch = Start("gpu 0 GPU-aaaa unwatchable\ngpu 1 GPU-bbbb\n");
  ASSERT_NE(watch, nullptr);
  EXPECT_EQ(watch->Fault(0, kApplication),
            "its XID events cannot be watched: the GPU reports no XID events to NVML");
  EXPECT_EQ(watch->Fault(1, kApplication), std::nullopt);
}

// A wait that fails leaves no GPU watched: all of them are faulty, for good.
TEST_F(XidWatchTest, AFailedWaitMakesEveryGpuFaulty) {
  std::unique_ptr<XidWatch> watch = Start(kTwoGpus);
  ASSERT_NE(watch, nullptr);
  Append("wait-error 15\n");
  ASSERT_TRUE(WaitFor([&] { return watch->Fault(1, kApplication).has_value(); }, 10s));
  const std::string failed = "the watch for XID errors failed: nvmlEventSetWait: GPU is lost";
  EXPECT_EQ(watch->Fault(0, kApplication), failed);
  EXPECT_EQ(watch->Fault(1, kApplication), failed);
}

// An XID whose GPU NVML cannot name could be any GPU's.
TEST_F(XidWatchTest, AnXidOfAGpuNvmlCannotNameMakesEveryGpuFaulty) {
  std::unique_ptr<XidWatch> watch = Start(kTwoGpus);
  ASSERT_NE(watch, nullptr);
  Append("xid-unnamed 79\n");
  ASSERT_TRUE(WaitFor([&] { return watch->Fault(0, kApplication).has_value(); }, 10s));
  const std::string unnamed =
      "XID 79 of a GPU NVML cannot name: nvmlDeviceGetMinorNumber: Unknown Error";
  EXPECT_EQ(watch->Fault(0, kApplication), unnamed);
  EXPECT_EQ(watch->Fault(1, kApplication), unnamed);
}

}  // namespace
}  // namespace devmgr::plugins
