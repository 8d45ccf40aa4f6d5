// The generic plugin's config: the shipped examples, the shape of every key in YAML and JSON,
// the older shape that still works, and a clear error naming the key for each kind of mistake.
#include "plugins/generic/generic_config.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/file_store.h"
#include "tests/plugins/fake_host.h"

namespace devmgr::plugins {
namespace {

using testing::ExamplePath;

GenericConfig Parsed(const std::string& text) {
  absl::StatusOr<GenericConfig> config = ParseGenericConfig(text);
  EXPECT_TRUE(config.ok()) << config.status() << "\n" << text;
  return config.ok() ? *std::move(config) : GenericConfig{};
}

TEST(GenericConfigTest, ShippedExamplesParse) {
  for (const char* name : {"nvidia-gpu.yaml", "serial.yaml"}) {
    absl::StatusOr<std::string> text = ReadWholeFile(ExamplePath(name));
    ASSERT_TRUE(text.ok()) << text.status();
    absl::StatusOr<GenericConfig> config = ParseGenericConfig(*text);
    EXPECT_TRUE(config.ok()) << name << ": " << config.status();
  }
  GenericConfig gpu = Parsed(*ReadWholeFile(ExamplePath("nvidia-gpu.yaml")));
  EXPECT_EQ(gpu.resource_namespace, "nvidia.com");
  ASSERT_EQ(gpu.groups.size(), 1u);
  EXPECT_EQ(gpu.groups[0].name, "gpu");
  ASSERT_EQ(gpu.groups[0].shared_paths.size(), 3u);
  EXPECT_EQ(gpu.groups[0].shared_paths[0].path, "/dev/nvidiactl");
  EXPECT_EQ(gpu.groups[0].cdi_kind, "devmgr.io/nvidia-gpu");
  EXPECT_EQ(CdiKinds(gpu).at("gpu"), "devmgr.io/nvidia-gpu");
}

TEST(GenericConfigTest, EveryKeyInYamlAndJsonAlike) {
  const GenericConfig yaml = Parsed(R"(
namespace: example.com
groups:
  - name: accel
    paths:
      - /dev/accel*
      - {path: "/dev/xpu[0-9]", containerPath: "/dev/accel{index}", permissions: r}
    extraPaths: ["/dev/accel-ctl{index}"]
    sharedPaths: [/dev/accel-mgmt]
    count: 2
    permissions: rwm
    mounts:
      - {hostPath: /opt/accel, containerPath: /usr/local/accel, readOnly: true}
    env: {ACCEL: "{id}"}
    annotations: {example.com/accel: "{path}"}
    cdiKind: example.com/accelerator
)");
  const GenericConfig json = Parsed(R"({
  "namespace": "example.com",
  "groups": [{
    "name": "accel",
    "paths": ["/dev/accel*",
              {"path": "/dev/xpu[0-9]", "containerPath": "/dev/accel{index}", "permissions": "r"}],
    "extraPaths": ["/dev/accel-ctl{index}"],
    "sharedPaths": ["/dev/accel-mgmt"],
    "count": 2,
    "permissions": "rwm",
    "mounts": [{"hostPath": "/opt/accel", "containerPath": "/usr/local/accel", "readOnly": true}],
    "env": {"ACCEL": "{id}"},
    "annotations": {"example.com/accel": "{path}"},
    "cdiKind": "example.com/accelerator"
  }]})");
  for (const GenericConfig* config : {&yaml, &json}) {
    ASSERT_EQ(config->groups.size(), 1u);
    const GenericGroup& g = config->groups[0];
    EXPECT_EQ(config->resource_namespace, "example.com");
    ASSERT_EQ(g.paths.size(), 2u);
    EXPECT_EQ(g.paths[0].path, "/dev/accel*");
    EXPECT_EQ(g.paths[0].container_path, "");
    EXPECT_EQ(g.paths[1].path, "/dev/xpu[0-9]");
    EXPECT_EQ(g.paths[1].container_path, "/dev/accel{index}");
    EXPECT_EQ(g.paths[1].permissions, "r");
    ASSERT_EQ(g.extra_paths.size(), 1u);
    EXPECT_EQ(g.extra_paths[0].path, "/dev/accel-ctl{index}");
    ASSERT_EQ(g.shared_paths.size(), 1u);
    EXPECT_EQ(g.shared_paths[0].path, "/dev/accel-mgmt");
    EXPECT_EQ(g.count, 2);
    EXPECT_EQ(g.permissions, "rwm");
    ASSERT_EQ(g.mounts.size(), 1u);
    EXPECT_EQ(g.mounts[0], (deviceplugin::Mount{"/opt/accel", "/usr/local/accel", true}));
    EXPECT_EQ(g.env.at("ACCEL"), "{id}");
    EXPECT_EQ(g.annotations.at("example.com/accel"), "{path}");
    EXPECT_EQ(g.cdi_kind, "example.com/accelerator");
  }
}

TEST(GenericConfigTest, TheFirstShapeStillWorks) {
  const GenericConfig config = Parsed(R"(
groups:
  - name: fuse
    paths: ["/dev/fuse"]
    count: 10
    permissions: rw
    mounts:
      - {hostPath: /etc/x, containerPath: /etc/x, readOnly: true}
)");
  EXPECT_EQ(config.resource_namespace, "devmgr.io");
  ASSERT_EQ(config.groups.size(), 1u);
  EXPECT_EQ(config.groups[0].paths[0].path, "/dev/fuse");
  EXPECT_EQ(config.groups[0].count, 10);
  EXPECT_TRUE(config.groups[0].mounts[0].read_only);
  EXPECT_TRUE(CdiKinds(config).empty());
}

// Each bad config, and the start of the error it must get: the key, then what is wrong.
// `nvml` turns on XID health; its ignoredXids replace the XIDs NVIDIA's device plugin ignores.
TEST(GenericConfigTest, NvmlHealthWithTheApplicationXidsOrItsOwn) {
  const std::vector<uint64_t> application = {13, 31, 43, 45, 68, 109};
  GenericConfig config = Parsed(
      "groups:\n"
      "  - {name: plain, paths: [/dev/a*]}\n"
      "  - {name: empty, paths: [/dev/b*], nvml: {}}\n"
      "  - name: bare\n"
      "    paths: [/dev/c*]\n"
      "    nvml:\n"
      "  - {name: own, paths: [/dev/d*], nvml: {ignoredXids: [79, 13]}}\n"
      "  - {name: none, paths: [/dev/e*], nvml: {ignoredXids: []}}\n");
  ASSERT_EQ(config.groups.size(), 5u);
  EXPECT_FALSE(config.groups[0].nvml.has_value());
  ASSERT_TRUE(config.groups[1].nvml.has_value());
  EXPECT_EQ(config.groups[1].nvml->ignored_xids, application);
  ASSERT_TRUE(config.groups[2].nvml.has_value());
  EXPECT_EQ(config.groups[2].nvml->ignored_xids, application);
  ASSERT_TRUE(config.groups[3].nvml.has_value());
  EXPECT_EQ(config.groups[3].nvml->ignored_xids, (std::vector<uint64_t>{79, 13}));
  ASSERT_TRUE(config.groups[4].nvml.has_value());
  EXPECT_TRUE(config.groups[4].nvml->ignored_xids.empty());
  GenericConfig json =
      Parsed(R"({"groups": [{"name": "g", "paths": ["/dev/g*"], "nvml": {"ignoredXids": [48]}}]})");
  ASSERT_EQ(json.groups.size(), 1u);
  ASSERT_TRUE(json.groups[0].nvml.has_value());
  EXPECT_EQ(json.groups[0].nvml->ignored_xids, std::vector<uint64_t>{48});
}

TEST(GenericConfigTest, MistakesAreNamedByKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"namespace: x.io\ngroupz: []\n", "unknown key \"groupz\""},
      {"groups:\n  - name: gpu\n    pathz: [/dev/x]\n", "groups[0]: unknown key \"pathz\""},
      {"{\"groups\": [{\"name\": \"gpu\", \"paths\": [\"/dev/x\"], \"shared\": []}]}",
       "groups[0]: unknown key \"shared\""},
      {"groups:\n  - name: a\n    paths: [{path: /dev/a, mode: rw}]\n",
       "groups[0].paths[0]: unknown key \"mode\""},
      {"groups:\n  - name: a\n    paths: [/dev/a]\n    mounts: [{hostPath: /a, from: /b}]\n",
       "groups[0].mounts[0]: unknown key \"from\""},
      {"groups: []\n", "groups: the config needs at least one group"},
      {"namespace: x.io\n", "groups: the config needs at least one group"},
      {"groups: 5\n", "groups: want a list of groups"},
      {"{\"groups\": 5}", "groups: want a list of groups"},
      {"groups:\n  - name: x\n", "groups[0].paths: a group needs at least one path"},
      {"groups:\n  - name: x\n    paths: []\n", "groups[0].paths: a group needs at least one path"},
      {"groups:\n  - paths: [/dev/x]\n", "groups[0].name: a group needs a name"},
      {"groups:\n  - {name: a, paths: [/dev/a]}\n  - {name: a, paths: [/dev/b]}\n",
       "groups[1].name: \"a\" is also groups[0]"},
      {"groups:\n  - {name: a b, paths: [/dev/a]}\n", "groups[0].name: \"a b\" is not a valid"},
      {"namespace: Not_A_Domain\ngroups:\n  - {name: a, paths: [/dev/a]}\n",
       "namespace: invalid resource namespace \"Not_A_Domain\": want a DNS subdomain like "
       "example.com"},
      // A DNS subdomain the kubelet keeps for its own resources, said so.
      {"namespace: kubernetes.io\ngroups:\n  - {name: a, paths: [/dev/a]}\n",
       "namespace: invalid resource namespace \"kubernetes.io\": a namespace ending in "
       "kubernetes.io is kept for native resources"},
      {"groups:\n  - {name: x, paths: [/dev/x], count: 0}\n", "groups[0].count: must be 1 to 1000"},
      {"groups:\n  - {name: x, paths: [/dev/x], count: 1000000000}\n",
       "groups[0].count: must be 1 to 1000"},
      {"groups:\n  - {name: x, paths: [{path: /dev/x, optional: true}]}\n",
       "groups[0].paths[0].optional: a glob that matches nothing makes no device"},
      {"groups:\n  - {name: x, paths: [/dev/x], count: many}\n",
       "groups[0].count: want an integer"},
      {"groups:\n  - {name: x, paths: [/dev/x], permissions: rwx}\n",
       "groups[0].permissions: want a mix of r, w and m"},
      {"groups:\n  - {name: x, paths: [{path: /dev/x, permissions: q}]}\n",
       "groups[0].paths[0].permissions: want a mix of r, w and m"},
      {"groups:\n  - {name: x, paths: [dev/x]}\n",
       "groups[0].paths[0].path: want an absolute path"},
      {"groups:\n  - {name: x, paths: [\"/dev/x{index}\"]}\n",
       "groups[0].paths[0].path: paths are globs"},
      {"groups:\n  - {name: x, paths: [/dev/x*], sharedPaths: [/dev/ctl*]}\n",
       "groups[0].sharedPaths[0].path: shared paths are plain paths"},
      {"groups:\n  - {name: x, paths: [/dev/x*], extraPaths: [/dev/ctl]}\n",
       "groups[0].extraPaths[0].path: \"/dev/ctl\" is the same node for every device"},
      {"groups:\n  - {name: x, paths: [/dev/x*], extraPaths: [\"/dev/ctl{minor}\"]}\n",
       "groups[0].extraPaths[0].path: unknown substitution {minor}"},
      {"groups:\n  - {name: x, paths: [/dev/x*], env: {X: \"{nope}\"}}\n",
       "groups[0].env.X: unknown substitution {nope}"},
      {"groups:\n  - {name: x, paths: [/dev/x*], annotations: {a.io/x: \"{id\"}}\n",
       "groups[0].annotations.a.io/x: \"{\" without \"}\""},
      {"groups:\n  - {name: x, paths: [/dev/x*], env: [X]}\n",
       "groups[0].env: want a mapping of names to strings"},
      {"groups:\n  - {name: x, paths: [/dev/x*], mounts: [{hostPath: a, containerPath: /a}]}\n",
       "groups[0].mounts[0].hostPath: want an absolute path"},
      {"groups:\n  - {name: x, paths: [/dev/x*], mounts: [{hostPath: /a, containerPath: /a, "
       "readOnly: maybe}]}\n",
       "groups[0].mounts[0].readOnly: want true or false"},
      {"groups:\n  - {name: x, paths: [/dev/x*], cdiKind: nokind}\n",
       "groups[0].cdiKind: want <vendor>/<class>"},
      {"namespace: a.io\ngroups:\n  - {name: x, paths: [/dev/x*]}\n"
       "  - {name: y, paths: [/dev/y*], cdiKind: a.io/x}\n",
       "groups[1].cdiKind: CDI kind \"a.io/x\" is also groups[0]'s"},
      {"groups:\n  - {name: x, paths: [/dev/x*], cdiKind: a.io/b-c}\n"
       "  - {name: y, paths: [/dev/y*], cdiKind: a.io-b/c}\n",
       "groups[1].cdiKind: CDI kind \"a.io-b/c\" has the spec file of groups[0]'s \"a.io/b-c\" "
       "(a.io-b-c.json)"},
      {"groups:\n  - {name: x, paths: [/dev/x*], cdiKind: 3dfx.com/gpu}\n",
       "groups[0].cdiKind: want <vendor>/<class>"},
      {"{\"groups\": [" + std::string(100'000, '[') + std::string(100'000, ']') + "]}",
       "the config: byte 74: JSON nested deeper than 64 levels"},
      {"groups:\n  - {name: x, paths: [/dev/x*], nvml: 5}\n",
       "groups[0].nvml: want {} or {ignoredXids: [...]}"},
      {"groups:\n  - {name: x, paths: [/dev/x*], nvml: {xids: [1]}}\n",
       "groups[0].nvml: unknown key \"xids\""},
      {"groups:\n  - {name: x, paths: [/dev/x*], nvml: {ignoredXids: 13}}\n",
       "groups[0].nvml.ignoredXids: want a list of XIDs"},
      {"groups:\n  - {name: x, paths: [/dev/x*], nvml: {ignoredXids: [13, -1]}}\n",
       "groups[0].nvml.ignoredXids[1]: want an XID, a whole number"},
      {"groups:\n  - {name: x, paths: [/dev/x*], nvml: {ignoredXids: [ecc]}}\n",
       "groups[0].nvml.ignoredXids[0]: want an XID, a whole number"},
      {"[: not yaml", "the config is not valid YAML"},
      // Past yaml-cpp's guard, whose own text is "bad file".
      {"groups: " + std::string(1000, '[') + std::string(1000, ']') + "\n",
       "the config is not valid YAML: line 1, column 2009: nested too deep"},
      {"{\"groups\": [", "the config is not valid JSON"},
      {"- a\n- b\n", "the config is not a mapping"},
  };
  for (const auto& [text, error] : cases) {
    absl::StatusOr<GenericConfig> config = ParseGenericConfig(text);
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(absl::StartsWith(config.status().message(), error))
        << text << "\nwant: " << error << "\ngot:  " << config.status().message();
  }
}

}  // namespace
}  // namespace devmgr::plugins
