#include "pluginwatcher/plugin_info_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pluginwatcher/backoff.h"

namespace devmgr::pluginwatcher {
namespace {

pluginregistration::PluginInfo Info(const std::string& name, const std::string& endpoint) {
  pluginregistration::PluginInfo info;
  info.set_name(name);
  info.set_endpoint(endpoint);
  return info;
}

TEST(PluginInfoCheckTest, HandsAnyEndpointToTheHandler) {
  // As upstream: the handler dials the endpoint and refuses what it cannot dial.
  for (const std::string& endpoint : std::vector<std::string>{
           "/var/lib/kubelet/plugins_registry/a.sock",
           "/var/lib/kubelet/plugins/x/y/dra.sock",
           "/var/lib/kubelet/plugins/../a.sock",
           "/etc/a.sock",
           "plugins/a.sock",
           "/" + std::string(200, 'x'),
       }) {
    EXPECT_TRUE(CheckPluginInfo(Info("a", endpoint), 317).ok()) << endpoint;
  }
  EXPECT_TRUE(CheckPluginInfo(Info(std::string(317, 'n'), "/a.sock"), 317).ok());
}

TEST(PluginInfoCheckTest, RefusesALongNameAndANulByte) {
  EXPECT_EQ(CheckPluginInfo(Info("a", std::string("/var/lib/kubelet/plugins/a\0b", 28)), 317),
            absl::InvalidArgumentError("plugin endpoint contains a NUL byte"));
  EXPECT_EQ(CheckPluginInfo(Info(std::string(318, 'n'), "/a.sock"), 317),
            absl::InvalidArgumentError("plugin name is 318 bytes, over the limit of 317"));
}

TEST(ExponentialBackoffTest, DoublesUpToTheMaximum) {
  ExponentialBackoff backoff(absl::Milliseconds(500), absl::Minutes(2) + absl::Seconds(2));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  backoff.Update(t0);
  EXPECT_EQ(backoff.RetryAt(), t0 + absl::Milliseconds(500));
  absl::Duration expected = absl::Milliseconds(500);
  for (int i = 0; i < 20; ++i) {
    backoff.Update(t0);
    expected = std::min(expected * 2, absl::Minutes(2) + absl::Seconds(2));
    EXPECT_EQ(backoff.wait(), expected) << i;
  }
  EXPECT_EQ(backoff.wait(), absl::Seconds(122));
}

}  // namespace
}  // namespace devmgr::pluginwatcher
