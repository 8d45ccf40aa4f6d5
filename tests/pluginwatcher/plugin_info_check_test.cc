#include "pluginwatcher/plugin_info_check.h"

#include <gtest/gtest.h>

#include <string>

#include "pluginwatcher/backoff.h"

namespace devmgr::pluginwatcher {
namespace {

pluginregistration::PluginInfo Info(const std::string& name, const std::string& endpoint) {
  pluginregistration::PluginInfo info;
  info.set_name(name);
  info.set_endpoint(endpoint);
  return info;
}

const std::vector<std::filesystem::path> kRoots = {"/var/lib/kubelet/plugins_registry",
                                                   "/var/lib/kubelet/plugins/"};

TEST(PluginInfoCheckTest, AcceptsSocketsInsideTheRoots) {
  EXPECT_TRUE(
      CheckPluginInfo(Info("a", "/var/lib/kubelet/plugins_registry/a.sock"), kRoots, 317).ok());
  EXPECT_TRUE(
      CheckPluginInfo(Info("a", "/var/lib/kubelet/plugins/x/y/dra.sock"), kRoots, 317).ok());
  EXPECT_TRUE(
      CheckPluginInfo(Info(std::string(317, 'n'), "/var/lib/kubelet/plugins/a.sock"), kRoots, 317)
          .ok());
}

TEST(PluginInfoCheckTest, RefusesEverythingElse) {
  for (const std::string endpoint : {
           "/var/lib/kubelet/plugins",            // a root itself
           "/var/lib/kubelet/plugins_registry",   // the other root itself
           "/var/lib/kubelet/pluginsX/a.sock",    // a sibling sharing the prefix
           "/var/lib/kubelet/plugins/../a.sock",  // climbing out
           "/var/lib/kubelet/plugins/./a.sock",   // not normal
           "/etc/a.sock",                         // elsewhere
           "plugins/a.sock",                      // relative
       }) {
    EXPECT_EQ(CheckPluginInfo(Info("a", endpoint), kRoots, 317).code(),
              absl::StatusCode::kInvalidArgument)
        << endpoint;
  }
  EXPECT_FALSE(
      CheckPluginInfo(Info("a", std::string("/var/lib/kubelet/plugins/a\0b", 28)), kRoots, 317)
          .ok());
  EXPECT_FALSE(
      CheckPluginInfo(Info(std::string(318, 'n'), "/var/lib/kubelet/plugins/a.sock"), kRoots, 317)
          .ok());
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
