// The claim constraints the allocator checks as it picks devices: matchAttribute (every device
// of the named requests has the same value of an attribute) and distinctAttribute (no two have
// the same value). With list-type attributes, "the same" is a common element of all the lists
// and "distinct" is no element in common; an empty list has no element to compare, so
// matchAttribute refuses it and distinctAttribute refuses it beside another device.
//
// A constraint is monotonic: once it refuses a device, adding more devices never makes it
// accept, which lets the search stop early. Add and Remove come in pairs, Remove undoing the
// latest Add of that device; the state after a Remove is exactly the state before its Add
// (upstream lost this twice: kubernetes#140300, a stale list intersection after backtracking,
// and kubernetes#140438, one request repeating a distinct value).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "structured/device.h"

namespace devmgr::structured {

class Constraint {
 public:
  virtual ~Constraint() = default;

  // Add: whether `device` (for `request`, or its `subrequest` when not empty) may join; when
  // it may, it is counted in.
  virtual bool Add(const std::string& request, const std::string& subrequest,
                   const DeviceInfo& device, const DeviceID& id) = 0;
  virtual void Remove(const std::string& request, const std::string& subrequest,
                      const DeviceInfo& device, const DeviceID& id) = 0;
  // "matchAttribute gpu.example.com/numa", for explanations.
  virtual std::string Describe() const = 0;
};

// MakeMatchAttribute / MakeDistinctAttribute: `requests` as the constraint names them (none:
// every request of the claim); `list_types`: the DRAListTypeAttributes semantics.
std::unique_ptr<Constraint> MakeMatchAttribute(std::vector<std::string> requests,
                                               std::string attribute, bool list_types);
std::unique_ptr<Constraint> MakeDistinctAttribute(std::vector<std::string> requests,
                                                  std::string attribute, bool list_types);

}  // namespace devmgr::structured
