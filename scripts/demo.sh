#!/usr/bin/env bash
# `make demo`: the main job, step by step, in a temporary root that is removed at the end: the
# daemon, a simulated device plugin with NUMA-spread devices, a pod admitted from examples/,
# its run options, the PodResources view a monitoring agent gets, a restart that keeps the pod,
# the checkpoint a real kubelet could take over, and a pod with a ResourceClaim prepared by a
# DRA driver. Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
devmgr="$build/cmd/devmgr/devmgr"
source "$(dirname "$0")/temp-root.sh" devmgr-demo

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "Start the daemon in a temporary root laid out like /var/lib/kubelet (logs in $root/serve.log)"
printf '$ %s serve --root-dir %s &\n' "$devmgr" "$root"
"$devmgr" serve --root-dir "$root" --log-file "$root/serve.log" &
pids+=($!)
serve_pid=$!
wait_for test -S "$root/devmgr.sock"
run ls "$root" "$root/device-plugins"

step "Start a simulated device plugin: 4 GPUs spread over 2 NUMA nodes, registered on kubelet.sock"
printf '$ %s plugin fake --root-dir %s --resource example.com/gpu --devices 4 --numa-nodes 2 &\n' \
  "$devmgr" "$root"
"$devmgr" plugin fake --root-dir "$root" --resource example.com/gpu --devices 4 --numa-nodes 2 \
  2>"$root/plugin.log" &
pids+=($!)
wait_for sh -c "'$devmgr' podresources allocatable --root-dir '$root' | grep -q dev-3"

step "What the node can allocate, as any PodResources client (e.g. a GPU exporter) sees it"
run "$devmgr" podresources allocatable --root-dir "$root"

step "Admit a pod from a Kubernetes manifest: an init container with 1 GPU, then an app with 2"
run cat examples/pod.yaml
run "$devmgr" pods admit --root-dir "$root" examples/pod.yaml
uid=0d3f4a52-8b1e-4c39-9a7e-2f6b1c8d9e01

step "What the container runtime needs to start the app container (the plugin's Allocate answer)"
run "$devmgr" pods options --root-dir "$root" "$uid" trainer

step "Admitted pods and their devices; the init container's GPU is reused by the app"
run "$devmgr" pods list --root-dir "$root"

step "The same pod through PodResources, exactly as a kubelet serves it"
run "$devmgr" podresources list --root-dir "$root"

step "A pod that asks for more than is free is refused (exit 1) and leaves nothing behind"
set +e
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: greedy, uid: greedy-1}\nspec:\n  containers:\n  - name: a\n    resources: {limits: {example.com/gpu: 3}}\n' |
  "$devmgr" pods admit --root-dir "$root" -
echo "exit code: $?"
set -e
run "$devmgr" pods list --root-dir "$root"

step "The checkpoint on disk is a kubelet's kubelet_internal_checkpoint, checksum included"
run "$devmgr" checkpoint verify "$root/device-plugins/kubelet_internal_checkpoint"
run "$devmgr" checkpoint show "$root/device-plugins/kubelet_internal_checkpoint"

step "SIGTERM: the daemon closes its streams, writes the checkpoint and removes its sockets"
run kill -TERM "$serve_pid"
wait "$serve_pid"
echo "devmgr serve exited with $?"
run ls "$root"

step "Restart: the pod keeps its devices (the daemon's record + the checkpoint), and the plugin,"
echo "seeing kubelet.sock re-created, registers again. This time the daemon also allocates DRA claims"
echo "that come unallocated, with the DeviceClasses of examples/allocate/classes.yaml"
printf '$ %s serve --root-dir %s --device-classes examples/allocate/classes.yaml &\n' "$devmgr" "$root"
"$devmgr" serve --root-dir "$root" --log-file "$root/serve.log" \
  --device-classes examples/allocate/classes.yaml &
pids+=($!)
wait_for test -S "$root/devmgr.sock"
wait_for sh -c "'$devmgr' podresources allocatable --root-dir '$root' | grep -q dev-3"
run "$devmgr" pods list --root-dir "$root"

step "Remove the pod: its devices are free again"
run "$devmgr" pods remove --root-dir "$root" "$uid"
run "$devmgr" pods list --root-dir "$root"

step "Dynamic Resource Allocation: a DRA driver registers through plugins_registry/"
printf '$ %s plugin fake-dra --root-dir %s --driver gpu.example.com --devices 2 &\n' \
  "$devmgr" "$root"
"$devmgr" plugin fake-dra --root-dir "$root" --driver gpu.example.com --devices 2 \
  2>"$root/dra-driver.log" &
pids+=($!)
wait_for test -S "$root/plugins/gpu.example.com/dra.sock"
wait_for grep -q "Registered plugin.*pluginName=\"gpu.example.com\"" "$root/serve.log"

step "A pod that brings its ResourceClaim: stored, reserved for the pod, prepared by the driver"
run cat examples/dra-pod.yaml
run "$devmgr" pods admit --root-dir "$root" examples/dra-pod.yaml
dra_uid=6a1c9e2b-3f4d-4e8a-b5c7-9d0e1f2a3b4c

step "No scheduler here: a claim without status.allocation is allocated by the node from the"
echo "ResourceSlices the driver published (dev-1 is held, so it gets dev-0), then prepared"
wait_for sh -c "'$devmgr' slices list --root-dir '$root' -o json | grep -q dev-1"
run "$devmgr" slices list --root-dir "$root"
run "$devmgr" pods admit --root-dir "$root" examples/dra-pod-unallocated.yaml
batch_uid=0c5e7a91-2d3b-4f6a-8e1c-7b9d0a2f4e6c

step "The claims the node holds, and the PodResources view with the claims' devices"
run "$devmgr" dra claims --root-dir "$root"
run "$devmgr" podresources list --root-dir "$root"

step "dra_manager_state is a kubelet's, CRC-32 checksum included"
run "$devmgr" dra checkpoint verify "$root/dra_manager_state"

step "Remove the pods: the driver unprepares the claims"
run "$devmgr" pods remove --root-dir "$root" "$dra_uid"
run "$devmgr" pods remove --root-dir "$root" "$batch_uid"
run "$devmgr" dra claims --root-dir "$root"

step "The daemon's log, in klog's key=value shape (last lines)"
tail -n 8 "$root/serve.log"

printf '\nDone; the daemon, the plugin and the driver are stopped and %s is removed.\n' "$root"
