// Semver: a semantic version (semver.org 2.0.0), the value of a DRA device attribute of type
// version, and CEL's kubernetes.Semver. Parsed as strictly as the Go library Kubernetes uses
// (blang/semver v4): MAJOR.MINOR.PATCH, no leading zeros, an optional pre-release and build;
// or, when asked to normalise, as Kubernetes' CEL library does first: a leading "v" dropped,
// missing minor and patch filled with 0, leading zeros removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::kubeapi {

struct Semver {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  // Pre-release identifiers, as written ("alpha", "1").
  std::vector<std::string> pre_release;
  std::vector<std::string> build;

  // Parse: InvalidArgument saying why for anything that is not a version.
  static absl::StatusOr<Semver> Parse(absl::string_view text, bool normalize = false);

  // Precedence (semver.org §11): -1, 0 or 1; build metadata does not count.
  int Compare(const Semver& other) const;
  bool operator==(const Semver& other) const { return Compare(other) == 0; }
  std::string ToString() const;
};

}  // namespace devmgr::kubeapi
