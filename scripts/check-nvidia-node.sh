#!/usr/bin/env bash
# Checks examples/generic/nvidia-gpu.yaml on a node with NVIDIA GPUs, as root: `devmgr serve` in a
# temporary root, `devmgr plugin generic` with the example, a pod admitted with every GPU, and then
# a process started the way a container runtime starts one, in a mount namespace whose /dev holds
# only the device nodes of the pod's run options (and runc's default nodes), with their
# environment. It must see the GPUs; the same process given the GPU nodes alone must not. Nothing
# here is part of `make test` (CI has no GPU). Usage: scripts/check-nvidia-node.sh [DEVMGR]
# The probe run in the namespace is nvidia-smi, and a CUDA tensor operation where python3 has
# torch. Exit 0 when every check passed.
set -euo pipefail
devmgr=$(realpath "${1:-build/cmd/devmgr/devmgr}")
config=$(realpath "$(dirname "$0")/../examples/generic/nvidia-gpu.yaml")
[ "$(id -u)" = 0 ] || { echo "run as root: a mount namespace and device nodes are needed" >&2; exit 2; }
source "$(dirname "$0")/temp-root.sh" devmgr-gpu
failed=0
step() { printf '\n== %s\n' "$*"; }
check() { # check WHAT CMD...: runs CMD, says whether WHAT held
  if "${@:2}"; then echo "PASS: $1"; else echo "FAIL: $1"; failed=1; fi
}

step "The node's NVIDIA device nodes, and where the plugin finds their NUMA nodes"
if [ ! -e /dev/nvidia-uvm ] && command -v nvidia-modprobe >/dev/null; then
  echo "no /dev/nvidia-uvm: loading nvidia-uvm as the example's comment says"
  nvidia-modprobe -u -c=0
fi
ls -l /dev/nvidia* || true
for node in /dev/nvidia[0-9]*; do
  majmin=$(stat -Lc '%Hr:%Lr' "$node")
  if [ -e "/sys/dev/char/$majmin" ]; then
    echo "$node ($majmin): /sys/dev/char/$majmin -> $(readlink -f "/sys/dev/char/$majmin")"
  else
    echo "$node ($majmin): no /sys/dev/char/$majmin; the plugin reads the PCI function the driver names"
  fi
done
nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv,noheader | while IFS=', ' read -r index bus name; do
  pci=/sys/bus/pci/devices/$(echo "${bus#????}" | tr A-Z a-z)
  echo "GPU $index ($name) at $bus: minor $(nvidia-smi -i "$index" -q | awk -F': ' '/Minor Number/{print $2}'), NUMA node of its PCI function $(cat "$pci/numa_node" 2>/dev/null || echo unknown)"
done
gpus=$(ls /dev/nvidia[0-9]* | wc -l)

step "devmgr serve, and devmgr plugin generic with $config"
"$devmgr" serve --root-dir "$root" --log-file "$root/serve.log" &
pids+=($!)
wait_for test -S "$root/devmgr.sock"
"$devmgr" plugin generic --root-dir "$root" --config "$config" --cdi-dir "$root/cdi" \
  2>"$root/plugin.log" &
pids+=($!)
wait_for sh -c "'$devmgr' podresources allocatable --root-dir '$root' | grep -c nvidia.com/gpu"
check "the plugin watches all $gpus GPUs for XID errors through NVML" \
  grep -q "\"Watching GPUs for XID errors\" gpus=$gpus" "$root/plugin.log"
"$devmgr" podresources allocatable --root-dir "$root" -o wide
"$devmgr" pods list --root-dir "$root" >/dev/null
for spec in "$root"/cdi/*; do echo "$spec:"; cat "$spec"; echo; done

step "Admit a pod whose container asks for all $gpus GPUs, and read its run options"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: cuda, namespace: default, uid: gpu-check-1}\nspec:\n  containers:\n  - name: cuda\n    resources: {limits: {nvidia.com/gpu: %s}}\n' \
  "$gpus" | "$devmgr" pods admit --root-dir "$root" -
"$devmgr" pods options --root-dir "$root" gpu-check-1 cuda -o wide
"$devmgr" pods options --root-dir "$root" gpu-check-1 cuda -o json >"$root/options.json"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: more, namespace: default, uid: gpu-check-2}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n' \
  >"$root/more.yaml"
check "a pod asking for one GPU more is refused (exit 1)" \
  sh -c "'$devmgr' pods admit --root-dir '$root' '$root/more.yaml'; [ \$? = 1 ]"

# The run options as lines: "dev HOST CONTAINER PERMISSIONS" per device node, "env NAME=VALUE".
python3 - "$root/options.json" >"$root/options.txt" <<'EOF'
import json, sys
options = json.load(open(sys.argv[1]))["options"]
for device in options["devices"]:
    print("dev", device["hostPath"], device["containerPath"], device["permissions"])
for env in options["envs"]:
    print(f"env {env['key']}={env['value']}")
EOF
cat "$root/options.txt"

# run_confined ONLY_GPU_NODES: runs the probe with /dev holding runc's default nodes and the
# options' device nodes (all of them, or with ONLY_GPU_NODES=1 only /dev/nvidiaN), with the
# options' environment, and without the capability to make device nodes, as a container's
# device cgroup refuses a node it makes.
run_confined() {
  unshare --mount --propagation private bash -s "$root" "$1" <<'EOF'
set -eu
root=$1 only_gpu=$2
dev=$root/dev-$only_gpu
mkdir -p "$dev" && mount -t tmpfs -o mode=755 tmpfs "$dev"
for spec in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  IFS=: read -r name major minor <<<"$spec"
  mknod -m 666 "$dev/$name" c "$major" "$minor"
done
mkdir "$dev/shm" "$dev/pts"
envs=()
while read -r kind a b perms; do
  if [ "$kind" = env ]; then envs+=("$a"); continue; fi
  if [ "$only_gpu" = 1 ] && ! [[ "$a" =~ ^/dev/nvidia[0-9]+$ ]]; then continue; fi
  target=$dev/${b#/dev/}
  mkdir -p "$(dirname "$target")"
  mknod -m 666 "$target" c "$(stat -Lc %Hr "$a")" "$(stat -Lc %Lr "$a")"
done <"$root/options.txt"
mount --bind "$dev" /dev
echo "/dev here: $(cd /dev && echo $(find . -mindepth 1 | sort))"
# The probe runs without CAP_MKNOD: NVIDIA's libraries make a node they miss when they may.
confined=(setpriv --inh-caps=-mknod --bounding-set=-mknod env "${envs[@]}")
"${confined[@]}" sh -c 'echo "DEVMGR_GPU_DEVICES=$DEVMGR_GPU_DEVICES"; nvidia-smi -L' || exit 1
if python3 -c 'import torch' 2>/dev/null; then
  "${confined[@]}" python3 -c 'import torch; n = torch.cuda.device_count(); print("torch sees", n, "GPU(s)"); x = torch.ones(1024, 1024, device="cuda"); print("sum on", torch.cuda.get_device_name(0), "=", (x @ x).sum().item()); assert n > 0' || exit 1
fi
EOF
}

step "A process given the pod's run options, as a container runtime gives them"
check "the pod's device nodes and environment are what CUDA needs" run_confined 0

step "The same process given the GPU nodes alone (no /dev/nvidiactl, /dev/nvidia-uvm)"
refused_without_shared_nodes() { ! run_confined 1; }
check "without the shared nodes the GPUs cannot be used" refused_without_shared_nodes

step "Remove the pod: its GPUs are free again"
"$devmgr" pods remove --root-dir "$root" gpu-check-1
check "a pod asking for one GPU is admitted after the removal" \
  "$devmgr" pods admit --root-dir "$root" "$root/more.yaml"
exit $failed
