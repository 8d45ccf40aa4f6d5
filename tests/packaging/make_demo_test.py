#!/usr/bin/env python3
"""`make demo` compiles only what the demo runs: the devmgr program and what it links, no test,
benchmark or example. Reads what make would run (make -n) and what ninja would build for it
(ninja -t inputs), without building anything.

Usage: make_demo_test.py SOURCE_DIR BUILD_DIR
"""

import re
import subprocess
import sys


def main():
    source_dir, build_dir = sys.argv[1], sys.argv[2]
    planned = subprocess.run(["make", "-n", "-C", source_dir, "demo", f"BUILD={build_dir}"],
                             check=True, text=True, stdout=subprocess.PIPE).stdout
    ninja = [line for line in planned.splitlines() if re.match(r"\s*ninja\b", line)]
    if len(ninja) != 1:
        sys.exit(f"make demo should run ninja once, with targets; it plans:\n{planned}")
    words = ninja[0].split()
    targets = [w for w in words[words.index(build_dir) + 1:] if not w.startswith("-")]
    if targets != ["cmd/devmgr/devmgr"]:
        sys.exit(f"make demo should build cmd/devmgr/devmgr alone, not {targets or 'everything'}")
    inputs = subprocess.run(["ninja", "-C", build_dir, "-t", "inputs", *targets], check=True,
                            text=True, stdout=subprocess.PIPE).stdout.split()
    # Built files and sources alike (sources are "../" from the build folder).
    extra = [i for i in inputs if re.match(r"(\.\./)?(tests|examples)/", i) or
             re.match(r"(\.\./)?bench/[a-z_]+_bench", i)]
    if extra:
        sys.exit("make demo would build what the demo does not run:\n  " + "\n  ".join(extra))
    print(f"make demo builds {targets[0]} from {len(inputs)} inputs, none of them tests")


if __name__ == "__main__":
    main()
