#include "devicemanager/pod.h"

#include <gtest/gtest.h>

namespace devmgr::devicemanager {
namespace {

TEST(PodTest, FindContainerSearchesInitAndAppContainers) {
  Pod pod;
  pod.init_containers.push_back({"init", ContainerType::kInit, {}});
  pod.init_containers.push_back({"side", ContainerType::kSidecar, {{"a.io/x", 1}}});
  pod.containers.push_back({"app", ContainerType::kRegular, {{"a.io/x", 2}}});
  ASSERT_NE(pod.FindContainer("side"), nullptr);
  EXPECT_EQ(pod.FindContainer("side")->type, ContainerType::kSidecar);
  EXPECT_EQ(pod.FindContainer("app")->devices.at("a.io/x"), 2);
  EXPECT_EQ(pod.FindContainer("nope"), nullptr);
}

}  // namespace
}  // namespace devmgr::devicemanager
