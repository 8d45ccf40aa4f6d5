#!/usr/bin/env python3
"""Prints one closing line, "tests: N passed, M failed, K skipped", from Meson's JUnit logs
(one test case per gtest case, one per other test). Exits 1 if anything failed or no test ran."""
import re
import sys
import xml.etree.ElementTree as ET

# Characters XML 1.0 forbids (a test's captured output may hold terminal escapes).
INVALID_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            root = ET.fromstring(INVALID_XML.sub("", log.read()))
    except (OSError, ET.ParseError) as err:
        print(f"cannot read {path}: {err}", file=sys.stderr)
        failed += 1
        continue
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
