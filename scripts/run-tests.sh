#!/usr/bin/env bash
# Builds and runs every test. When clang is installed, the unit and integration suites and the
# libFuzzer targets (each for FUZZ_SECONDS) run in one clang build with ASan+UBSan (BUILD-san),
# and the main build compiles and runs only its other suites (benchmark smoke runs, packaging);
# each build compiles only what its tests need, and running the same tests twice would not fit
# CI's time budget. Without clang, the main build compiles everything and runs every suite. Any sanitizer report, leaks included, fails its test. There is no TSan run:
# docs/RELIABILITY.md, "Sanitizers", says why. Ends with one line "tests: N passed, M failed, K
# skipped" over every run.
# Usage: scripts/run-tests.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
san_build=${build}-san
fuzz_seconds=${FUZZ_SECONDS:-20}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
status=0

# targets_for DIR SUITE...: the files that the tests of these suites run and depend on, so that
# a sanitizer build compiles nothing else.
targets_for() {
  python3 - "$@" <<'PY'
import json, os, sys
build, suites = sys.argv[1], set(sys.argv[2:])
info = os.path.join(build, "meson-info")
with open(os.path.join(info, "intro-targets.json")) as f:
    files = {t["id"]: t["filename"] for t in json.load(f)}
with open(os.path.join(info, "intro-tests.json")) as f:
    tests = json.load(f)
wanted = set()
for test in tests:
    if suites & {suite.split(":")[-1] for suite in test["suite"]}:
        for target in test["depends"]:
            wanted.update(files.get(target, []))
print(" ".join(sorted(os.path.relpath(f, build) for f in wanted)))
PY
}

# The main build: everything, or, when the sanitizer build takes the unit and integration
# suites, only what the other suites need.
if command -v clang++ >/dev/null 2>&1; then
  # shellcheck disable=SC2046 # a list of target files
  ninja -C "$build" $(targets_for "$build" bench packaging) || exit 1
  meson test -C "$build" --no-rebuild --no-suite unit --no-suite integration --print-errorlogs \
    --num-processes "$(nproc)" || status=1
else
  ninja -C "$build" || exit 1
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$(nproc)" || status=1
fi
logs=("$build/meson-logs/testlog.junit.xml")

if command -v clang++ >/dev/null 2>&1; then
  # Sanitizer reports must fail the test that triggers them; leaks are reported at exit.
  export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1
  export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1

  # One ASan+UBSan build for the tests and the fuzzers. Every object carries the fuzzers'
  # coverage instrumentation, so that libFuzzer sees which branches of the code under test an
  # input reached, not only those of the fuzz target itself.
  # -O0 with line tables only: it compiles in half the time of -O1 (measured: 14 s against 27 s
  # for one test file), the tests mostly wait on sockets, and reports still name file and line.
  if [ -f "$san_build/build.ninja" ] ||
    CXX=clang++ meson setup "$san_build" "$source_dir" -Dbenchmarks=false -Dexamples=false \
      -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0 \
      -Ddebug=false -Dcpp_args="-gline-tables-only -fsanitize=fuzzer-no-link" >/dev/null; then
    # shellcheck disable=SC2046 # a list of target files
    if ninja -C "$san_build" $(targets_for "$san_build" unit integration fuzz) \
      >"$san_build/meson-logs/build-output.txt" 2>&1; then
      meson test -C "$san_build" --no-rebuild --suite unit --suite integration \
        --print-errorlogs --num-processes "$(nproc)" --logbase asan || status=1
      FUZZ_SECONDS=$fuzz_seconds meson test -C "$san_build" --no-rebuild --suite fuzz \
        --print-errorlogs --num-processes 1 --logbase fuzz || status=1
      logs+=("$san_build/meson-logs/asan.junit.xml" "$san_build/meson-logs/fuzz.junit.xml")
    else
      tail -n 50 "$san_build/meson-logs/build-output.txt" >&2
      echo "ASan+UBSan build failed (log: $san_build/meson-logs/build-output.txt)" >&2
      status=1
    fi
  else
    echo "cannot configure $san_build" >&2
    status=1
  fi
else
  echo "clang++ not found: the sanitizer runs and the fuzz targets are skipped (make test installs" \
    "clang as root)"
fi

python3 scripts/test-summary.py "${logs[@]}" || status=1
exit $status
