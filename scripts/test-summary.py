#!/usr/bin/env python3
"""Prints one closing line, "tests: N passed, M failed, K skipped", from Meson's JUnit logs
(one test case per gtest case, one per other test). Before it, each failed case's name and why
it failed (gtest's failure messages; the end of its output for a test that gtest did not report
on, one that crashed), a few lines each: CI keeps only the end of the log, and the failures
printed earlier may have scrolled out of it. Exits 1 if anything failed or no test ran."""
import re
import sys
import xml.etree.ElementTree as ET

# Characters XML 1.0 forbids (a test's captured output may hold terminal escapes).
INVALID_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# How much of the failures to repeat at the end.
SHOWN_FAILURES = 5
LINES_PER_FAILURE = 12


def why(case, verdict):
    """The lines that say why `case` failed: gtest's messages, else the end of its output."""
    messages = [f.get("message") or f.text or "" for f in case.iter("failure")]
    lines = "\n".join(m for m in messages if m).splitlines()
    if lines:
        return lines[:LINES_PER_FAILURE]
    output = "\n".join(case.findtext(tag) or "" for tag in ("system-out", "system-err"))
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-LINES_PER_FAILURE:] or [verdict.tag]


passed = failed = skipped = 0
failures = []
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            root = ET.fromstring(INVALID_XML.sub("", log.read()))
    except (OSError, ET.ParseError) as err:
        print(f"cannot read {path}: {err}", file=sys.stderr)
        failed += 1
        continue
    for case in root.iter("testcase"):
        verdict = case.find("failure")
        if verdict is None:
            verdict = case.find("error")
        if verdict is not None:
            failed += 1
            failures.append((f"{case.get('classname')}.{case.get('name')}", why(case, verdict)))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
for name, lines in failures[:SHOWN_FAILURES]:
    print(f"failed: {name}")
    for line in lines:
        print(f"  {line}")
if len(failures) > SHOWN_FAILURES:
    print(f"... and {len(failures) - SHOWN_FAILURES} more failed (the logs above name them)")
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
