# Sourced by the scripts that run devmgr in a throwaway root (demo.sh, check-nvidia-node.sh):
# `source scripts/temp-root.sh PREFIX` makes $root, a new folder /tmp/PREFIX-XXXXXX; the
# processes whose PIDs the script adds to $pids are stopped, and $root removed, when it exits.
# wait_for CMD... retries CMD (quietly) for up to 20 s.
root=$(mktemp -d "/tmp/$1-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT

wait_for() {
  for _ in $(seq 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for: $*" >&2
  return 1
}
