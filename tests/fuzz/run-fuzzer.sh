#!/usr/bin/env bash
# Runs a libFuzzer target for FUZZ_SECONDS (default 20) from the committed seed corpus. New
# inputs go to a temporary folder, so the repository is never written to; a crashing input is
# saved in the working directory (the build folder when Meson runs it).
# Usage: run-fuzzer.sh FUZZER SEED_DIR
set -euo pipefail
fuzzer=$1
seeds=$2
work=$(mktemp -d /tmp/devmgr-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
# libFuzzer exits 77 on a crash by default, which Meson would count as a skipped test.
"$fuzzer" -max_total_time="${FUZZ_SECONDS:-20}" -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$PWD/" "$work" "$seeds"
