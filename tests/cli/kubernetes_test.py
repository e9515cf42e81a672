#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes manifest keeps its promises (docs/deploy.md).

usage: kubernetes_test.py HOTLINE_BINARY MANIFEST DEPLOY_MD

The namespace carries Pod Security Admission labels (enforce privileged, audit
and warn baseline); the DaemonSet's priority class is defined in the manifest;
its image is hotline at the binary's version; its ConfigMap passes
`hotline serve --check-config`; every added capability has its reason in
docs/deploy.md.
"""
import pathlib
import subprocess
import sys
import tempfile

import yaml

failures = []


def check(what, ok):
    if not ok:
        failures.append(what)


def main():
    hotline, manifest, deploy_md = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    docs = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)

    ns = by_kind["Namespace"][0]
    labels = ns["metadata"].get("labels", {})
    check("namespace enforces the privileged Pod Security profile",
          labels.get("pod-security.kubernetes.io/enforce") == "privileged")
    for mode in ("audit", "warn"):
        check(f"namespace {mode}s at baseline", labels.get(f"pod-security.kubernetes.io/{mode}") == "baseline")

    ds = by_kind["DaemonSet"][0]
    pod = ds["spec"]["template"]["spec"]
    classes = {c["metadata"]["name"]: c for c in by_kind.get("PriorityClass", [])}
    pc = pod.get("priorityClassName")
    check(f"the DaemonSet's priority class {pc!r} is defined in the manifest", pc in classes)
    if pc in classes:
        check("the priority class never preempts workloads", classes[pc].get("preemptionPolicy") == "Never")
        check("the priority class is not the cluster default", classes[pc].get("globalDefault") is False)

    (container,) = pod["containers"]
    version = subprocess.run([hotline, "--version"], capture_output=True, text=True).stdout.split()[-1]
    check(f"image {container['image']!r} is hotline:{version}", container["image"] == f"hotline:{version}")

    config = by_kind["ConfigMap"][0]["data"]["serve.toml"]
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(config)
        f.flush()
        r = subprocess.run([hotline, "serve", "--check-config", "--config", f.name], capture_output=True, text=True)
        check(f"the ConfigMap's serve.toml passes serve --check-config ({r.stderr.strip()})", r.returncode == 0)

    deploy = deploy_md.read_text()
    for cap in container["securityContext"]["capabilities"]["add"]:
        check(f"docs/deploy.md gives the reason for {cap}", f"`{cap}`" in deploy or f"add: {cap}`" in deploy)
    check("docs/deploy.md says how the image reference is set", "podman push" in deploy)

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
