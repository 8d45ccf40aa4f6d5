// Which of a prepared claim's CDI devices a container gets for the request it names.
#include "dra/claim_info.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace devmgr::dra {
namespace {

CheckpointDevice Device(const std::string& name, GoStrings requests) {
  return {.pool_name = "pool",
          .device_name = name,
          .share_id = std::nullopt,
          .request_names = std::move(requests),
          .cdi_device_ids = std::vector<std::string>{"vendor.com/gpu=" + name}};
}

// A device serves the request it names, a subrequest of it ("gpu/large": what a prioritized list
// chose, as a driver that keeps the subrequest reports it), or every request when it names none;
// the kubelet matches the name exactly. A request whose name only starts like another's is not
// its parent, and a container that names no request gets every device.
TEST(ClaimInfoTest, ARequestGetsTheCdiDevicesOfItsSubrequests) {
  ClaimInfoState claim;
  claim.driver_state = std::map<std::string, DriverState>{
      {"gpu.example.com", DriverState{.devices = std::vector<CheckpointDevice>{
                                          Device("gpu-0", std::vector<std::string>{"gpu/large"}),
                                          Device("gpu-1", std::vector<std::string>{"gpu"}),
                                          Device("nic-0", std::vector<std::string>{"nic"}),
                                          Device("any", std::nullopt)}}}};
  EXPECT_EQ(CdiDevices(claim, "gpu"),
            (std::vector<std::string>{"vendor.com/gpu=gpu-0", "vendor.com/gpu=gpu-1",
                                      "vendor.com/gpu=any"}));
  EXPECT_EQ(CdiDevices(claim, "gp"), std::vector<std::string>{"vendor.com/gpu=any"});
  EXPECT_EQ(CdiDevices(claim, "nic"),
            (std::vector<std::string>{"vendor.com/gpu=nic-0", "vendor.com/gpu=any"}));
  EXPECT_EQ(CdiDevices(claim, "").size(), 4U);
}

}  // namespace
}  // namespace devmgr::dra
