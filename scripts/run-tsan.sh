#!/usr/bin/env bash
# The ThreadSanitizer run of docs/RELIABILITY.md ("ThreadSanitizer"), what `make tsan` runs.
#
# Every lock here is an absl::Mutex, whose TSan annotations are compiled into
# libabsl_synchronization.so, and Debian's Abseil is built without -fsanitize=thread. So this
# builds Debian's own Abseil source package (the very version gRPC 1.51 is linked against,
# Debian's patches and CMake options, hence Debian's SONAMEs) with -fsanitize=thread, once per
# machine and source version, in a cache outside the clone:
#   ${DEVMGR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/devmgr}/abseil-tsan-<version>
# then configures BUILD_DIR (default build-tsan) with clang and -fsanitize=thread, its programs
# carrying a DT_RPATH to that cache so that they, and the system gRPC they load, bind the
# instrumented Abseil while programs they start (python3, protoc) keep Debian's. gRPC stays
# uninstrumented: Debian's libraries, and its headers' inline code excluded by an ignorelist. It
# compiles only the concurrency-heavy suites (tsan_tests below) and runs them with
# tests/tsan.supp. Any report, from a test or from a daemon or plugin process a test started,
# fails the run.
#
# Usage: scripts/run-tsan.sh [BUILD_DIR]
#        scripts/run-tsan.sh --cache-warm   exits 0 when the instrumented Abseil is cached
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

if [ "${1:-}" = --cache-warm ]; then
  [ -f "$cache/.complete" ]
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
add_deb_src() {
  apt-cache showsrc abseil 2>/dev/null | grep -qxF "Version: $absl_version" && return
  local binary=/etc/apt/sources.list.d/debian.sources
  local sources=/etc/apt/sources.list.d/debian-src.sources
  [ -f "$binary" ] || die "no $binary: add a deb-src entry for abseil $absl_version by hand"
  as_root "Adding a deb-src entry beside $binary" \
    "sed \"s/^Types: deb\$/Types: deb-src/\" $binary >$sources && apt-get update -qq"
}

build_abseil() {
  local missing=() package
  for package in clang libclang-rt-14-dev cmake ninja-build dpkg-dev; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$' ||
      missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    as_root "Missing Debian packages" \
      "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${missing[*]}"
  fi
  add_deb_src

  local work=$cache.tmp
  rm -rf "$work" "$cache"
  mkdir -p "$work" || die "cannot create $work"
  echo "Building abseil $absl_version with -fsanitize=thread into $cache (once per machine;" \
    "log: $work/build.log)"
  # Debian's patches (the SONAME 20220623, the debian3 inline namespace, absl::optional and
  # friends as their own types, hardened mode) come with the source package; the headers we
  # compile against are Debian's /usr/include/absl, identical to this source's.
  (cd "$work" && apt-get source -qq --download-only "abseil=$absl_version" &&
    dpkg-source -x abseil_*.dsc src) >"$work/build.log" 2>&1 ||
    { tail -n 20 "$work/build.log" >&2; die "cannot fetch or unpack abseil $absl_version"; }

  # debian/rules' shared build: dh_auto_configure -- -DCMAKE_CXX_STANDARD=17
  # -DBUILD_SHARED_LIBS=ON, with dh's CMAKE_BUILD_TYPE=None and dpkg-buildflags' flags
  # (hardening=+bindnow); its tests are left out. Changed for TSan: clang (whose runtime the
  # project links), -fsanitize=thread, line tables instead of full debug info (enough for
  # reports, a faster build), and no _FORTIFY_SOURCE (it routes memcpy and friends to glibc's
  # __*_chk, which TSan does not intercept).
  local cxxflags ldflags
  cxxflags=$(cd "$work/src" &&
    DEB_BUILD_MAINT_OPTIONS="hardening=+bindnow reproducible=+fixfilepath" \
      dpkg-buildflags --get CXXFLAGS | sed 's/\(^\| \)-g /\1-gline-tables-only /')
  ldflags=$(DEB_BUILD_MAINT_OPTIONS="hardening=+bindnow" dpkg-buildflags --get LDFLAGS)
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
  nm -D "$cache/lib/libabsl_synchronization.so" | grep -q ' U __tsan_mutex_pre_lock' ||
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

# ---- 2. The project, instrumented ----------------------------------------------------------

# gRPC stays uninstrumented wherever its code is compiled: its libraries are Debian's, and the
# inline code of its C++ headers, instantiated in our objects, is excluded by an ignorelist.
# Instrumented, that code only reports gRPC's own hand-overs, which pass through gRPC core's
# lock-free queues where TSan sees no synchronization (docs/RELIABILITY.md).
ignorelist=$build/tsan-ignorelist.txt
ignored=$(printf '%s\n' 'src:*/grpcpp/*' 'src:*/grpc/*')
mkdir -p "$build"
# Rewritten only when it changes: every object depends on it.
[ "$(cat "$ignorelist" 2>/dev/null)" = "$ignored" ] || echo "$ignored" >"$ignorelist"
# -O1, which TSan's documentation asks for "to get a reasonable performance" (it slows code down
# 5-15 times already). -fdebug-info-for-profiling adds linkage names to the line tables, so that
# a frame inlined into our objects reports its qualified name (grpc::internal::...::Set, not
# Set), which is what lets a suppression name one function and nothing else. --disable-new-dtags makes the rpath a DT_RPATH, which also applies to the
# dependencies of the system libraries (libgrpc's own libabsl_*), where a DT_RUNPATH would not;
# LD_LIBRARY_PATH would also reach python3 in the interoperability test, which cannot load an
# instrumented library.
if ! [ -f "$build/build.ninja" ] &&
  ! CXX=clang++ meson setup "$build" "$source_dir" -Db_sanitize=thread -Db_lundef=false \
    -Dexamples=false -Dbenchmarks=false -Dfuzzing=false -Doptimization=1 -Ddebug=false \
    -Dcpp_args="-gline-tables-only -fdebug-info-for-profiling -fsanitize-ignorelist=$ignorelist" \
    -Dcpp_link_args="-Wl,-rpath,$cache/lib -Wl,--disable-new-dtags" >/dev/null; then
  die "cannot configure $build"
fi

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

# The daemon binds the instrumented Abseil, gRPC's dependencies included.
devmgr=$build/cmd/devmgr/devmgr
if ldd "$devmgr" | grep 'libabsl_' | grep -v "=> $cache/lib/" >&2; then
  die "$devmgr binds an uninstrumented Abseil (above)"
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
