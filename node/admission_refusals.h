// The reasons for which the daemon itself refuses a pod admission, beside the device manager's
// own (devicemanager/metrics.h): the label values of devmgr_admissions_refused_total{reason}.
#pragma once

#include "absl/strings/string_view.h"

namespace devmgr::node {

// The topology policy found no NUMA affinity it accepts for a container.
inline constexpr absl::string_view kRefusedTopologyAffinity = "topology_affinity";
// A container's run options could not be collected (PreStartContainer failed, among others).
inline constexpr absl::string_view kRefusedPreStart = "pre_start";
// The durable record of admitted pods, with the checkpoint that holds the pod's devices, could
// not be written.
inline constexpr absl::string_view kRefusedRecordWrite = "record_write";
// The pod's ResourceClaims could not be stored or prepared (a driver is missing or failed, the
// node serves no DRA, the claims of the pod's earlier admission are not unprepared yet).
inline constexpr absl::string_view kRefusedClaims = "claims";
// The pod's UID is admitted already, with other containers or claims.
inline constexpr absl::string_view kRefusedAlreadyAdmitted = "already_admitted";

inline constexpr absl::string_view kDaemonRefusalReasons[] = {
    kRefusedTopologyAffinity, kRefusedPreStart,        kRefusedRecordWrite,
    kRefusedClaims,           kRefusedAlreadyAdmitted,
};

}  // namespace devmgr::node
