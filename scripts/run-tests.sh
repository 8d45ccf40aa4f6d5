#!/usr/bin/env bash
# Builds and runs every test. When clang is installed, every suite runs in one clang build with
# ASan+UBSan (BUILD-san, which compiles only what the tests need), and the libFuzzer targets
# run beside them for FUZZ_SECONDS each; any sanitizer report, leaks included, fails its test.
# Without clang, BUILD compiles everything and runs every suite, and the fuzz targets are
# skipped.
# One build, not both: compiling the whole tree twice would not fit CI's time budget on two
# cores. There is no TSan run: docs/RELIABILITY.md, "Sanitizers", says why. Ends with the
# failed cases again, a few lines each, and one line "tests: N passed, M failed, K skipped"
# over every run (scripts/test-summary.py).
# Usage: scripts/run-tests.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
san_build=${build}-san
fuzz_seconds=${FUZZ_SECONDS:-20}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
status=0

# targets_for DIR SUITE...: the files that the tests of these suites run and depend on, so that
# a build compiles nothing else.
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

if ! command -v clang++ >/dev/null 2>&1; then
  echo "clang++ not found: the tests run without sanitizers and the fuzz targets are skipped" \
    "(make test installs clang as root)"
  { [ -f "$build/build.ninja" ] || meson setup "$build" "$source_dir"; } || exit 1
  ninja -C "$build" || exit 1
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$(nproc)" || status=1
  python3 scripts/test-summary.py "$build/meson-logs/testlog.junit.xml" || status=1
  exit $status
fi

# Sanitizer reports must fail the test that triggers them; leaks are reported at exit.
# intercept_tls_get_addr=0: clang 14's runtime guesses glibc's layout of a thread's dynamic TLS
# blocks from their addresses and, when it guesses wrong, the leak check at exit reads a bogus
# range and dies ("LeakSanitizer has encountered a fatal error", google/sanitizers#1322); it
# happened here to `devmgr slices get` in the non-PIE build below. Without the interception
# those blocks are not scanned for pointers, which can only add leak reports, never hide one.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1

# One ASan+UBSan build for the tests and the fuzzers. Its libraries carry the fuzzers' coverage
# instrumentation (-Dfuzzing=true: meson.build), so that libFuzzer sees which branches of the
# code under test an input reached, not only those of the fuzz target itself.
# -O0 with line tables only: it compiles in half the time of -O1 (measured: 14 s against 27 s
# for one test file), the tests mostly wait on sockets and processes, and reports still name
# file and line. lld, where installed, links (a fifth of GNU ld's time: scripts/install-deps.sh).
# The programs are linked as fixed-address executables (-no-pie): a position-independent devmgr
# of this build has 3.8 million relative relocations, which took half of each start (0.47 s
# against 0.24 s); the suites, which start it and their own programs over and over, took 796 s
# of test time against 1,151 s.
link_args=(-no-pie)
if command -v ld.lld >/dev/null 2>&1; then link_args+=(-fuse-ld=lld); fi
if ! [ -f "$san_build/build.ninja" ] &&
  ! CXX=clang++ meson setup "$san_build" "$source_dir" -Dbenchmarks=true -Dexamples=false \
    -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0 \
    -Ddebug=false -Dcpp_args=-gline-tables-only -Dcpp_link_args="${link_args[*]}" \
    >/dev/null; then
  echo "cannot configure $san_build" >&2
  exit 1
fi
suites=(unit integration bench packaging)
echo "Compiling the ASan+UBSan build in $san_build (about 15 minutes on 2 cores; progress in" \
  "$san_build/meson-logs/build-output.txt)"
# shellcheck disable=SC2046 # a list of target files
if ! ninja -C "$san_build" $(targets_for "$san_build" "${suites[@]}" fuzz) \
  >"$san_build/meson-logs/build-output.txt" 2>&1; then
  tail -n 50 "$san_build/meson-logs/build-output.txt" >&2
  echo "ASan+UBSan build failed (log: $san_build/meson-logs/build-output.txt)" >&2
  exit 1
fi
# The fuzzers in the same run as the suites, one test per core at a time: they fill the cores
# the suites' last tests leave free, where a run of their own ended with one fuzzer alone on
# two cores (eleven fuzzers, six rounds).
suite_args=()
for suite in "${suites[@]}" fuzz; do suite_args+=(--suite "$suite"); done
FUZZ_SECONDS=$fuzz_seconds meson test -C "$san_build" --no-rebuild "${suite_args[@]}" \
  --print-errorlogs --num-processes "$(nproc)" --logbase asan || status=1

python3 scripts/test-summary.py "$san_build/meson-logs/asan.junit.xml" || status=1
exit $status
