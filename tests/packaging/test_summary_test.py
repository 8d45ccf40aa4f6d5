#!/usr/bin/env python3
"""scripts/test-summary.py on JUnit logs shaped as Meson writes them: a gtest program's cases
(gtest's own report, its failures with their messages), a test without gtest's report (one
case, its output kept), skipped cases. The closing line counts them; each failed case is named
again before it with why it failed, at most a few lines of it; the exit status says whether
everything passed.

Usage: test_summary_test.py SOURCE_DIR
"""

import pathlib
import subprocess
import sys
import tempfile

GTEST_LOG = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="devmgr.manager.ManagerTest" tests="3" failures="1">
    <testcase name="Passes" classname="ManagerTest" time="0.1"/>
    <testcase name="Fails" classname="ManagerTest" time="0.3">
      <failure message="manager_test.cc:580&#x0A;Value of: streams&#x0A;  Actual: 2&#x0A;Expected: 1" type=""/>
      <failure message="manager_test.cc:{line}&#x0A;{many}" type=""/>
    </testcase>
    <testcase name="Skipped" classname="ManagerTest" time="0"><skipped/></testcase>
  </testsuite>
</testsuites>
"""

CRASH_LOG = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="devmgr" tests="2" errors="0" failures="1" skipped="0">
    <testcase name="integration_faults" classname="devmgr" time="3">
      <failure/>
      <system-out>{output}</system-out>
      <system-err>AddressSanitizer: heap-use-after-free</system-err>
    </testcase>
    <testcase name="plugins" classname="devmgr" time="1"/>
  </testsuite>
</testsuites>
"""


def summarize(script, *logs):
    done = subprocess.run([sys.executable, str(script)] + [str(log) for log in logs], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return done.returncode, done.stdout.splitlines()


def check(condition, what):
    if not condition:
        sys.exit(f"FAIL: {what}")


def main():
    script = pathlib.Path(sys.argv[1]) / "scripts" / "test-summary.py"
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        gtest = folder / "gtest.junit.xml"
        gtest.write_text(GTEST_LOG.format(line=581, many="&#x0A;".join(
            f"detail {i}" for i in range(40))))
        crash = folder / "crash.junit.xml"
        crash.write_text(CRASH_LOG.format(output="\n".join(f"line {i}" for i in range(40))))
        passing = folder / "passing.junit.xml"
        passing.write_text(CRASH_LOG.replace("<failure/>", "").format(output="fine"))

        code, lines = summarize(script, passing)
        check(code == 0, f"a passing log exits 0, not {code}: {lines}")
        check(lines == ["tests: 2 passed, 0 failed, 0 skipped"], f"passing log: {lines}")

        code, lines = summarize(script, gtest, crash)
        check(code == 1, f"a failing log exits 1, not {code}: {lines}")
        check(lines[-1] == "tests: 2 passed, 2 failed, 1 skipped", f"closing line: {lines[-1]}")
        check(lines[0] == "failed: ManagerTest.Fails", f"first failure named: {lines}")
        check(lines[1:5] == ["  manager_test.cc:580", "  Value of: streams", "    Actual: 2",
                             "  Expected: 1"], f"its first message: {lines[1:5]}")
        check("  manager_test.cc:581" in lines, f"its second message: {lines}")
        check("  detail 20" not in lines, f"a failure's lines are bounded: {lines}")
        crashed = lines.index("failed: devmgr.integration_faults")
        check(lines[crashed + 1:-1][-1] == "  AddressSanitizer: heap-use-after-free",
              f"a test without gtest's report shows the end of its output: {lines[crashed:]}")
        check("  line 39" in lines and "  line 0" not in lines,
              f"the end of its output, bounded: {lines[crashed:]}")

        code, lines = summarize(script, folder / "missing.junit.xml")
        check(code == 1 and lines[-1] == "tests: 0 passed, 1 failed, 0 skipped",
              f"a log that cannot be read counts as a failure: {code} {lines}")
    print("ok")


if __name__ == "__main__":
    main()
