// EstimateCost: the least and the greatest cost an evaluation of a checked selector can have, as
// cel-go's checker.Cost estimates it (v0.26) in the environment Kubernetes builds for DRA
// selectors: presence tests free, the cost functions of Kubernetes' libraries
// (library.CostEstimator), those of cel-go's lists and sets extensions, DRA's for includes(),
// and the sizes DRA declares for what `device` holds (a driver name of at most 63 characters,
// at most 32 domains of at most 32 attributes, an attribute value of at most 64). The API server
// refuses a selector whose greatest cost is over the limit of one evaluation, 1,000,000
// (resource.k8s.io's validation: "too complex, exceeds cost limit"); nothing else reads it.
//
// The estimate follows cel-go's where it is generous too: a size it cannot bound is 2^64 - 1,
// so that `["a", "b"].join()` (the size of a literal's strings is not known when they are
// joined) is estimated far over the limit, as the API server estimates it.
#pragma once

#include <cstdint>

#include "cel/ast.h"

namespace devmgr::cel {

struct CostRange {
  uint64_t min = 0;
  uint64_t max = 0;
  bool operator==(const CostRange&) const = default;
};

// EstimateCost: of `root`, which Check (checker.h) accepted and annotated.
CostRange EstimateCost(const Expr& root);

}  // namespace devmgr::cel
