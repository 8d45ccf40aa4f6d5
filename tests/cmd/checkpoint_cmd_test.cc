// `devmgr checkpoint verify|show`, run as a user runs them.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::cli {
namespace {

using testing::ProcessResult;
using testing::RunDevmgr;
using testing::TempDir;

// envs {"A": "1"}, one device spec and one CDI device, protobuf-encoded by hand so that this
// test does not share the code under test: field 1 map entry, field 3 DeviceSpec, field 5 CDI.
const std::string kAllocResp = std::string("\x0a\x06\x0a\x01\x41\x12\x01\x31", 8) +
                               std::string("\x1a\x14\x0a\x08/dev/gpu\x12\x08/dev/gpu", 22) +
                               std::string("\x2a\x0b\x0a\x09v.com/c=0", 13);

class CheckpointCommandTest : public ::testing::Test {
 protected:
  std::string WriteFile(const std::string& name, const std::string& bytes) {
    const auto path = dir_.Sub(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  std::string GoodCheckpoint() {
    checkpoint::CheckpointData data;
    data.pod_device_entries.push_back(
        {"uid-1", "app", "example.com/gpu", {{0, {"gpu0"}}, {1, {"gpu1"}}}, kAllocResp});
    data.registered_devices["example.com/gpu"] = {"gpu0", "gpu1", "gpu2"};
    return WriteFile("good", checkpoint::Encode(data));
  }

  TempDir dir_;
};

TEST_F(CheckpointCommandTest, VerifyValid) {
  ProcessResult r = RunDevmgr({"checkpoint", "verify", GoodCheckpoint()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid"), std::string::npos);
  EXPECT_NE(r.out.find("1 entries"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(CheckpointCommandTest, VerifyMismatchPrintsBothValuesAndExitsOne) {
  std::string bytes = *ReadWholeFile(GoodCheckpoint());
  const size_t at = bytes.find("\"Checksum\":") + 11;
  const std::string stored = bytes.substr(at, bytes.size() - at - 1);
  bytes.replace(at, stored.size(), "12345");
  ProcessResult r = RunDevmgr({"checkpoint", "verify", WriteFile("bad", bytes)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("stored 12345, computed " + stored), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;

  ProcessResult json = RunDevmgr({"checkpoint", "verify", "-o", "json", dir_.Sub("bad").string()});
  EXPECT_EQ(json.exit_code, 1);
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["valid"], false);
  EXPECT_EQ(parsed["storedChecksum"], 12345);
  EXPECT_EQ(std::to_string(parsed["computedChecksum"].get<uint64_t>()), stored);
}

TEST_F(CheckpointCommandTest, UnreadableOrMalformedExitsTwo) {
  ProcessResult missing = RunDevmgr({"checkpoint", "verify", dir_.Sub("nope").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("No such file"), std::string::npos) << missing.err;

  ProcessResult malformed = RunDevmgr({"checkpoint", "verify", WriteFile("m", "{\"Data\":[")});
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_NE(malformed.err.find("not a valid checkpoint"), std::string::npos) << malformed.err;
  EXPECT_EQ(std::count(malformed.err.begin(), malformed.err.end(), '\n'), 1) << malformed.err;

  ProcessResult folder = RunDevmgr({"checkpoint", "show", dir_.path().string()});
  EXPECT_EQ(folder.exit_code, 2);
}

TEST_F(CheckpointCommandTest, BadUsageExitsTwo) {
  EXPECT_EQ(RunDevmgr({"checkpoint", "verify"}).exit_code, 2);
  EXPECT_EQ(RunDevmgr({"checkpoint"}).exit_code, 2);
  EXPECT_EQ(RunDevmgr({"checkpoint", "show", "-o", "xml", GoodCheckpoint()}).exit_code, 2);
  EXPECT_EQ(RunDevmgr({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(RunDevmgr({"--help"}).exit_code, 0);
}

TEST_F(CheckpointCommandTest, ShowTable) {
  ProcessResult r = RunDevmgr({"checkpoint", "show", GoodCheckpoint()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* want :
       {"POD UID", "uid-1", "app", "example.com/gpu", "0:gpu0 1:gpu1", "env         A=1",
        "/dev/gpu -> /dev/gpu", "cdi         v.com/c=0", "gpu0,gpu1,gpu2", "(valid)"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
}

// A checkpoint's names are shown, never obeyed: a control character a plugin or an editor put in
// one (an escape sequence that recolours or clears the terminal, a newline that forges a row) is
// printed escaped and quoted, in the table and in the allocations alike. Before, `show` wrote
// them raw.
TEST_F(CheckpointCommandTest, ShowEscapesControlCharacters) {
  checkpoint::CheckpointData data;
  // envs {"A": "\x1b[2J"}: field 1 map entry, its key and value.
  const std::string response = std::string("\x0a\x09\x0a\x01\x41\x12\x04\x1b[2J", 11);
  data.pod_device_entries.push_back(
      {"uid\x1b[31m", "app\nforged row", "example.com/gpu", {{0, {"gpu0"}}}, response});
  data.registered_devices["example.com/gpu"] = {"gpu0"};
  ProcessResult r =
      RunDevmgr({"checkpoint", "show", WriteFile("hostile", checkpoint::Encode(data))});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\nforged row"), std::string::npos) << r.out;
  for (const char* want : {"\"uid\\x1b[31m\"", "\"app\\nforged row\"", "A=\"\\x1b[2J\""}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
}

TEST_F(CheckpointCommandTest, ShowJson) {
  ProcessResult r = RunDevmgr({"checkpoint", "show", "--output=json", GoodCheckpoint()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["format"], "current");
  EXPECT_EQ(out["valid"], true);
  ASSERT_EQ(out["podDeviceEntries"].size(), 1U);
  const auto& entry = out["podDeviceEntries"][0];
  EXPECT_EQ(entry["podUID"], "uid-1");
  EXPECT_EQ(entry["deviceIDs"]["1"][0], "gpu1");
  EXPECT_EQ(entry["allocResp"]["envs"]["A"], "1");
  EXPECT_EQ(entry["allocResp"]["devices"][0]["containerPath"], "/dev/gpu");
  EXPECT_EQ(entry["allocResp"]["cdiDevices"][0]["name"], "v.com/c=0");
  EXPECT_EQ(out["registeredDevices"]["example.com/gpu"].size(), 3U);
}

// verify and show print through the printer every command uses: the same indentation as
// `podresources -o json` (four spaces, kubectl's), YAML of the same object, and wide = table.
TEST_F(CheckpointCommandTest, EveryFormatThroughOnePrinter) {
  const std::string file = GoodCheckpoint();
  ProcessResult json = RunDevmgr({"checkpoint", "verify", "-o", "json", file});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{\n    \"file\": ", 0), 0u) << json.out;

  ProcessResult yaml = RunDevmgr({"checkpoint", "show", "-o", "yaml", file});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const YAML::Node doc = YAML::Load(yaml.out);
  EXPECT_EQ(doc["format"].as<std::string>(), "current");
  EXPECT_EQ(doc["podDeviceEntries"][0]["deviceIDs"]["1"][0].as<std::string>(), "gpu1");
  EXPECT_EQ(doc["podDeviceEntries"][0]["allocResp"]["envs"]["A"].as<std::string>(), "1");
  // A number stays a number; a string that reads as one is quoted.
  EXPECT_NE(
      yaml.out.find("storedChecksum: " + std::to_string(doc["storedChecksum"].as<uint64_t>())),
      std::string::npos)
      << yaml.out;
  EXPECT_NE(yaml.out.find("A: \"1\""), std::string::npos) << yaml.out;
  EXPECT_NE(yaml.out.find("\"1\":\n"), std::string::npos) << "a NUMA key is a string:\n"
                                                          << yaml.out;

  ProcessResult show = RunDevmgr({"checkpoint", "show", "-o", "json", file});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto shown = nlohmann::json::parse(show.out);
  // The plugin's answer with its defaults: no mounts is [] rather than absent.
  EXPECT_EQ(shown["podDeviceEntries"][0]["allocResp"]["mounts"], nlohmann::json::array());

  ProcessResult table = RunDevmgr({"checkpoint", "verify", file});
  ProcessResult wide = RunDevmgr({"checkpoint", "verify", "-o", "wide", file});
  EXPECT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_EQ(wide.out, table.out);
}

// Device IDs that a YAML 1.1 or 1.2 reader would take for a boolean, a null, a number or a date
// are quoted; others are plain (before, YES, ON, .inf, 1_000, 12:30, 2001-01-01 and 0b101 were
// written plain, and PyYAML read them back as booleans, numbers and dates).
TEST_F(CheckpointCommandTest, YamlQuotesWhatWouldReadBackAsAnotherType) {
  const std::vector<std::string> quoted = {
      "YES",   "ON",    "OFF",       "y",          "N",
      "~",     "<<",    ".inf",      "-.Inf",      ".NaN",
      "1_000", "12:30", "1:20:30.5", "2001-01-01", "2001-12-14t21:59:43.10-05:00",
      "0b101", "0o17",  "017",       "0x1F",       "1e3",
      "+1.5",  "1."};
  const std::vector<std::string> plain = {"gpu0", "0000:3b:00.0", "nvidia0", "Yesterday", "on-1"};
  checkpoint::CheckpointData data;
  std::vector<std::string> ids = quoted;
  ids.insert(ids.end(), plain.begin(), plain.end());
  data.registered_devices["example.com/gpu"] = ids;
  const std::string file = WriteFile("ids", checkpoint::Encode(data));
  const ProcessResult yaml = RunDevmgr({"checkpoint", "show", "-o", "yaml", file});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  for (const std::string& id : quoted) {
    EXPECT_NE(yaml.out.find("- \"" + id + "\"\n"), std::string::npos) << id << "\n" << yaml.out;
  }
  for (const std::string& id : plain) {
    EXPECT_NE(yaml.out.find("- " + id + "\n"), std::string::npos) << id << "\n" << yaml.out;
  }
}

TEST_F(CheckpointCommandTest, ShowOfAMismatchedFileShowsItButExitsOne) {
  std::string bytes = *ReadWholeFile(GoodCheckpoint());
  bytes.replace(bytes.find("gpu2"), 4, "gpu3");
  ProcessResult r = RunDevmgr({"checkpoint", "show", WriteFile("tampered", bytes)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu3"), std::string::npos);
}

TEST_F(CheckpointCommandTest, PreNumaKubeletFile) {
  const std::string v1 =
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1","ResourceName":)"
      R"("example.com/gpu","DeviceIDs":["dev1","dev2"],"AllocResp":"CgYKAUESATE="}],)"
      R"("RegisteredDevices":{"example.com/gpu":["dev1","dev2"]}},"Checksum":3547054426})";
  ProcessResult r = RunDevmgr({"checkpoint", "verify", WriteFile("v1", v1)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("format v1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace devmgr::cli
