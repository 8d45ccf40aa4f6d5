// `devmgr podresources list|allocatable|get|watch`, run as a user runs them, against a server
// in this test process fed by fake providers.
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/unix_socket.h"
#include "nlohmann/json.hpp"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/podresources/server_fixture.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::podresources::testing {
namespace {

using devmgr::testing::DevmgrBinary;
using devmgr::testing::ProcessResult;
using devmgr::testing::RunProcess;

class PodResourcesCommandTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.rate_limit.qps = 0;
    options.socket_path = dir_.Sub("pod-resources") / "kubelet.sock";
    std::filesystem::create_directories(dir_.Sub("pod-resources"));
    Pod pod = MakePod("uid-1", "trainer", {"main"}, "ml");
    node_.pods.SetPods({pod});
    node_.devices.SetDevices("uid-1", "main",
                             {{"example.com/gpu", {{"gpu0", {0}}, {"gpu1", {1}}}}});
    node_.devices.SetAllocatable(
        {{"example.com/gpu", {{"gpu0", {0}}, {"gpu1", {1}}, {"gpu2", {}}}}});
    node_.cpus.SetAllocatable({0, 1, 2, 3});
    absl::StatusOr<std::unique_ptr<PodResourcesServer>> server =
        PodResourcesServer::Create(options, node_.providers(), nullptr);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  ProcessResult Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {DevmgrBinary(), "podresources"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--root-dir");
    argv.push_back(dir_.path().string());
    return RunProcess(argv);
  }
};

TEST_F(PodResourcesCommandTest, ListAsTable) {
  const ProcessResult result = Run({"list"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("NAMESPACE"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("trainer"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("example.com/gpu=gpu0(numa 0),gpu1(numa 1)"), std::string::npos)
      << result.out;
}

// A pod recovered from a kubelet's checkpoint has no namespace or name: its cells say "-", so
// that every row has a word in every column (they were blank, and splitting on blanks broke).
TEST_F(PodResourcesCommandTest, ATableHasNoBlankCells) {
  node_.pods.SetPods(
      {MakePod("uid-1", "trainer", {"main"}, "ml"), MakePod("uid-2", "", {"c"}, "")});
  node_.devices.SetDevices("uid-2", "c", {{"example.com/gpu", {{"gpu2", {}}}}});
  const ProcessResult result = Run({"list"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << result.out;
  const std::vector<std::string> header = absl::StrSplit(lines[0], ' ', absl::SkipEmpty());
  const std::vector<std::string> recovered = absl::StrSplit(lines[2], ' ', absl::SkipEmpty());
  ASSERT_EQ(recovered.size(), header.size()) << result.out;
  EXPECT_EQ(recovered[0], "-");
  EXPECT_EQ(recovered[1], "-");
  EXPECT_EQ(recovered[2], "c");
}

// A server without the method answers UNIMPLEMENTED with no message: the failure names the code
// without an empty message before it ("List failed:  (UNIMPLEMENTED)" before).
TEST_F(PodResourcesCommandTest, AFailureWithoutAMessageNamesItsCode) {
  const std::string path = dir_.Sub("bare.sock").string();
  ::v1::PodResourcesLister::Service unimplemented;  // every method UNIMPLEMENTED, no message
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(path), grpc::InsecureServerCredentials());
  builder.RegisterService(&unimplemented);
  const std::unique_ptr<grpc::Server> bare = builder.BuildAndStart();
  ASSERT_NE(bare, nullptr);
  const ProcessResult result =
      RunProcess({DevmgrBinary(), "podresources", "list", "--socket", path});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "devmgr: List failed (UNIMPLEMENTED)\n");
  bare->Shutdown();
}

TEST_F(PodResourcesCommandTest, ListAsProto3Json) {
  const ProcessResult result = Run({"list", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << result.out;
  const auto& pod = json["podResources"][0];
  EXPECT_EQ(pod["name"], "trainer");
  EXPECT_EQ(pod["namespace"], "ml");
  EXPECT_EQ(pod["containers"][0]["devices"][1]["deviceIds"][0], "gpu1");
  // int64s are JSON numbers, as Go's encoding/json writes them (protobuf's JSON: strings).
  EXPECT_EQ(pod["containers"][0]["devices"][1]["topology"]["nodes"][0]["ID"], 1);
}

// Proto3's JSON drops fields at their default: a device on NUMA node 0 printed as
// "nodes": [ {} ], and a container without CPUs had no cpuIds. Every field is printed now.
TEST_F(PodResourcesCommandTest, JsonShowsNumaNodeZeroAndDefaults) {
  const ProcessResult result = Run({"list", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << result.out;
  const auto& container = json["podResources"][0]["containers"][0];
  EXPECT_EQ(container["devices"][0]["deviceIds"][0], "gpu0") << result.out;
  EXPECT_EQ(container["devices"][0]["topology"]["nodes"][0], nlohmann::json({{"ID", 0}}))
      << result.out;
  EXPECT_EQ(container["cpuIds"], nlohmann::json::array()) << result.out;
  // Indented as kubectl -o json: four spaces.
  EXPECT_EQ(result.out.rfind("{\n    \"podResources\": [\n        {\n", 0), 0u) << result.out;

  const ProcessResult allocatable = Run({"allocatable", "-o", "json"});
  ASSERT_EQ(allocatable.exit_code, 0) << allocatable.err;
  const nlohmann::json node = nlohmann::json::parse(allocatable.out, nullptr, false);
  EXPECT_EQ(node["cpuIds"], nlohmann::json({0, 1, 2, 3})) << allocatable.out;
}

TEST_F(PodResourcesCommandTest, YamlIsTheSameObject) {
  const ProcessResult result = Run({"list", "-o", "yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node doc = YAML::Load(result.out);
  const YAML::Node devices = doc["podResources"][0]["containers"][0]["devices"];
  ASSERT_TRUE(devices.IsSequence()) << result.out;
  EXPECT_EQ(devices[1]["deviceIds"][0].as<std::string>(), "gpu1");
  EXPECT_EQ(devices[0]["topology"]["nodes"][0]["ID"].as<int>(), 0);
  // Numbers are plain scalars; strings that would read back as numbers are quoted.
  EXPECT_NE(result.out.find("- ID: 0\n"), std::string::npos) << result.out;
  EXPECT_EQ(doc["podResources"][0]["namespace"].as<std::string>(), "ml");
}

TEST_F(PodResourcesCommandTest, WideAddsColumnsTheTableLeavesOut) {
  const ProcessResult table = Run({"list"});
  const ProcessResult wide = Run({"list", "-o", "wide"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  const std::string header = table.out.substr(0, table.out.find('\n'));
  EXPECT_TRUE(header.ends_with("CLAIMS")) << table.out;
  EXPECT_EQ(wide.out.substr(0, wide.out.find('\n')), header + "   CDI   POD CPUS   POD MEMORY")
      << wide.out;
  EXPECT_NE(wide.out.find("example.com/gpu=gpu0(numa 0),gpu1(numa 1)"), std::string::npos)
      << wide.out;
  // A kubelet with pod-level resources answers the pod's own CPUs and memory: only -o json and
  // yaml showed them before.
  node_.cpus.SetPodCpus("uid-1", {4, 5});
  ::v1::ContainerMemory memory;
  memory.set_memory_type("memory");
  memory.set_size(1024);
  memory.mutable_topology()->add_nodes()->set_id(0);
  node_.memory.SetPodMemory("uid-1", {memory});
  const ProcessResult pod_level = Run({"list", "-o", "wide"});
  ASSERT_EQ(pod_level.exit_code, 0) << pod_level.err;
  EXPECT_NE(pod_level.out.find("4,5"), std::string::npos) << pod_level.out;
  EXPECT_NE(pod_level.out.find("memory=1024(numa 0)"), std::string::npos) << pod_level.out;
  EXPECT_EQ(Run({"list", "-o", "xml"}).exit_code, 2);
}

TEST_F(PodResourcesCommandTest, GetFoundAndNotFound) {
  const ProcessResult found = Run({"get", "ml", "trainer", "-o", "json"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_NE(found.out.find("\"trainer\""), std::string::npos);
  const ProcessResult missing = Run({"get", "ml", "ghost"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "devmgr: pod ghost in namespace ml not found\n");
}

TEST_F(PodResourcesCommandTest, Allocatable) {
  const ProcessResult result = Run({"allocatable"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("gpu2"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("CPUS: 0,1,2,3"), std::string::npos) << result.out;
}

TEST_F(PodResourcesCommandTest, WatchPrintsSnapshotThenChanges) {
  ProcessResult result;
  std::thread watcher([&] { result = Run({"watch", "--count", "2", "-o", "json"}); });
  ASSERT_TRUE(devmgr::testing::WaitFor(
      [&] { return server_->hub_for_test().SubscriberCountForTest() == 1; }));
  Pod pod = MakePod("uid-2", "server", {"web"}, "ml");
  node_.pods.Upsert(pod);
  server_->notifier().PodUpdated(pod);
  watcher.join();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<nlohmann::json> lines;
  std::istringstream out(result.out);
  for (std::string line; std::getline(out, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u) << result.out;
  EXPECT_EQ(lines[0]["kind"], "SNAPSHOT");
  EXPECT_EQ(lines[1]["kind"], "ADDED");
  EXPECT_EQ(lines[1]["podUid"], "uid-2");
}

TEST_F(PodResourcesCommandTest, WatchAsYamlDocuments) {
  const ProcessResult result = Run({"watch", "--count", "1", "-o", "yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("---\n", 0), 0u) << result.out;
  const std::vector<YAML::Node> docs = YAML::LoadAll(result.out);
  ASSERT_EQ(docs.size(), 1u) << result.out;
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "SNAPSHOT");
  EXPECT_EQ(docs[0]["podResources"][0]["name"].as<std::string>(), "trainer");
  // revision is a uint64: a number, not a string.
  EXPECT_EQ(result.out.find("revision: \""), std::string::npos) << result.out;
}

// A socket file nobody listens on (left by a daemon that was killed) refuses connections: said
// at once with the reason, not after the (default, 10 s) timeout as before.
TEST_F(PodResourcesCommandTest, UnreachableSocketIsUsageError) {
  const std::string path = dir_.Sub("stale.sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
  const ProcessResult result =
      RunProcess({DevmgrBinary(), "podresources", "list", "--socket", path});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "devmgr: cannot connect to " + path +
                            ": connect: Connection refused (nothing listens there: is the kubelet "
                            "or devmgr serve running?)\n");
}

// A folder or a regular file where the socket should be is said to be no socket; before, the
// command said that nothing listened there, as for a socket a killed daemon left.
TEST_F(PodResourcesCommandTest, AFileThatIsNoSocketIsSaidToBeNone) {
  std::filesystem::create_directories(dir_.Sub("folder"));
  std::ofstream(dir_.Sub("file")) << "x";
  for (const std::string& path : {dir_.Sub("folder").string(), dir_.Sub("file").string()}) {
    const ProcessResult result =
        RunProcess({DevmgrBinary(), "podresources", "list", "--socket", path});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_EQ(result.err, "devmgr: cannot connect to " + path + ": not a socket\n");
  }
}

// No socket at all (no daemon): said at once, not after the (default, 10 s) timeout.
TEST_F(PodResourcesCommandTest, AMissingSocketIsReportedWithoutWaiting) {
  const std::string path = dir_.Sub("nothing.sock").string();
  const ProcessResult result =
      RunProcess({DevmgrBinary(), "podresources", "list", "--socket", path});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "devmgr: no socket at " + path + " (is the kubelet or devmgr serve running there?)\n");
}

TEST_F(PodResourcesCommandTest, BadTimeoutIsUsageError) {
  // "inf" parses as a duration, but gives a call no deadline.
  for (const char* timeout : {"soon", "inf", "0s"}) {
    const ProcessResult result = Run({"list", "--timeout", timeout});
    EXPECT_EQ(result.exit_code, 2) << timeout;
    EXPECT_NE(result.err.find("--timeout"), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace devmgr::podresources::testing
