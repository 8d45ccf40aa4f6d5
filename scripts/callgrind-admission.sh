#!/usr/bin/env bash
# The instruction count of one pod admission, under callgrind: a cost figure that does not
# drift with machine noise (PERFORMANCE.md's latencies do). Builds nothing: it runs
# bench/admission_count from BUILD_DIR (meson setup BUILD_DIR -Dbuildtype=release, then
# ninja -C BUILD_DIR bench/admission_count; needs the Debian package valgrind, for callgrind
# and its header <valgrind/callgrind.h>).
#
# Usage: scripts/callgrind-admission.sh [BUILD_DIR]      (default build-bench)
#   ADMISSIONS=20   admissions counted (after 3 uncounted warm-up admissions)
#   SCOPE=thread    thread (default): the admitting thread only, repeatable to about 0.3 %;
#                   process: every thread of the manager's process while Allocate runs, which
#                   varies by a few percent from run to run (which gRPC thread happens to
#                   handle the response, whether the manager's loop thread runs meanwhile)
#
# What one admission is: devicemanager::Manager::Allocate of a pod with one container asking
# for one device of a resource whose plugin (FakeDevicePlugin, 64 devices, no topology)
# answers Allocate at once, in steady state: the previous pod is no longer active, so the
# admission first frees its device, then picks one, calls the plugin, commits, and encodes,
# checksums and writes the one-pod checkpoint (write + fsync + rename) before it returns.
#
# What is counted: callgrind's Ir, user-space instructions executed.
# - Included (SCOPE=thread): everything the admitting thread executes inside
#   Manager::Allocate: garbage-collecting the previous pod, the device selection, the client
#   side of the Allocate RPC (request serialisation, creating the call, the gRPC polling this
#   thread does while it waits in CompletionQueue::Pluck, response parsing), the commit, and
#   the checkpoint's encoding, checksum and FileStore::Write. SCOPE=process adds whatever other
#   threads of the process execute meanwhile (gRPC's poller and executor threads, the
#   manager's loop thread).
# - Not included: the plugin's side of the RPC (it runs in a forked child process that is never
#   instrumented); all kernel work: the socket I/O and the checkpoint's write, fsync, rename
#   and folder fsync count only as the user-space instructions that issue those syscalls;
#   with SCOPE=thread, gRPC work that another thread of the process does for this call; and
#   everything outside the Allocate call (start-up, the plugin's registration, the warm-up
#   admissions, building the Pod value).
# The figure printed is the total Ir of the counted admissions divided by their number.
set -euo pipefail
build=${1:-build-bench}
admissions=${ADMISSIONS:-20}
scope=${SCOPE:-thread}
binary="$build/bench/admission_count"

if ! command -v valgrind >/dev/null; then
  echo "valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
fi
if [[ ! -x "$binary" ]]; then
  echo "$binary is missing: meson setup $build -Dbuildtype=release &&" \
    "ninja -C $build bench/admission_count" >&2
  exit 1
fi
case "$scope" in
  process) start=(--instr-atstart=no) ;;
  thread) start=(--collect-atstart=no) ;;
  *)
    echo "SCOPE must be process or thread" >&2
    exit 2
    ;;
esac

out=$(mktemp -d /tmp/devmgr-callgrind-XXXXXX)
trap 'rm -rf "$out"' EXIT
command=(valgrind --tool=callgrind "${start[@]}" --callgrind-out-file="$out/callgrind.out.%p"
  "$binary" --admissions="$admissions" --warmup=3 --scope="$scope")
echo "\$ ${command[*]}" >&2
"${command[@]}" 2>"$out/valgrind.log" || {
  cat "$out/valgrind.log" >&2
  exit 1
}

# One file per process (the plugin's child has its own, with nothing counted); "totals:" is
# each file's Ir.
total=$(awk '/^totals:/ { sum += $2 } END { printf "%d", sum }' "$out"/callgrind.out.*)
echo "total instructions counted: $total over $admissions admissions (scope: $scope)"
echo "instructions per admission: $((total / admissions))"
