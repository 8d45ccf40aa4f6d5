// `devmgr bench --quick -o json`: every measurement runs against a real daemon and plugins and
// the report has its documented shape. No timing is asserted: only that figures are there,
// positive, and that each ratio is its median over its floor.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

using testing::DevmgrBinary;
using testing::RunProcess;

TEST(BenchCommandTest, QuickRunReportsEveryMeasurementBesideItsFloor) {
  // --devices overrides the quick size: the report must say so.
  const auto result =
      RunProcess({DevmgrBinary(), "bench", "--quick", "--devices", "7", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << result.out;
  // Standard error is not a terminal here: no progress lines.
  EXPECT_EQ(result.err.find("devmgr bench: ["), std::string::npos) << result.err;

  EXPECT_EQ(report["sizes"]["devices"], 7);
  EXPECT_EQ(report["sizes"]["pods"], 4);
  EXPECT_EQ(report["sizes"]["checkpoint_entries"], 10);
  EXPECT_EQ(report["sizes"]["dra_pods"], 4);
  EXPECT_EQ(report["sizes"]["publish_devices"], 256);

  const auto& results = report["results"];
  ASSERT_TRUE(results.is_array());
  std::vector<std::string> names;
  for (const auto& row : results) {
    const std::string name = row["name"];
    names.push_back(name);
    ASSERT_TRUE(row["median"].is_number()) << name;
    EXPECT_GT(row["median"].get<double>(), 0) << name;
    ASSERT_TRUE(row["unit"].is_string()) << name;
    ASSERT_TRUE(row["higher_is_better"].is_boolean()) << name;
    if (row["floor_median"].is_null()) {
      EXPECT_TRUE(row["ratio"].is_null()) << name;
      continue;
    }
    const double floor = row["floor_median"];
    EXPECT_GT(floor, 0) << name;
    EXPECT_FALSE(row["floor"].get<std::string>().empty()) << name;
    EXPECT_NEAR(row["ratio"].get<double>(), row["median"].get<double>() / floor, 1e-9 * floor)
        << name;
  }
  const std::vector<std::string> expected = {
      "admit pod, 1 container x 1 device",
      "admissions/s, 8 admitters x 8 plugins",
      "ListAndWatch 7 devices to allocatable",
      "ListAndWatch 7 devices, beside decoding",
      "PodResources GetAllocatableResources, 7 devices",
      "PodResources List, 4 pods x 4 containers x 2 devices",
      "PodResources List after a pod changed, 4 pods x 4 containers x 2 devices",
      "PodResources List calls/s, 4 pods x 4 containers x 2 devices",
      "DRA admit pod, 1 claim",
      "DRA pods/s, 4 pods x 2 claims, 8 admitters",
      "DRA publish 256 devices as 2 ResourceSlices into the daemon",
      "DRA allocate 1 claim x 2 requests, matchAttribute, 8 devices",
      "DRA allocate 1 claim x 2 requests, matchAttribute, 64 devices",
      "DRA allocate 1 claim x 2 requests, matchAttribute, 128 devices",
      "DRA allocate 1 claim x 2 requests, matchAttribute, 1024 devices",
      "restart, 10-entry checkpoint, to PodResources",
      "restart, 10-entry checkpoint, beside a fresh process decoding it",
      "resident memory, idle",
      "resident memory, 2 plugins x 4 devices + 4 pods, right after the last admission",
      "resident memory, 2 plugins x 4 devices + 4 pods",
      "peak resident memory, 2 plugins x 4 devices + 4 pods",
  };
  EXPECT_EQ(names, expected);
}

// On a terminal, standard error says which measurement runs, one line as each starts: a full run
// takes minutes.
TEST(BenchCommandTest, SaysWhichMeasurementRunsWhenStderrIsATerminal) {
  int terminal = -1;
  int terminal_side = -1;
  ASSERT_EQ(::openpty(&terminal, &terminal_side, nullptr, nullptr, nullptr), 0);
  const testing::TempDir dir;
  const std::string report = dir.Sub("report.json").string();
  const std::string program = DevmgrBinary();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    const int out = ::open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(terminal_side, STDERR_FILENO) < 0) {
      ::_exit(127);
    }
    ::execl(program.c_str(), program.c_str(), "bench", "--quick", "--only", "restart,memory", "-o",
            "json", nullptr);
    ::_exit(127);
  }
  ::close(terminal_side);
  // Everything the child writes on the terminal, until it has closed it (read fails with EIO).
  std::string err;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(terminal, buffer, sizeof(buffer));
    if (n > 0) {
      err.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(terminal);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  // The terminal ends lines with \r\n.
  EXPECT_EQ(err,
            "devmgr bench: [1/2] restart with a 10-entry checkpoint\r\n"
            "devmgr bench: [2/2] memory of 2 plugins x 4 devices and 4 pods\r\n");
}

TEST(BenchCommandTest, RefusesANonPositiveSize) {
  const auto result = RunProcess({DevmgrBinary(), "bench", "--quick", "--samples", "0"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_FALSE(result.err.empty());
}

}  // namespace
}  // namespace devmgr
