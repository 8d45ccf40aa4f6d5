// `devmgr dra checkpoint verify|show`, run as a user runs them, on the kubelet's own fixtures
// (tests/testdata/dra) and on files devmgr writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dra/checkpoint.h"
#include "nlohmann/json.hpp"
#include "tests/dra/dra_samples.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::cli {
namespace {

using testing::ProcessResult;
using testing::RunDevmgr;
using testing::TempDir;

std::string Sample(const std::string& name) {
  return (std::filesystem::path(DEVMGR_DRA_SAMPLES_DIR) / name).string();
}

TEST(DraCommandTest, VerifyKubeletFixtures) {
  for (const auto& [file, text] : std::vector<std::pair<std::string, std::string>>{
           {"single-claim-info-state.json",
            "valid: checksum 1597924435, layout no ShareID, 1 claims"},
           {"two-claim-info-states.json",
            "valid: checksum 3633532417, layout no ShareID, 2 claims"},
           {"claim-info-state-list.json",
            "valid: checksum 1656016162, layout no ShareID, ClaimInfoStateList, 1 claims"}}) {
    ProcessResult r = RunDevmgr({"dra", "checkpoint", "verify", Sample(file)});
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.err;
    EXPECT_EQ(r.out, text + "\n") << file;
  }
}

TEST(DraCommandTest, VerifyMismatchPrintsBothValuesAndExitsOne) {
  ProcessResult r = RunDevmgr({"dra", "checkpoint", "verify", Sample("incorrect-checksum.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "checksum mismatch: stored 2930258365, computed 3633532417\n");
  ProcessResult shown = RunDevmgr({"dra", "checkpoint", "show", Sample("incorrect-checksum.json")});
  EXPECT_EQ(shown.exit_code, 1) << "the content is shown, the verdict is still no";
  EXPECT_NE(shown.out.find("MISMATCH: computed 3633532417"), std::string::npos) << shown.out;
}

TEST(DraCommandTest, UnreadableOrMalformedExitsTwo) {
  TempDir dir;
  std::ofstream(dir.Sub("cut")) << "{";
  ProcessResult cut = RunDevmgr({"dra", "checkpoint", "verify", dir.Sub("cut").string()});
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_NE(cut.err.find("unexpected end of JSON input"), std::string::npos) << cut.err;
  ProcessResult missing = RunDevmgr({"dra", "checkpoint", "verify", dir.Sub("none").string()});
  EXPECT_EQ(missing.exit_code, 2);
}

TEST(DraCommandTest, ShowJsonListsClaimsDevicesAndShares) {
  TempDir dir;
  dra::CheckpointData data{std::vector<dra::ClaimInfoState>{
      {"uid-1", "gpu", "team-a", std::set<std::string>{"pod-1", "pod-2"},
       std::map<std::string, dra::DriverState>{
           {"gpu.example.com",
            dra::DriverState{std::vector<dra::CheckpointDevice>{
                {"node-1", "gpu-0", std::string("share-7"), dra::GoStrings({"req"}),
                 dra::GoStrings({"gpu.example.com/gpu=gpu-0"})}}}}}}}};
  std::ofstream(dir.Sub("state"), std::ios::binary) << dra::Encode(data);
  ProcessResult r =
      RunDevmgr({"dra", "checkpoint", "show", "-o", "json", dir.Sub("state").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["layout"], "ShareID");
  EXPECT_TRUE(out["valid"].get<bool>());
  const auto& claim = out["claims"][0];
  EXPECT_EQ(claim["namespace"], "team-a");
  EXPECT_EQ(claim["podUIDs"], nlohmann::json({"pod-1", "pod-2"}));
  const auto& device = claim["drivers"]["gpu.example.com"][0];
  EXPECT_EQ(device["deviceName"], "gpu-0");
  EXPECT_EQ(device["shareID"], "share-7");
  EXPECT_EQ(device["cdiDeviceIDs"], nlohmann::json({"gpu.example.com/gpu=gpu-0"}));
  EXPECT_FALSE(claim.contains("skipNodeOperations")) << "no driver skips anything";

  ProcessResult table = RunDevmgr({"dra", "checkpoint", "show", dir.Sub("state").string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("team-a/gpu"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("node-1/gpu-0"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("share-7"), std::string::npos) << table.out;
}

// DRAOptionalNodeOperations: the operations a driver is not called for, per claim and driver.
TEST(DraCommandTest, ShowJsonListsTheNodeOperationsEachDriverSkips) {
  TempDir dir;
  dra::DriverState skipping;
  skipping.skip_node_operations =
      dra::GoStrings({"NodePrepareResources", "NodeUnprepareResources"});
  dra::CheckpointData data{std::vector<dra::ClaimInfoState>{
      {"uid-1", "vnet", "team-a", std::set<std::string>{"pod-1"},
       std::map<std::string, dra::DriverState>{{"control-plane.example.com", skipping}}}}};
  std::ofstream(dir.Sub("state"), std::ios::binary) << dra::Encode(data);
  ProcessResult r =
      RunDevmgr({"dra", "checkpoint", "show", "-o", "json", dir.Sub("state").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json claim = nlohmann::json::parse(r.out)["claims"][0];
  EXPECT_EQ(claim["skipNodeOperations"],
            nlohmann::json({{"control-plane.example.com",
                             {"NodePrepareResources", "NodeUnprepareResources"}}}));
}

}  // namespace
}  // namespace devmgr::cli
