#!/usr/bin/env python3
"""Validates real hotline output against docs/schemas/*.schema.json.

usage: json_schema_test.py HOTLINE_BINARY SCHEMA_DIR unit|host

unit: the documents that need neither root nor the kernel (scenario list, the
fix catalog).  host: the documents of a live run (probe, cost, a recording, a
scenario result, a verdict); run it under the host lock.  Each document must
name its schema and version, and every schema file must be used by a case of
one tier or be listed in PENDING with the subcommand that will produce it.
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

# (tier, schema, arguments, where the document is: "stdout" or a -o FILE option)
CASES = [
    ("unit", "hotline.scenario-list", ["scenario", "list", "--json"], "stdout"),
    ("unit", "hotline.fix-list", ["fixes", "list", "--json"], "stdout"),
    ("unit", "hotline.fix", ["fixes", "show", "numa-local", "--json"], "stdout"),
    ("unit", "hotline.findings", ["diagnose", str(FIXTURES / "diagnose/guest-6.1-churn-split.json"), "--json"], "stdout"),
    ("unit", "hotline.findings", ["diagnose", str(FIXTURES / "diagnose/host-quiet.json"), "-o"], "file"),
    ("host", "hotline.probe", ["probe", "--json"], "stdout"),
    ("host", "hotline.cost", ["cost", "--json", "-d", "1s", "-t", "dst_release", "--workload", "churn"], "stdout"),
    ("host", "hotline.recording", ["record", "--json", "-d", "1s", "--workload", "churn"], "stdout"),
    ("host", "hotline.recording", ["record", "-q", "-d", "1s", "--workload", "churn", "-o"], "file"),
    ("host", "hotline.scenario-result", ["scenario", "run", "tcp-crr", "-d", "1s", "--json"], "stdout"),
    # tcp_prequeue left the kernel in 4.14: a NOT-APPLICABLE verdict without trials.
    ("host", "hotline.verdict", ["validate", "--fix", "prequeue-dst-drop", "--json"], "stdout"),
    ("host", "hotline.verdict", ["validate", "--fix", "prequeue-dst-drop", "-o"], "file"),
]


def registry(schema_dir):
    resources = []
    for p in sorted(schema_dir.glob("*.schema.json")):
        doc = json.loads(p.read_text())
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def document(binary, args, where, tmp):
    if where == "file":
        out = pathlib.Path(tmp) / "doc.json"
        args = args + [str(out)]
    r = subprocess.run([binary] + args, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if r.returncode not in (0, 3):  # 3: nothing observable / NOT-APPLICABLE still writes its document
        raise RuntimeError(f"exit {r.returncode}: {r.stderr.strip()}")
    text = out.read_text() if where == "file" else r.stdout
    return json.loads(text)


def main():
    binary, schema_dir, tier = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    reg = registry(schema_dir)
    failures, passed = 0, 0
    kinds = {p.name.removesuffix(".schema.json") for p in schema_dir.glob("*.schema.json")} - {"hotline.common"}
    uncovered = kinds - {c[1] for c in CASES} - set(PENDING)
    for k in sorted(uncovered):
        print(f"FAIL: docs/schemas/{k}.schema.json is validated by no case")
        failures += 1
    for case_tier, kind, args, where in CASES:
        if case_tier != tier:
            continue
        name = f"hotline {' '.join(args)} -> {kind}"
        try:
            with tempfile.TemporaryDirectory() as tmp:
                doc = document(binary, args, where, tmp)
            schema = json.loads((schema_dir / f"{kind}.schema.json").read_text())
            jsonschema.Draft202012Validator(schema, registry=reg).validate(doc)
            passed += 1
            print(f"ok: {name}")
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            failures += 1
            print(f"FAIL: {name}: {str(e).splitlines()[0]}")
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
