// The ClaimLookup of a DRA driver on a node run by `devmgr serve` without a cluster: there is no
// API server, and the daemon's admin API (GetResourceClaim on <root>/devmgr.sock) answers the
// ResourceClaims that came with its admitted pods (`devmgr plugin fake-dra` reads them here).
#pragma once

#include <filesystem>

#include "absl/time/time.h"
#include "devmgr/admin/v1/api.pb.h"
#include "dra/claim.h"
#include "kubeletplugin/helper.h"

namespace devmgr::kubeletplugin {

// ClaimFromProto: the admin API's claim as the DRA types' plain value. Not allocated means no
// allocation at all (and no configuration); each reserved-for pod UID becomes a "pods"
// consumer; an empty share ID is none.
dra::ResourceClaim ClaimFromProto(const devmgr::admin::v1::ResourceClaim& claim);

// AdminClaimLookup calls GetResourceClaim on the daemon's admin socket `admin_socket`, over a
// channel of its own, each call with `timeout` as its deadline. The daemon's answer keeps its
// code: NOT_FOUND for a claim no admitted pod brought, UNAVAILABLE while no daemon listens; a
// daemon that restarted is reached at once (common/channel_reconnect.h). Blocks for at most
// `timeout`.
ClaimLookup AdminClaimLookup(const std::filesystem::path& admin_socket, absl::Duration timeout);

}  // namespace devmgr::kubeletplugin
