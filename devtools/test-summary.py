#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
"""Counts test results of one or more meson build directories.

Each gtest binary writes per-case results to <builddir>/test-results/<test>.xml
(GTEST_OUTPUT); those cases are counted one by one. Every other meson test
counts as one. A gtest binary whose exit status failed without a failing case
(a crash, a sanitizer report at exit, a timeout) adds one failure.
Prints the failures, each with the last lines of its output (the tail of a
long CI log is what a reader sees), then one line: "N passed, M failed".
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

TAIL_LINES = 12  # enough for a soak's FAIL line and its figures


def tail(r):
    """The last lines a failed test printed, indented under its note."""
    out = [(r.get(k) or "").rstrip() for k in ("stdout", "stderr")]
    lines = "\n".join(o for o in out if o).splitlines()[-TAIL_LINES:]
    return "".join(f"\n    | {l[:300]}" for l in lines)


def count(builddir):
    passed, failed, notes = 0, 0, []
    log = os.path.join(builddir, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        return 0, 1, [f"{builddir}: no test log (did the build fail?)"]
    with open(log) as f:
        results = [json.loads(line) for line in f if line.strip()]
    for r in results:
        # testlog names read "project:suite / test"; the xml is named after the test.
        name, ok = r["name"].split(" / ")[-1], r["result"] in ("OK", "EXPECTEDFAIL")
        if r["result"] == "SKIP":
            failed += 1
            notes.append(f"{builddir}: {name}: skipped (a skipped test is a failure here)")
            continue
        xml = os.path.join(builddir, "test-results", name + ".xml")
        cases_failed = 0
        if os.path.exists(xml) and os.path.getmtime(xml) >= r.get("starttime", 0) - 1:
            for case in ET.parse(xml).getroot().iter("testcase"):
                if case.get("status") == "notrun" or case.find("skipped") is not None:
                    failed += 1
                    notes.append(f"{builddir}: {name}: {case.get('classname')}.{case.get('name')}: skipped")
                elif case.find("failure") is not None:
                    failed += 1
                    cases_failed += 1
                    notes.append(f"{builddir}: {name}: {case.get('classname')}.{case.get('name')}: failed")
                else:
                    passed += 1
            if not ok and cases_failed == 0:
                failed += 1
                notes.append(f"{builddir}: {name}: {r['result']} (exit {r.get('returncode')}) with no failing case" + tail(r))
        elif ok:
            passed += 1
        else:
            failed += 1
            notes.append(f"{builddir}: {name}: {r['result']}" + tail(r))
    return passed, failed, notes


def main():
    passed = failed = 0
    for d in sys.argv[1:]:
        p, f, notes = count(d)
        passed += p
        failed += f
        for n in notes:
            print(n)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
