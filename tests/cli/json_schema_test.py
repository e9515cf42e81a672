#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates real hotline output against docs/schemas/*.schema.json.

usage: json_schema_test.py HOTLINE_BINARY SCHEMA_DIR unit|host

unit: the documents that need neither root nor the kernel (scenario list, the
fix catalog, a diagnosis, diff verdicts that PASS and FAIL, and the golden
validate verdicts).  host: the documents of a live run (probe, cost, a
recording, a scenario result, a verdict); run it under the host lock.  Each
document must name its schema and version, and every schema file must be used
by a case of one tier or be listed in PENDING with the subcommand that will
produce it.  A verdict case names the verdict it must be, and the exit status
must be that verdict's.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import jsonschema
from referencing import Registry, Resource

# Schema kinds whose producer is not in this tree yet, with the reason.
PENDING = {}
FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
GOLDEN = FIXTURES / "golden"
# A verdict's exit status (include/hotline/model/exit_codes.hpp).
VERDICT_EXIT = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 2, "NOT-APPLICABLE": 3, "ERROR": 4}


def diff(baseline, candidate, output):
    """`hotline diff` of two golden recordings on the kernel-pair fix they carry."""
    return ["diff", str(GOLDEN / baseline), str(GOLDEN / candidate), "--expect", "dst-refcnt-false-sharing", output]


# (tier, schema, arguments, where the document is: "stdout", a -o FILE option,
# or "fixture": a file the arguments name), then for a verdict the one it must be
CASES = [
    ("unit", "hotline.scenario-list", ["scenario", "list", "--json"], "stdout"),
    ("unit", "hotline.fix-list", ["fixes", "list", "--json"], "stdout"),
    ("unit", "hotline.fix", ["fixes", "show", "numa-local", "--json"], "stdout"),
    ("unit", "hotline.findings", ["diagnose", str(FIXTURES / "diagnose/guest-6.1-churn-split.json"), "--json"], "stdout"),
    ("unit", "hotline.findings", ["diagnose", str(FIXTURES / "diagnose/host-quiet.json"), "-o"], "file"),
    # The layout fact of two recordings decides: PASS in order, FAIL swapped (bootstrap, fixed sample).
    ("unit", "hotline.verdict", diff("diff_baseline.json", "diff_candidate.json", "--json"), "stdout", "PASS"),
    ("unit", "hotline.verdict", diff("diff_baseline.json", "diff_candidate.json", "-o"), "file", "PASS"),
    ("unit", "hotline.verdict", diff("diff_candidate.json", "diff_baseline.json", "--json"), "stdout", "FAIL"),
    # validate's own verdicts need root; these are the renderer's output for
    # constructed runs (sequential evidence, trials, trial length), which
    # tests/unit/golden_test.cpp keeps byte for byte.
    ("unit", "hotline.verdict", [str(GOLDEN / "verdict_pass.json")], "fixture", "PASS"),
    ("unit", "hotline.verdict", [str(GOLDEN / "verdict_mixed.json")], "fixture", "FAIL"),
    ("unit", "hotline.verdict", [str(GOLDEN / "verdict_error.json")], "fixture", "ERROR"),
    ("host", "hotline.probe", ["probe", "--json"], "stdout"),
    ("host", "hotline.cost", ["cost", "--json", "-d", "1s", "-t", "dst_release", "--workload", "churn"], "stdout"),
    ("host", "hotline.recording", ["record", "--json", "-d", "1s", "--workload", "churn"], "stdout"),
    ("host", "hotline.recording", ["record", "-q", "-d", "1s", "--workload", "churn", "-o"], "file"),
    ("host", "hotline.recording", ["discover", "--json", "-d", "1s", "--workload", "churn-split"], "stdout"),
    ("host", "hotline.scenario-result", ["scenario", "run", "tcp-crr", "-d", "1s", "--json"], "stdout"),
    # tcp_prequeue left the kernel in 4.14: a NOT-APPLICABLE verdict without trials.
    ("host", "hotline.verdict", ["validate", "--fix", "prequeue-dst-drop", "--json"], "stdout", "NOT-APPLICABLE"),
    ("host", "hotline.verdict", ["validate", "--fix", "prequeue-dst-drop", "-o"], "file", "NOT-APPLICABLE"),
]


def registry(schema_dir):
    resources = []
    for p in sorted(schema_dir.glob("*.schema.json")):
        doc = json.loads(p.read_text())
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def document(binary, args, where, tmp, verdict):
    if where == "fixture":
        return json.loads(pathlib.Path(args[0]).read_text())
    if where == "file":
        out = pathlib.Path(tmp) / "doc.json"
        args = args + [str(out)]
    r = subprocess.run([binary] + args, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    # 3: nothing observable still writes its document; a verdict exits with its own status.
    expected = (VERDICT_EXIT[verdict],) if verdict else (0, 3)
    if r.returncode not in expected:
        raise RuntimeError(f"exit {r.returncode}, expected {' or '.join(map(str, expected))}: {r.stderr.strip()}")
    text = out.read_text() if where == "file" else r.stdout
    return json.loads(text)


def check_verdict(doc, verdict):
    if doc.get("verdict") != verdict or doc.get("exit_code") != VERDICT_EXIT[verdict]:
        raise RuntimeError(f"verdict {doc.get('verdict')} with exit_code {doc.get('exit_code')}, "
                           f"expected {verdict} with {VERDICT_EXIT[verdict]}")


def main():
    binary, schema_dir, tier = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    reg = registry(schema_dir)
    failures, passed = 0, 0
    kinds = {p.name.removesuffix(".schema.json") for p in schema_dir.glob("*.schema.json")} - {"hotline.common"}
    uncovered = kinds - {c[1] for c in CASES} - set(PENDING)
    for k in sorted(uncovered):
        print(f"FAIL: docs/schemas/{k}.schema.json is validated by no case")
        failures += 1
    for case_tier, kind, args, where, *verdict in CASES:
        if case_tier != tier:
            continue
        verdict = verdict[0] if verdict else None
        shown = pathlib.Path(args[0]).name if where == "fixture" else f"hotline {' '.join(args)}"
        name = f"{shown} -> {kind}"
        try:
            with tempfile.TemporaryDirectory() as tmp:
                doc = document(binary, args, where, tmp, verdict)
            schema = json.loads((schema_dir / f"{kind}.schema.json").read_text())
            jsonschema.Draft202012Validator(schema, registry=reg).validate(doc)
            if verdict:
                check_verdict(doc, verdict)
            passed += 1
            print(f"ok: {name}")
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            failures += 1
            print(f"FAIL: {name}: {str(e).splitlines()[0]}")
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
