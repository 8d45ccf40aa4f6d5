#!/usr/bin/env bash
# The ThreadSanitizer run of docs/RELIABILITY.md ("ThreadSanitizer"), what `make tsan` runs.
#
# Every lock here is an absl::Mutex, whose TSan annotations are compiled into
# libabsl_synchronization.so, and gRPC hands work between threads through its own locks, atomics
# and queues; Debian builds both without -fsanitize=thread. So this builds Debian's own source
# packages of the Abseil and the gRPC we link against (their patches, CMake options and SONAMEs)
# with -fsanitize=thread, once per machine and source version, in a cache outside the clone:
#   ${DEVMGR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/devmgr}/abseil-tsan-<version>
#   ${DEVMGR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/devmgr}/grpc-tsan-<version>
# then configures BUILD_DIR (default build-tsan) with clang and -fsanitize=thread, its programs
# carrying a DT_RPATH to both, so that they bind the instrumented libraries while programs they
# start (python3, protoc) keep Debian's. It compiles only the concurrency-heavy suites
# (tsan_tests below) and runs them with tests/tsan.supp. Any report, from a test or from a
# daemon or plugin process a test started, fails the run.
#
# Usage: scripts/run-tsan.sh [BUILD_DIR]
#        scripts/run-tsan.sh --cache-warm   exits 0 when the instrumented libraries are cached
# As root it adds the deb-src entry and the packages it needs; otherwise it prints the one line
# to run. Ends with one line "tsan: N passed, M failed, K skipped".
set -uo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
cache_root=${DEVMGR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/devmgr}
system_libdir=/usr/lib/x86_64-linux-gnu
# The binary package that gRPC 1.51 and our build link against; its source version keys the
# cache.
absl_package=libabsl20220623

# The tests, by meson test name: the device manager core and admission, PodResources with
# Watch, the plugin watcher, the SDK, the DRA manager and the node's DRA side, the daemon's
# integration tests, and the event loop everything above posts to.
tsan_tests='^((devicemanager|podresources|pluginwatcher|deviceplugin|dra|node|integration)_'
tsan_tests+='|common_event_loop$)'

die() {
  echo "run-tsan: $*" >&2
  exit 1
}

absl_version=$(dpkg-query -W -f='${source:Version}' "$absl_package" 2>/dev/null) ||
  die "$absl_package is not installed (scripts/install-deps.sh build installs it)"
cache=$cache_root/abseil-tsan-$absl_version
# The same for gRPC: the package we link against, and the CMake targets of the libraries our
# programs load (ldd of the daemon).
grpc_package=libgrpc++1.51
grpc_libraries='grpc++ grpc gpr upb address_sorting'
grpc_version=$(dpkg-query -W -f='${source:Version}' "$grpc_package" 2>/dev/null) ||
  die "$grpc_package is not installed (scripts/install-deps.sh build installs it)"
grpc_cache=$cache_root/grpc-tsan-$grpc_version

if [ "${1:-}" = --cache-warm ]; then
  [ -f "$cache/.complete" ] && [ -f "$grpc_cache/.complete" ]
  exit
fi
build=${1:-build-tsan}
case $build in /*) ;; *) build=$source_dir/$build ;; esac

# as_root DESCRIPTION COMMAND: runs COMMAND (a shell line) when root; otherwise prints it and
# fails, as scripts/install-deps.sh does.
as_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$1. Run this once, then try again:" >&2
    echo "  sudo sh -c '$2'" >&2
    exit 1
  fi
  echo "$1: $2"
  sh -c "$2" || die "failed: $2"
}

# ---- 1. The instrumented Abseil, unless cached ----------------------------------------------

# The deb-src twin of Debian's own binary entry: the same file with "Types: deb-src". The
# snapshot of the archive that serves the binaries serves the matching sources.
# add_deb_src SOURCE VERSION
add_deb_src() {
  apt-cache showsrc "$1" 2>/dev/null | grep -qxF "Version: $2" && return
  local binary=/etc/apt/sources.list.d/debian.sources
  local sources=/etc/apt/sources.list.d/debian-src.sources
  [ -f "$binary" ] || die "no $binary: add a deb-src entry for $1 $2 by hand"
  as_root "Adding a deb-src entry beside $binary" \
    "sed \"s/^Types: deb\$/Types: deb-src/\" $binary >$sources && apt-get update -qq"
}

# need_packages PACKAGE...: installs those of the Debian packages that are missing.
need_packages() {
  local missing=() package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$' ||
      missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    as_root "Missing Debian packages" \
      "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${missing[*]}"
  fi
}

# unpack_source SOURCE VERSION CACHE [DURATION]: a fresh CACHE.tmp (CACHE itself removed) with
# Debian's source package, Debian's patches applied, unpacked in CACHE.tmp/src;
# CACHE.tmp/build.log starts with what that printed. DURATION is what the build is said to take.
unpack_source() {
  local work=$3.tmp
  rm -rf "$work" "$3"
  mkdir -p "$work" || die "cannot create $work"
  echo "Building $1 $2 with -fsanitize=thread into $3 (once per machine;${4:+ about $4;}" \
    "log: $work/build.log)"
  add_deb_src "$1" "$2"
  (cd "$work" && apt-get source -qq --download-only "$1=$2" && dpkg-source -x "$1"_*.dsc src) \
    >"$work/build.log" 2>&1 ||
    { tail -n 20 "$work/build.log" >&2; die "cannot fetch or unpack $1 $2"; }
}

# debian_cxxflags WORK [SED]: dpkg-buildflags' CXXFLAGS for the source in WORK/src, as Debian
# builds it (hardening=+bindnow), with line tables instead of full debug info (enough for
# reports, a faster build), then edited by the sed script SED. debian_ldflags: its LDFLAGS.
debian_cxxflags() {
  (cd "$1/src" &&
    DEB_BUILD_MAINT_OPTIONS="hardening=+bindnow reproducible=+fixfilepath" \
      dpkg-buildflags --get CXXFLAGS | sed "s/\(^\| \)-g /\1-gline-tables-only /; ${2:-}")
}
debian_ldflags() { DEB_BUILD_MAINT_OPTIONS="hardening=+bindnow" dpkg-buildflags --get LDFLAGS; }

build_abseil() {
  need_packages clang libclang-rt-14-dev cmake ninja-build dpkg-dev
  # Debian's patches (the SONAME 20220623, the debian3 inline namespace, absl::optional and
  # friends as their own types, hardened mode) come with the source package; the headers we
  # compile against are Debian's /usr/include/absl, identical to this source's.
  unpack_source abseil "$absl_version" "$cache"
  local work=$cache.tmp

  # debian/rules' shared build: dh_auto_configure -- -DCMAKE_CXX_STANDARD=17
  # -DBUILD_SHARED_LIBS=ON, with dh's CMAKE_BUILD_TYPE=None and dpkg-buildflags' flags; its
  # tests are left out. Changed for TSan: clang (whose runtime the project links),
  # -fsanitize=thread, line tables, and no _FORTIFY_SOURCE (it routes memcpy and friends to
  # glibc's __*_chk, which TSan does not intercept).
  local cxxflags ldflags
  cxxflags=$(debian_cxxflags "$work")
  ldflags=$(debian_ldflags)
  {
    cmake -S "$work/src" -B "$work/shared" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON \
      -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$cache" -DCMAKE_INSTALL_LIBDIR=lib \
      -DCMAKE_CXX_FLAGS="$cxxflags -fsanitize=thread" \
      -DCMAKE_SHARED_LINKER_FLAGS="$ldflags -fsanitize=thread" &&
      ninja -C "$work/shared" && cmake --install "$work/shared"
  } >>"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; die "abseil build failed (log: $work/build.log)"; }
  mv "$work/build.log" "$cache/build.log"
  rm -rf "$work"
}

# The instrumented gRPC: Debian's source package of the gRPC we link (its patches, CMake options
# and SONAMEs, debian/rules' shared build), only the libraries our programs load, built with
# -fsanitize=thread against the system Abseil's headers (identical to the instrumented ones the
# rpath binds at run time). Without it TSan sees none of the hand-overs inside gRPC core (its
# completion queues and lock-free closures), and reports the reuse of gRPC's own callback tags
# across threads as races (docs/RELIABILITY.md).
build_grpc() {
  need_packages libc-ares-dev libre2-dev libssl-dev zlib1g-dev libprotobuf-dev libprotoc-dev \
    protobuf-compiler
  unpack_source grpc "$grpc_version" "$grpc_cache" "15 min on 2 cores"
  local work=$grpc_cache.tmp

  # debian/rules' COMMON_BUILD_FLAGS for the libraries (every dependency from its Debian
  # package), with the flags of the Abseil build above and TSan's -O1. No RUNPATH in the
  # libraries (which would point into the build folder and keep the programs' DT_RPATH from
  # reaching their own dependencies, the instrumented Abseil).
  local cflags ldflags
  cflags=$(debian_cxxflags "$work" 's/-O2/-O1/')
  ldflags=$(debian_ldflags)
  {
    cmake -S "$work/src" -B "$work/shared" -G Ninja -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None -DBUILD_SHARED_LIBS=ON \
      -DgRPC_BUILD_TESTS=OFF -DgRPC_ABSL_PROVIDER=package -DgRPC_CARES_PROVIDER=package \
      -DgRPC_PROTOBUF_PROVIDER=package -DgRPC_RE2_PROVIDER=package \
      -DgRPC_SSL_PROVIDER=package -DgRPC_ZLIB_PROVIDER=package \
      -DgRPC_BACKWARDS_COMPATIBILITY_MODE=OFF -DgRPC_INSTALL_LIBDIR=lib \
      -DCMAKE_SKIP_BUILD_RPATH=ON \
      -DCMAKE_C_FLAGS="$cflags -fsanitize=thread" -DCMAKE_CXX_FLAGS="$cflags -fsanitize=thread" \
      -DCMAKE_SHARED_LINKER_FLAGS="$ldflags -fsanitize=thread" &&
      ninja -C "$work/shared" $grpc_libraries
  } >>"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; die "grpc build failed (log: $work/build.log)"; }
  mkdir -p "$grpc_cache/lib" &&
    cp -P "$work"/shared/lib*.so* "$grpc_cache/lib/" &&
    mv "$work/build.log" "$grpc_cache/build.log" || die "cannot fill $grpc_cache"
  rm -rf "$work"
}

# Every Debian libabsl_*.so.<N> has an instrumented file with the same SONAME in the cache, so
# that no uninstrumented Abseil library can be bound beside it.
check_abseil() {
  local lib soname ours count=0
  for lib in "$system_libdir"/libabsl_*.so.*.*.*; do
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    ours=$(readelf -d "$cache/lib/$soname" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ "$ours" = "$soname" ] || die "$cache/lib has no $soname (cache incomplete: remove $cache)"
    count=$((count + 1))
  done
  nm -D "$cache/lib/libabsl_synchronization.so" | grep -c ' U __tsan_mutex_pre_lock$' >/dev/null ||
    die "$cache/lib/libabsl_synchronization.so is not built with -fsanitize=thread"
  echo "TSan Abseil: $count libraries with Debian's SONAMEs in $cache/lib"
}

if ! [ -f "$cache/.complete" ]; then
  start=$SECONDS
  build_abseil
  check_abseil
  touch "$cache/.complete"
  echo "Abseil built in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
else
  check_abseil
fi

# Each of Debian's gRPC libraries that we load has an instrumented twin with its SONAME.
check_grpc() {
  local name soname
  for name in $grpc_libraries; do
    soname=$(readelf -d "$system_libdir/lib$name.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ -f "$grpc_cache/lib/$soname" ] ||
      die "$grpc_cache/lib has no $soname (cache incomplete: remove $grpc_cache)"
  done
  # (grep reads all of nm's output: an early exit would fail the pipe with SIGPIPE)
  nm -D "$grpc_cache/lib/libgrpc.so" | grep -c ' U __tsan_func_entry$' >/dev/null ||
    die "$grpc_cache/lib/libgrpc.so is not built with -fsanitize=thread"
  if readelf -d "$grpc_cache"/lib/lib*.so | grep -E 'R(UN)?PATH' >&2; then
    die "$grpc_cache/lib has libraries with a RUNPATH (above; remove $grpc_cache)"
  fi
  echo "TSan gRPC: $grpc_libraries with Debian's SONAMEs in $grpc_cache/lib"
}

if ! [ -f "$grpc_cache/.complete" ]; then
  start=$SECONDS
  build_grpc
  check_grpc
  touch "$grpc_cache/.complete"
  echo "gRPC built in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
else
  check_grpc
fi

# ---- 2. The project, instrumented ----------------------------------------------------------

# -O1, which TSan's documentation asks for "to get a reasonable performance" (it slows code down
# 5-15 times already). -fdebug-info-for-profiling adds linkage names to the line tables, so that
# a frame inlined into our objects reports its qualified name. --disable-new-dtags makes the rpath
# a DT_RPATH, which also applies to the dependencies of the system libraries (the gRPC loaded by
# libprometheus or libcurl, libgrpc's own libabsl_*), where a DT_RUNPATH would not;
# LD_LIBRARY_PATH would also reach python3 in the interoperability test, which cannot load an
# instrumented library. The instrumented libraries have Debian's SONAMEs, so the programs link
# against Debian's and bind these at run time. A build configured with other flags (an older
# script) is configured again.
setup_args=(-Db_sanitize=thread -Db_lundef=false -Dexamples=false -Dbenchmarks=false
  -Dfuzzing=false -Doptimization=1 -Ddebug=false
  "-Dcpp_args=-gline-tables-only -fdebug-info-for-profiling"
  "-Dcpp_link_args=-Wl,-rpath,$grpc_cache/lib:$cache/lib -Wl,--disable-new-dtags")
stamp=$build/tsan-setup-args.txt
if ! [ -f "$build/build.ninja" ]; then
  CXX=clang++ meson setup "$build" "$source_dir" "${setup_args[@]}" >/dev/null ||
    die "cannot configure $build"
elif [ "$(cat "$stamp" 2>/dev/null)" != "${setup_args[*]}" ]; then
  meson configure "$build" "${setup_args[@]}" >/dev/null || die "cannot configure $build again"
fi
printf '%s' "${setup_args[*]}" >"$stamp"

# chosen WHAT: the names of the chosen tests (WHAT=names), or the files that they run and
# depend on (WHAT=targets), so that nothing else is compiled.
chosen() {
  python3 - "$build" "$tsan_tests" "$1" <<'PY'
import json, os, re, sys
build, pattern, what = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3]
info = os.path.join(build, "meson-info")
with open(os.path.join(info, "intro-targets.json")) as f:
    files = {t["id"]: t["filename"] for t in json.load(f)}
with open(os.path.join(info, "intro-tests.json")) as f:
    tests = json.load(f)
tests = [test for test in tests if pattern.search(test["name"])]
if what == "names":
    print("\n".join(test["name"] for test in tests))
    sys.exit(0)
wanted = set()
for test in tests:
    for target in test["depends"]:
        wanted.update(files.get(target, []))
print(" ".join(sorted(os.path.relpath(f, build) for f in wanted)))
PY
}
targets=$(chosen targets) || die "cannot list the targets of $build"
echo "Compiling the TSan build in $build (progress in $build/meson-logs/build-output.txt)"
start=$SECONDS
# shellcheck disable=SC2086 # a list of target files
if ! ninja -C "$build" $targets >"$build/meson-logs/build-output.txt" 2>&1; then
  tail -n 50 "$build/meson-logs/build-output.txt" >&2
  die "TSan build failed (log: $build/meson-logs/build-output.txt)"
fi
echo "Compiled in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"

# The daemon binds the instrumented Abseil and gRPC, gRPC's dependencies included.
devmgr=$build/cmd/devmgr/devmgr
if ldd "$devmgr" | grep 'libabsl_' | grep -v "=> $cache/lib/" >&2; then
  die "$devmgr binds an uninstrumented Abseil (above)"
fi
if ldd "$devmgr" | grep -E 'lib(grpc|gpr|upb|address_sorting)' | grep -v "=> $grpc_cache/lib/" >&2; then
  die "$devmgr binds an uninstrumented gRPC (above)"
fi

# ---- 3. The run ------------------------------------------------------------------------------

# Reports go to files (log_path), not to each process's stderr: a daemon or plugin process that
# a test started may have its stderr discarded, and its report must still fail the run. They are
# printed at the end. halt_on_error: a process stops at its first report.
reports=$build/meson-logs/tsan-reports
rm -rf "$reports" && mkdir -p "$reports"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=4
export TSAN_OPTIONS=$TSAN_OPTIONS:suppressions=$source_dir/tests/tsan.supp:log_path=$reports/report
mapfile -t names < <(chosen names)
echo "Running ${#names[@]} tests under TSan: ${names[*]}"
start=$SECONDS
status=0
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$(nproc)" \
  --timeout-multiplier 3 --logbase tsan "${names[@]}" || status=1
echo "Ran in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
if compgen -G "$reports/report.*" >/dev/null; then
  for report in "$reports"/report.*; do
    echo "---- $report" >&2
    cat "$report" >&2
  done
  echo "run-tsan: ThreadSanitizer reports above (files in $reports)" >&2
  status=1
fi
python3 "$source_dir/scripts/test-summary.py" "$build/meson-logs/tsan.junit.xml" |
  sed 's/^tests:/tsan:/' || status=1
exit $status
