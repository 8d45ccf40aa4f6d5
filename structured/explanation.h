// Explanation: why an allocation came out as it did, for people (`devmgr dra allocate
// --explain`): for each request, each device of the node's pools and why it is not a candidate
// (a selector that is false, and which; already allocated; a taint not tolerated; node
// selection; a pool being updated or invalid), and what the search ran into (constraints that
// refused devices, and how often; counters or capacity exhausted; the 32-device limit).
// Upstream's allocator says only "cannot allocate all claims".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace devmgr::structured {

struct DeviceVerdict {
  std::string device;  // driver/pool/device
  std::string reason;  // empty: a candidate
};

struct RequestExplanation {
  std::string request;       // "req" or "req/subrequest"
  std::string device_class;  // its DeviceClass
  std::string wants;         // "1 device", "3 devices", "all devices"
  std::vector<DeviceVerdict> devices;

  int Candidates() const;
};

struct ClaimExplanation {
  std::string claim;  // namespace/name
  std::vector<RequestExplanation> requests;
  // Each constraint ("matchAttribute gpu.example.com/numa") and how many devices it refused
  // while the search ran.
  std::vector<std::pair<std::string, int64_t>> constraint_refusals;
};

struct Explanation {
  bool allocated = false;
  // Pools that cannot be allocated from: "driver/pool: being updated (2 of 3 slices)".
  std::vector<std::string> pools;
  std::vector<ClaimExplanation> claims;
  // What else stopped devices during the search: "driver/pool/dev-3: counters of pool ... used
  // up (4 times)", "claim ns/a: more than 32 devices".
  std::vector<std::string> search;
  int64_t steps = 0;
};

// FormatExplanation: the explanation as text, one line per fact, for a terminal.
std::string FormatExplanation(const Explanation& explanation);
nlohmann::json ExplanationToJson(const Explanation& explanation);

}  // namespace devmgr::structured
