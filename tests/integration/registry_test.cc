// Plugins that register through plugins_registry/ with a service socket of their own elsewhere,
// as device plugins, CSI and DRA drivers written outside this project do: a registrar socket in
// plugins_registry/ whose GetInfo names `<root>/plugins/<name>/<name>.sock`. `devmgr serve`
// dials that path, as the kubelet does, and refuses one it cannot dial with upstream's text
// through NotifyRegistrationStatus.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "pluginwatcher/handler.h"
#include "tests/integration/daemon_harness.h"
#include "tests/pluginwatcher/fake_registration_plugin.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using testing::DaemonHarness;
using testing::FakeDevicePlugin;
using testing::FakeRegistrationPlugin;
using testing::MakeDevice;
using testing::MakeInfo;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kResource[] = "example.com/reg";
constexpr char kRefused[] = "RegisterPlugin error -- plugin registration failed with err: ";

TEST(RegistryTest, ServiceSocketInPluginsFolderIsDialled) {
  DaemonHarness h;
  auto serve = h.StartServe();
  ASSERT_NE(serve, nullptr);
  const std::filesystem::path service_socket = h.Path("plugins/reg/reg.sock");
  std::filesystem::create_directories(service_socket.parent_path());
  FakeDevicePlugin service(service_socket, kResource, {MakeDevice("a"), MakeDevice("b")});
  ASSERT_TRUE(service.Start().ok());
  FakeRegistrationPlugin registrar(
      h.Path("plugins_registry/reg.sock"),
      MakeInfo(pluginwatcher::kDevicePlugin, kResource, service_socket.string(), {"v1beta1"}));
  ASSERT_TRUE(registrar.Serve().ok());

  ASSERT_TRUE(WaitFor([&] { return registrar.registered(); }, 20s)) << registrar.last_error();
  EXPECT_TRUE(WaitFor([&] { return h.Allocatable(kResource) == 2; }, 20s));
  ASSERT_EQ(h.Admit(testing::PodManifest("p", kResource, 1)).exit_code, 0);
  EXPECT_EQ(h.PodDevices()["p"].size(), 1u);
  DaemonHarness::Stop(*serve);
  EXPECT_TRUE(std::filesystem::exists(service_socket)) << "the plugin's socket is its own";
}

TEST(RegistryTest, EndpointsThatCannotBeDialledAreRefusedWithUpstreamsText) {
  DaemonHarness h;
  auto serve = h.StartServe();
  ASSERT_NE(serve, nullptr);
  std::filesystem::create_directories(h.Path("plugins/reg"));
  const std::filesystem::path file = h.Path("plugins/reg/file.sock");
  std::ofstream(file) << "kept";
  // Under a file: never a socket there (a path with nothing there yet is dialled, and the dial
  // waits for it).
  const std::string under_file = file.string() + "/missing.sock";
  const std::string long_path = "/" + std::string(199, 'x');
  struct Case {
    std::string endpoint;
    std::string why;
  };
  int n = 0;
  for (const Case& c : {
           Case{"plugins/reg/reg.sock", "socket path must be absolute: \"plugins/reg/reg.sock\""},
           Case{file.string(), file.string() + " is not a unix socket"},
           Case{under_file, absl::StrCat("cannot stat ", under_file, ": Not a directory")},
           Case{long_path,
                absl::StrCat("socket path is 200 bytes, over the limit of 107: ", long_path)},
       }) {
    FakeRegistrationPlugin registrar(
        h.Path(absl::StrCat("plugins_registry/r", n++, ".sock")),
        MakeInfo(pluginwatcher::kDevicePlugin, kResource, c.endpoint, {"v1beta1"}));
    ASSERT_TRUE(registrar.Serve().ok());
    ASSERT_TRUE(WaitFor([&] { return !registrar.statuses().empty(); }, 20s)) << c.endpoint;
    EXPECT_FALSE(registrar.statuses()[0].plugin_registered());
    EXPECT_EQ(registrar.statuses()[0].error(),
              absl::StrCat(kRefused, "failed to dial device plugin: ", c.why));
  }
  EXPECT_EQ(h.Allocatable(kResource), 0);
  DaemonHarness::Stop(*serve);
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "kept");
}

}  // namespace
}  // namespace devmgr
