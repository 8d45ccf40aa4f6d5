#include "structured/explanation.h"

#include "absl/strings/str_cat.h"

namespace devmgr::structured {

int RequestExplanation::Candidates() const {
  int count = 0;
  for (const DeviceVerdict& verdict : devices) count += verdict.reason.empty() ? 1 : 0;
  return count;
}

std::string FormatExplanation(const Explanation& explanation) {
  std::string out;
  for (const std::string& pool : explanation.pools) absl::StrAppend(&out, "pool ", pool, "\n");
  for (const ClaimExplanation& claim : explanation.claims) {
    absl::StrAppend(&out, "claim ", claim.claim, "\n");
    for (const RequestExplanation& request : claim.requests) {
      absl::StrAppend(&out, "  request ", request.request, " (class ", request.device_class,
                      ", ", request.wants, "): ", request.Candidates(), " of ",
                      request.devices.size(), " devices are candidates\n");
      for (const DeviceVerdict& verdict : request.devices) {
        absl::StrAppend(&out, "    ", verdict.device, ": ",
                        verdict.reason.empty() ? "candidate" : verdict.reason, "\n");
      }
    }
    for (const auto& [constraint, refusals] : claim.constraint_refusals) {
      absl::StrAppend(&out, "  constraint ", constraint, ": refused ", refusals,
                      refusals == 1 ? " device" : " devices", " during the search\n");
    }
  }
  for (const std::string& line : explanation.search) absl::StrAppend(&out, "search: ", line, "\n");
  absl::StrAppend(&out, explanation.allocated ? "allocated" : "no allocation", " after ",
                  explanation.steps, explanation.steps == 1 ? " step\n" : " steps\n");
  return out;
}

nlohmann::json ExplanationToJson(const Explanation& explanation) {
  nlohmann::json claims = nlohmann::json::array();
  for (const ClaimExplanation& claim : explanation.claims) {
    nlohmann::json requests = nlohmann::json::array();
    for (const RequestExplanation& request : claim.requests) {
      nlohmann::json devices = nlohmann::json::array();
      for (const DeviceVerdict& verdict : request.devices) {
        nlohmann::json item = {{"device", verdict.device}, {"candidate", verdict.reason.empty()}};
        if (!verdict.reason.empty()) item["reason"] = verdict.reason;
        devices.push_back(std::move(item));
      }
      requests.push_back({{"request", request.request},
                          {"deviceClassName", request.device_class},
                          {"wants", request.wants},
                          {"candidates", request.Candidates()},
                          {"devices", std::move(devices)}});
    }
    nlohmann::json constraints = nlohmann::json::array();
    for (const auto& [constraint, refusals] : claim.constraint_refusals) {
      constraints.push_back({{"constraint", constraint}, {"refused", refusals}});
    }
    claims.push_back({{"claim", claim.claim},
                      {"requests", std::move(requests)},
                      {"constraints", std::move(constraints)}});
  }
  return {{"allocated", explanation.allocated},
          {"pools", explanation.pools},
          {"claims", std::move(claims)},
          {"search", explanation.search},
          {"steps", explanation.steps}};
}

}  // namespace devmgr::structured
