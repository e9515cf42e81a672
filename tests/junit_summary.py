#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One tier's CTest JUnit file (ctest --output-junit) as counts, and its verdict.

    tests/junit_summary.py TIER FILE [--allow-skip REGEX]...

Prints "TIER: N ran, P passed, F failed, S skipped" and, one per line, every
failed test and every skipped one with its reason.  Exits 1 when the tier ran
nothing, when a test failed, or when a test was skipped for a reason no
--allow-skip pattern names (scripts/test passes the conditions README.md lists
under "Skips"); 0 otherwise.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET


def skip_reason(case):
    """The test's own reason: gtest prints "FILE:LINE: Skipped", the reason,
    then "[  SKIPPED ]"; else CTest's message."""
    out = case.findtext("system-out") or ""
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            reason = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("[  SKIPPED ]"):
                    break
                reason.append(nxt)
            return " ".join(reason) or "no reason given"
    skipped = case.find("skipped")
    return (skipped.get("message") if skipped is not None else None) or "no reason given"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tier")
    ap.add_argument("junit")
    ap.add_argument("--allow-skip", action="append", default=[])
    a = ap.parse_args()
    try:
        cases = ET.parse(a.junit).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        print(f"{a.tier}: no JUnit result ({e}): the tier did not run")
        return 1
    passed, failed, skipped, bad_skips = [], [], [], []
    for c in cases:
        name, status = c.get("name"), c.get("status")
        if status == "run":
            passed.append(name)
        elif status in ("notrun", "disabled") or c.find("skipped") is not None:
            reason = skip_reason(c)
            skipped.append((name, reason))
            if not any(re.search(p, reason) for p in a.allow_skip):
                bad_skips.append((name, reason))
        else:
            failed.append(name)
    ran = len(passed) + len(failed)
    print(f"{a.tier}: {ran} ran, {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    for n in failed:
        print(f"  FAILED  {n}")
    for n, r in skipped:
        allowed = (n, r) not in bad_skips
        print(f"  {'skipped' if allowed else 'SKIPPED, no allowed condition'}  {n}: {r}")
    if ran == 0:
        print(f"  {a.tier}: no test ran")
    return 1 if ran == 0 or failed or bad_skips else 0


if __name__ == "__main__":
    sys.exit(main())
