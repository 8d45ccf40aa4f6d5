#include "node/claim_allocator.h"

#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeapi/object_files.h"
#include "kubeapi/resource_validation.h"
#include "structured/allocator.h"

namespace devmgr::node {
namespace {

// What the node holds, as the allocator sees it: the held claims' results as the API's.
absl::StatusOr<structured::AllocatedState> HeldState(const std::vector<dra::ResourceClaim>& held,
                                                     const structured::Features& features) {
  std::vector<kubeapi::ResourceClaim> claims;
  for (const dra::ResourceClaim& claim : held) {
    if (!claim.allocation.has_value()) continue;
    kubeapi::AllocationResult& allocation = claims.emplace_back().allocation.emplace();
    for (const dra::DeviceRequestAllocationResult& result : *claim.allocation) {
      kubeapi::DeviceRequestAllocationResult& out = allocation.results.emplace_back();
      out.driver = result.driver;
      out.pool = result.pool;
      out.device = result.device;
      out.share_id = result.share_id;
      if (result.admin_access) out.admin_access = true;
      for (const auto& [name, amount] : result.consumed_capacity) {
        absl::StatusOr<kubeapi::Quantity> quantity = kubeapi::Quantity::Parse(amount);
        if (!quantity.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("claim ", claim.namespace_name, "/",
                                                         claim.name, ": consumedCapacity ", name,
                                                         ": ", quantity.status().message()));
        }
        out.consumed_capacity[name] = *quantity;
      }
    }
  }
  return structured::AllocatedStateOf(claims, features);
}

// An allocation's configuration as the DRA types carry it: the opaque driver and parameters.
// (The allocator copies configurations the API validated: each has `opaque`.)
dra::DeviceAllocationConfiguration ConfigOf(const kubeapi::DeviceAllocationConfiguration& config) {
  const nlohmann::json opaque = config.configuration.value("opaque", nlohmann::json::object());
  return {.source = config.source,
          .requests = config.requests,
          .driver = opaque.value("driver", std::string()),
          .parameters = opaque.value("parameters", nlohmann::json::object()).dump()};
}

// "claim ns/a request gpus: 1 of 4 devices are candidates (wants 2 devices), 3 already allocated
// to another claim", per request, and what the constraints refused.
std::string Summary(const structured::Explanation& explanation) {
  std::vector<std::string> parts;
  for (const std::string& pool : explanation.pools) parts.push_back(absl::StrCat("pool ", pool));
  for (const structured::ClaimExplanation& claim : explanation.claims) {
    for (const structured::RequestExplanation& request : claim.requests) {
      // Why the others are not, each reason with its count.
      std::map<std::string, int> reasons;
      for (const structured::DeviceVerdict& verdict : request.devices) {
        if (!verdict.reason.empty()) ++reasons[verdict.reason];
      }
      std::vector<std::string> why;
      for (const auto& [reason, count] : reasons) why.push_back(absl::StrCat(count, " ", reason));
      parts.push_back(absl::StrCat("claim ", claim.claim, " request ", request.request, ": ",
                                   request.Candidates(), " of ", request.devices.size(),
                                   " devices are candidates (wants ", request.wants, ")",
                                   why.empty() ? "" : ", ", absl::StrJoin(why, ", ")));
    }
    for (const auto& [constraint, refusals] : claim.constraint_refusals) {
      if (refusals > 0) {
        parts.push_back(absl::StrCat("claim ", claim.claim, " ", constraint, " refused ", refusals,
                                     " devices"));
      }
    }
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

absl::StatusOr<std::vector<kubeapi::DeviceClass>> ReadDeviceClasses(
    const std::filesystem::path& path, const structured::Features& features) {
  if (path.empty()) return std::vector<kubeapi::DeviceClass>{};
  absl::StatusOr<std::vector<kubeapi::FileObject>> objects =
      kubeapi::ReadObjectFiles({path.string()});
  if (!objects.ok()) return objects.status();
  return kubeapi::DecodeKind<kubeapi::DeviceClass>(
      *objects, "DeviceClass", [&](const kubeapi::Json& object) {
        return kubeapi::DecodeValidDeviceClass(object, structured::NewSelectorCost{features});
      });
}

absl::Status ClaimAllocator::Allocate(PodClaims& claims,
                                      const std::vector<dra::ResourceClaim>& held) const {
  if (claims.unallocated.empty()) return absl::OkStatus();
  // Claims the node holds keep their allocation; the others are allocated together.
  std::map<std::pair<std::string, std::string>, const dra::ResourceClaim*> holding;
  for (const dra::ResourceClaim& claim : held) {
    holding[{claim.namespace_name, claim.name}] = &claim;
  }
  // By claim: the allocation it gets (status.allocation.devices: results and config).
  struct Allocation {
    std::vector<dra::DeviceRequestAllocationResult> results;
    std::vector<dra::DeviceAllocationConfiguration> config;
  };
  std::map<std::pair<std::string, std::string>, Allocation> results;
  std::vector<const kubeapi::ResourceClaim*> to_allocate;
  for (const kubeapi::ResourceClaim& claim : claims.unallocated) {
    const std::pair<std::string, std::string> key{claim.metadata.namespace_name,
                                                  claim.metadata.name};
    auto it = holding.find(key);
    if (it != holding.end() && it->second->uid == claim.metadata.uid &&
        it->second->allocation.has_value()) {
      results[key] = {*it->second->allocation, it->second->allocation_config};
      continue;
    }
    to_allocate.push_back(&claim);
  }

  if (!to_allocate.empty()) {
    absl::StatusOr<std::vector<kubeapi::DeviceClass>> classes =
        ReadDeviceClasses(options_.device_classes, options_.features);
    if (!classes.ok()) return classes.status();
    absl::StatusOr<std::vector<kubeapi::ResourceSlice>> listed =
        slices_.List(resourceslice::SliceFilter{});
    if (!listed.ok()) return listed.status();
    std::vector<kubeapi::ResourceSlicePtr> slices;
    for (kubeapi::ResourceSlice& slice : *listed) {
      slices.push_back(std::make_shared<const kubeapi::ResourceSlice>(std::move(slice)));
    }
    structured::AllocatorOptions options;
    options.features = options_.features;
    options.timeout = options_.timeout;
    // The devices of this pod's claims that came allocated are taken as well: they are not
    // held yet (the store records them with this allocation's results).
    std::vector<dra::ResourceClaim> taken = held;
    for (const dra::ResourceClaim& claim : claims.claims) {
      if (!claim.allocation.has_value()) continue;
      auto it = holding.find({claim.namespace_name, claim.name});
      if (it != holding.end() && it->second->uid == claim.uid) continue;  // among `held`
      taken.push_back(claim);
    }
    absl::StatusOr<structured::AllocatedState> state = HeldState(taken, options_.features);
    if (!state.ok()) return state.status();
    std::unique_ptr<structured::Allocator> allocator =
        structured::Allocator::Create(options, *std::move(state), *std::move(classes), slices);
    const structured::Node node{options_.node_name, options_.node_labels};
    auto allocated = allocator->Allocate(node, to_allocate, nullptr);
    if (!allocated.ok()) return allocated.status();
    if (!allocated->has_value()) {
      // Why, worked out only now: explaining looks at every device for every request again.
      structured::Explanation explanation;
      (void)allocator->Allocate(node, to_allocate, &explanation);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot allocate all claims: ", Summary(explanation)));
    }
    for (size_t i = 0; i < to_allocate.size(); ++i) {
      Allocation& out =
          results[{to_allocate[i]->metadata.namespace_name, to_allocate[i]->metadata.name}];
      const kubeapi::AllocationResult& allocation = (**allocated)[i];
      for (const kubeapi::DeviceRequestAllocationResult& result : allocation.results) {
        dra::DeviceRequestAllocationResult& item = out.results.emplace_back();
        item.request = result.request;
        item.driver = result.driver;
        item.pool = result.pool;
        item.device = result.device;
        item.share_id = result.share_id;
        item.admin_access = result.admin_access.value_or(false);
        for (const auto& [name, amount] : result.consumed_capacity) {
          item.consumed_capacity[name] = amount.ToString();
        }
        item.skip_node_operations = result.skip_node_operations;
      }
      for (const kubeapi::DeviceAllocationConfiguration& config : allocation.config) {
        out.config.push_back(ConfigOf(config));
      }
    }
  }
  for (dra::ResourceClaim& claim : claims.claims) {
    auto it = results.find({claim.namespace_name, claim.name});
    if (it != results.end() && !claim.allocation.has_value()) {
      claim.allocation = it->second.results;
      claim.allocation_config = it->second.config;
    }
  }
  return absl::OkStatus();
}

}  // namespace devmgr::node
