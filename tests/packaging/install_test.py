#!/usr/bin/env python3
"""Installs the build into a temporary folder and uses it as an embedder would.

1. `meson install --destdir` of the build directory (nothing is rebuilt).
2. The installed tree: the program, libdevmgr.a, every generated protobuf header beside the
   module headers, devmgr.pc, the systemd unit (checked by systemd-analyze when present), the
   man page devmgr(1) and the bash, zsh and fish completion scripts.
3. With nothing but the installed files and `pkg-config devmgr`: one program that includes every
   installed header and links the whole archive (so a missing header or a library missing from
   Requires fails here, not at an embedder's), the example's out-of-tree meson.build configured,
   examples/embed_manager.cc and examples/embed_node.cc compiled and linked, and
   examples/dra_driver.cc compiled.
4. The examples run against the installed `devmgr plugin fake`: each must admit a pod and print
   run options that carry the devices it was given; the installed `devmgr checkpoint` then reads
   the checkpoint each left.
"""

import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RESOURCE = "example.com/gpu"
PLUGIN_DEVICES = 3
REQUESTED = 2
DEVICE_PREFIX = "gpu-"


class TestFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def run(command, what, env=None, cwd=None, timeout=300):
    """Runs a command to completion; its output is shown only when it fails."""
    result = subprocess.run(command, env=env, cwd=cwd, timeout=timeout, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    check(result.returncode == 0,
          f"{what} failed (exit {result.returncode}): {' '.join(map(str, command))}\n"
          f"{result.stdout}")
    return result.stdout


def staged(destdir, path):
    """Where an absolute install path lands under DESTDIR."""
    return destdir / pathlib.Path(path).relative_to("/")


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        check(time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def stop(process):
    """Ends a process this test started: SIGTERM, then SIGKILL if it does not go in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def check_tree(args, destdir):
    bindir = staged(destdir, args.bindir)
    libdir = staged(destdir, args.libdir)
    include = staged(destdir, args.includedir) / "devmgr"

    program = bindir / "devmgr"
    check(os.access(program, os.X_OK), f"{program} is not installed as an executable")
    # The module archives are inside libdevmgr.a; test libraries are never installed.
    archives = sorted(p.name for p in libdir.glob("*.a"))
    check(archives == ["libdevmgr.a"], f"{libdir} holds {archives}, expected only libdevmgr.a")
    check((libdir / "pkgconfig" / "devmgr.pc").is_file(), "devmgr.pc is not installed")

    for header in ["devicemanager/manager.h", "devicemanager/pod.h", "podresources/server.h",
                   "podresources/providers.h", "pluginwatcher/watcher.h", "deviceplugin/plugin.h",
                   "checkpoint/checkpoint.h", "dra/checkpoint.h", "common/logging.h"]:
        check((include / header).is_file(), f"{include / header} is not installed")
    proto_root = pathlib.Path(args.proto_build_dir)
    for generated in args.generated_header:
        relative = (pathlib.Path(args.build_dir) / generated).relative_to(proto_root)
        check((include / relative).is_file(),
              f"generated header {relative} is not installed under {include}: give its "
              f"custom_target in proto/{relative.parent}/meson.build install: true and "
              f"install_dir as proto/deviceplugin/v1beta1/meson.build does")

    unit = staged(destdir, args.unitdir) / "devmgr.service"
    check(unit.is_file(), f"{unit} is not installed")
    exec_start = f"ExecStart={args.bindir}/devmgr serve --root-dir /var/lib/kubelet"
    check(exec_start in unit.read_text().splitlines(), f"{unit} lacks the line {exec_start}")

    # What the build made by running the program (packaging/meson.build): the man page and the
    # completion scripts, where man, bash-completion, zsh and fish look for them.
    man = staged(destdir, args.mandir) / "man1" / "devmgr.1"
    check(man.is_file(), f"the man page {man} is not installed")
    page = man.read_text()
    check(".TH DEVMGR 1 " in page and '\n.SS "devmgr pods list"\n' in page,
          f"{man} is not devmgr(1) with its commands")
    data = staged(destdir, args.datadir)
    for script, first_line in [("bash-completion/completions/devmgr", "# bash completion"),
                               ("zsh/site-functions/_devmgr", "#compdef devmgr"),
                               ("fish/vendor_completions.d/devmgr.fish", "# fish completion")]:
        path = data / script
        check(path.is_file(), f"the completion script {path} is not installed")
        check(path.read_text().startswith(first_line), f"{path} does not start with {first_line}")
    return program, include


def verify_unit(args, destdir, program, workdir):
    """systemd-analyze checks every directive and that each command exists: pointed at the
    staged program, since the unit names where it will be once really installed."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("systemd-analyze not found: the unit's directives are not verified")
        return
    unit = staged(destdir, args.unitdir) / "devmgr.service"
    copy = workdir / "devmgr.service"
    copy.write_text(unit.read_text().replace(f"{args.bindir}/devmgr", str(program)))
    # verify exits 0 even for unknown keys and bad values, which it only prints.
    complaints = run([analyze, "verify", str(copy)], "systemd-analyze verify of the installed unit")
    check(complaints.strip() == "", f"systemd-analyze verify of the installed unit:\n{complaints}")


def build_against_install(args, destdir, include, workdir):
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = str(staged(destdir, args.libdir) / "pkgconfig")
    # DESTDIR is a sysroot as far as pkg-config is concerned: it prefixes devmgr.pc's -I and -L.
    env["PKG_CONFIG_SYSROOT_DIR"] = str(destdir)
    flags = run(["pkg-config", "--cflags", "--libs", "devmgr"], "pkg-config devmgr", env).split()
    check(f"-I{include}" in flags, f"pkg-config --cflags does not name {include}: {flags}")
    compiler = args.cxx + ["-std=c++20"]
    # The programs link as the build's own do (its cpp_link_args: lld where the test build uses
    # it, which links the whole instrumented archive in a fifth of GNU ld's time).
    linker = compiler + args.link_arg

    # Every installed header in one translation unit, and every object of the archive linked:
    # what one embedder or another may include or pull in must resolve from the install alone.
    headers = sorted(str(p.relative_to(include)) for p in include.rglob("*.h"))
    everything = workdir / "everything.cc"
    everything.write_text("".join(f'#include "{h}"\n' for h in headers) + "int main() {}\n")
    run(linker + [str(everything), "-o", str(workdir / "everything"),
                  "-Wl,--whole-archive", "-ldevmgr", "-Wl,--no-whole-archive"] + flags,
        "compiling every installed header and linking the whole archive", cwd=workdir)

    # The embedder's copy: the example and its out-of-tree meson.build, away from the sources.
    project = workdir / "embedder"
    project.mkdir()
    shutil.copy(pathlib.Path(args.source_dir) / "examples" / "embed_manager.cc", project)
    shutil.copy(pathlib.Path(args.source_dir) / "examples" / "out-of-tree" / "meson.build",
                project)
    run([args.meson, "setup", str(project / "build"), str(project)],
        "meson setup of examples/out-of-tree (dependency('devmgr'))", env)
    example = workdir / "embed_manager"
    run(linker + [str(project / "embed_manager.cc"), "-o", str(example)] + flags,
        "compiling examples/embed_manager.cc with pkg-config devmgr", cwd=workdir)
    node_example = workdir / "embed_node"
    run(linker + [str(pathlib.Path(args.source_dir) / "examples" / "embed_node.cc"), "-o",
                  str(node_example)] + flags,
        "compiling examples/embed_node.cc with pkg-config devmgr", cwd=workdir)
    # The DRA driver example only compiled: the whole archive linked above resolves its calls.
    run(compiler + ["-fsyntax-only", str(pathlib.Path(args.source_dir) / "examples" /
                                         "dra_driver.cc")] + flags,
        "compiling examples/dra_driver.cc with pkg-config devmgr", cwd=workdir)
    return example, node_example


def run_against_plugin(program, command, root, workdir, name):
    """Runs an example (`command`) that serves ROOT/device-plugins/kubelet.sock, starts the
    installed `devmgr plugin fake` once that socket is there, and returns the example's output
    after it exits 0."""
    out_path, err_path, plugin_log = (workdir / f"{name}.out", workdir / f"{name}.err",
                                      workdir / f"{name}-plugin.log")
    processes = []
    try:
        with open(out_path, "w") as out, open(err_path, "w") as err:
            embedder = subprocess.Popen([str(part) for part in command], stdout=out, stderr=err)
        processes.append(embedder)
        # The plugin would retry a registration that finds no kubelet.sock, but starting it once
        # the socket is there keeps this test quick and its failures plain.
        socket = root / "device-plugins" / "kubelet.sock"
        wait_until(lambda: socket.is_socket() or embedder.poll() is not None,
                   30, f"{name} to serve kubelet.sock")
        check(embedder.poll() is None, f"{name} exited early:\n{err_path.read_text()}")
        with open(plugin_log, "w") as log:
            processes.append(subprocess.Popen(
                [str(program), "plugin", "fake", "--root-dir", str(root), "--resource", RESOURCE,
                 "--devices", str(PLUGIN_DEVICES), "--id-prefix", DEVICE_PREFIX,
                 "--check-interval", "100ms"],
                stdout=log, stderr=subprocess.STDOUT))
        try:
            code = embedder.wait(timeout=90)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"{name} did not finish within 90 s") from None
        output = out_path.read_text()
        check(code == 0, f"{name} exited {code}:\n{output}{err_path.read_text()}\n"
                         f"plugin:\n{plugin_log.read_text()}")
        return output
    finally:
        for process in reversed(processes):
            stop(process)


def run_example(program, example, workdir):
    root = workdir / "root"
    plugin_dir = root / "device-plugins"
    output = run_against_plugin(program, [example, plugin_dir, RESOURCE, REQUESTED], root, workdir,
                                "embed_manager")

    # `devmgr plugin fake` names its devices PREFIX0, PREFIX1, ... and its Allocate answers one
    # DEVMGR_FAKE_DEVICE_<n>=PREFIX<n> per device: the run options must carry exactly the
    # allocated ones.
    allocated = re.findall(rf"^allocated {re.escape(RESOURCE)} (\S+)$", output, re.M)
    check(len(allocated) == REQUESTED and len(set(allocated)) == REQUESTED,
          f"expected {REQUESTED} distinct allocated devices:\n{output}")
    offered = {f"{DEVICE_PREFIX}{i}" for i in range(PLUGIN_DEVICES)}
    check(set(allocated) <= offered, f"allocated devices the plugin never offered:\n{output}")
    envs = re.findall(r"^env DEVMGR_FAKE_DEVICE_(\d+)=(\S+)$", output, re.M)
    check(sorted(value for _, value in envs) == sorted(allocated),
          f"run options do not carry exactly the allocated devices:\n{output}")
    check(all(value == f"{DEVICE_PREFIX}{index}" for index, value in envs),
          f"run options pair variables and devices wrongly:\n{output}")

    checkpoint = plugin_dir / "kubelet_internal_checkpoint"
    run([str(program), "checkpoint", "verify", str(checkpoint)], "devmgr checkpoint verify")
    shown = run([str(program), "checkpoint", "show", "-o", "json", str(checkpoint)],
                "devmgr checkpoint show")
    check(all(device in shown for device in allocated),
          f"the checkpoint lacks the allocated devices:\n{shown}")


def run_node_example(args, program, example, workdir):
    """embed_node runs the whole node under its root and admits examples/pod.yaml: a regular init
    container with one device, whose device the app container with two reuses."""
    root = workdir / "node-root"
    manifest = pathlib.Path(args.source_dir) / "examples" / "pod.yaml"
    output = run_against_plugin(program, [example, root, RESOURCE, manifest], root, workdir,
                                "embed_node")
    warm_up = re.findall(r"^warm-up DEVMGR_FAKE_DEVICE_\d+=(\S+)$", output, re.M)
    trainer = re.findall(r"^trainer DEVMGR_FAKE_DEVICE_\d+=(\S+)$", output, re.M)
    check(len(warm_up) == 1 and len(set(trainer)) == 2 and warm_up[0] in trainer,
          f"expected the init container's device reused by the trainer's two:\n{output}")
    run([str(program), "checkpoint", "verify", str(root / "device-plugins" /
                                                   "kubelet_internal_checkpoint")],
        "devmgr checkpoint verify of embed_node's checkpoint")
    check((root / "device-plugins" / "devmgr_admitted_pods").is_file(),
          "embed_node left no pod record")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meson", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--bindir", required=True, help="absolute install path")
    parser.add_argument("--libdir", required=True, help="absolute install path")
    parser.add_argument("--includedir", required=True, help="absolute install path")
    parser.add_argument("--unitdir", required=True, help="absolute install path")
    parser.add_argument("--mandir", required=True, help="absolute install path")
    parser.add_argument("--datadir", required=True, help="absolute install path")
    parser.add_argument("--proto-build-dir", required=True)
    parser.add_argument("--cxx", action="append", required=True, help="compiler command, in parts")
    parser.add_argument("--link-arg", action="append", default=[],
                        help="the build's link arguments, added where a program is linked")
    parser.add_argument("generated_header", nargs="*", help="generated headers in the build tree")
    args = parser.parse_args()

    # Short, under /tmp: unix socket paths must stay below 108 bytes.
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="devmgr-pkg-", dir="/tmp"))
    try:
        destdir = workdir / "destdir"
        run([args.meson, "install", "-C", args.build_dir, "--no-rebuild", "--skip-subprojects",
             "--quiet", "--destdir", str(destdir)], "meson install")
        program, include = check_tree(args, destdir)
        verify_unit(args, destdir, program, workdir)
        example, node_example = build_against_install(args, destdir, include, workdir)
        run_example(program, example, workdir)
        run_node_example(args, program, node_example, workdir)
    except TestFailure as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("installed tree, out-of-tree build and example runs: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
