#!/usr/bin/env bash
# Runs every test: the Meson suites of the main build, then the libFuzzer targets for a bounded
# time in a clang build when clang is installed. Ends with one line "N passed, M failed".
# Usage: scripts/run-tests.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
fuzz_build=${build}-fuzz
fuzz_seconds=${FUZZ_SECONDS:-20}
status=0

meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" || status=1
logs=("$build/meson-logs/testlog.junit.xml")

if command -v clang++ >/dev/null 2>&1; then
  if [ ! -f "$fuzz_build/build.ninja" ]; then
    CXX=clang++ meson setup "$fuzz_build" -Dfuzzing=true -Dtests=false -Dbenchmarks=false \
      -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null ||
      status=1
  fi
  # Only the fuzz targets (and what they link), not the whole tree under sanitizers.
  fuzz_targets=$(meson introspect "$fuzz_build" --targets | python3 -c '
import json, os, sys
build = sys.argv[1]
print(" ".join(os.path.relpath(f, build) for t in json.load(sys.stdin)
               if t["name"].endswith("_fuzzer") for f in t["filename"]))' "$(cd "$fuzz_build" && pwd)")
  # shellcheck disable=SC2086 # a list of target names
  if ninja -C "$fuzz_build" $fuzz_targets >/dev/null; then
    FUZZ_SECONDS=$fuzz_seconds meson test -C "$fuzz_build" --suite fuzz --no-rebuild \
      --print-errorlogs --num-processes 1 || status=1
    logs+=("$fuzz_build/meson-logs/testlog.junit.xml")
  else
    echo "fuzz build failed" >&2
    status=1
  fi
else
  echo "clang++ not found: the fuzz targets are not run (make test installs clang as root)"
fi

python3 scripts/test-summary.py "${logs[@]}" || status=1
exit $status
