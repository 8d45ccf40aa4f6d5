#!/usr/bin/env bash
# Installs the Debian packages that a make target needs, if any are missing.
# Usage: scripts/install-deps.sh build|test
# As root it runs `apt-get update` once and then `apt-get install`; otherwise it prints the one
# line to run and fails.
set -euo pipefail

build_packages=(
  g++ meson ninja-build pkg-config
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev libyaml-cpp-dev libssl-dev
  libcurl4-openssl-dev libre2-dev prometheus-cpp-dev zlib1g-dev
)
# For `make test`: clang and its runtime build the ASan+UBSan run of the tests and the libFuzzer
# targets; Python with grpcio is the second gRPC implementation the SDK interoperability test
# talks to; valgrind's <valgrind/callgrind.h> builds bench/admission_count, the admission that
# scripts/callgrind-admission.sh counts (its smoke run is a test); groff renders the man page and
# zsh and fish run the completion scripts in tests/cmd/help_cmd_test.cc (which skips those checks
# without them). Not installed here: Debian's `prometheus`, the only package with promtool, which
# the metrics tests use to check the /metrics text when it is there (they skip that check
# otherwise): it is a whole Prometheus server that starts on port 9090 where systemd runs, not
# something a test run should leave behind. Install it by hand to run that check. lld links the
# ASan+UBSan build's test programs (about 240 MB each) five times faster than GNU ld: 3 s against
# 17 s for one, measured; scripts/run-tests.sh uses GNU ld where lld is missing.
test_packages=(clang libclang-rt-14-dev lld python3-grpcio python3-protobuf valgrind
  groff-base zsh fish)

wanted=("${build_packages[@]}")
if [ "${1:-build}" = test ]; then
  wanted+=("${test_packages[@]}")
fi

missing=()
for package in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "Missing Debian packages. Run this once, then try again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
