#!/usr/bin/env bash
# `make demo`: what devmgr can do today, step by step, in a temporary folder that is removed at
# the end. Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
devmgr="$build/cmd/devmgr/devmgr"
root=$(mktemp -d /tmp/devmgr-demo-XXXXXX)
trap 'rm -rf "$root"' EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

mkdir -p "$root/device-plugins"
checkpoint="$root/device-plugins/kubelet_internal_checkpoint"

step "A checkpoint exactly as a kubelet writes it: one GPU container, devices on NUMA nodes -1, 0 and 1"
printf '%s' '{"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1","ResourceName":"example.com/gpu","DeviceIDs":{"-1":["dev9"],"0":["dev1","dev2"],"1":["dev3"]},"AllocResp":"CgYKAUESATE="}],"RegisteredDevices":{"a.io/x":[],"example.com/gpu":["dev1","dev2","dev3","dev9"]}},"Checksum":2549016347}' > "$checkpoint"
cat "$checkpoint"; echo

step "verify recomputes the kubelet's checksum (go-spew text, FNV-1a): exit 0 when it matches"
run "$devmgr" checkpoint verify "$checkpoint"

step "show decodes the allocation the plugin returned (here: env A=1) and the registered resources"
run "$devmgr" checkpoint show "$checkpoint"

step "The same as JSON, for scripts"
run "$devmgr" checkpoint show -o json "$checkpoint"

step "A tampered copy (dev9 -> dev8): verify exits 1 and prints both checksums"
sed 's/dev9/dev8/g' "$checkpoint" > "$root/tampered"
set +e
run "$devmgr" checkpoint verify "$root/tampered"
echo "exit code: $?"

step "A file that is not a checkpoint: exit 2 with the reason"
printf '{"Data":{"PodDeviceEntries":{}}}' > "$root/broken"
run "$devmgr" checkpoint verify "$root/broken"
echo "exit code: $?"
set -e

step "A pre-1.20 checkpoint (device IDs without NUMA nodes) is read too"
printf '%s' '{"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1","ResourceName":"example.com/gpu","DeviceIDs":["dev1","dev2"],"AllocResp":"CgYKAUESATE="}],"RegisteredDevices":{"example.com/gpu":["dev1","dev2"]}},"Checksum":3547054426}' > "$root/old"
run "$devmgr" checkpoint verify "$root/old"

printf '\nDone; %s removed.\n' "$root"
