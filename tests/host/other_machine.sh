#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The host tier as if on another machine: lockdown off, and two NUMA nodes of
# which node 1 has memory but no CPUs (CPUs 0-1 on node 0, a real configuration
# and what the kernel's bpf_get_numa_node_id reports here).  hotline reads the
# machine itself, so the other machine is shown to hotline and to the tests'
# fact reader alike, in a private mount namespace:
#   /sys/devices/system/node  a bind mount of a node tree made here
#   /sys/kernel/security      a tmpfs whose lockdown file says [none]
# and HOTLINE_HOST_FACTS names a file describing the same machine
# (tests/lib/machine_facts.hpp), which the host tests' expectations come from.
# Nothing changes outside the namespace.
#   other_machine.sh BUILD_DIR [CTEST_ARGS...]
# Without CTEST_ARGS, the host tests whose expectations depend on the machine run.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "other_machine.sh: needs root (mount namespaces, BPF)" >&2; exit 2; }
build=$(realpath "$1")
shift
if [ $# = 0 ]; then
    set -- -R '^(MachineFactsHost|HostTest|HostDiagnose|HandoffHost|CostHost|FuncHost|LatencyOracleHost|IrqOracleHost|OracleHost)\.|^RecordOptionsHost\.PerCpu|^ServeHost\.(PerTargetMechanisms|HandoffMatrix)'
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

scratch=$(mktemp -d /tmp/hl-other-machine.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
node=$scratch/node
mkdir -p "$node/node0" "$node/node1"
printf '0\n' >"$node/has_cpu"
printf '0-1\n' >"$node/has_memory"
printf '0-1\n' >"$node/has_normal_memory"
printf '0-1\n' >"$node/online"
printf '0-1\n' >"$node/possible"
printf '0-1\n' >"$node/node0/cpulist"
printf '\n' >"$node/node1/cpulist"
printf '10 20\n' >"$node/node0/distance"
printf '20 10\n' >"$node/node1/distance"
cat >"$scratch/facts.json" <<'EOF'
{"lockdown": "none", "nodes": {"0": [0, 1], "1": []}}
EOF
echo "other machine: node 0 CPUs 0-1, node 1 memory only, lockdown none ($scratch/facts.json)"

# The namespace's own mounts; the tests run inside it.
export HOTLINE_HOST_FACTS=$scratch/facts.json
unshare -m --propagation private bash -c '
    set -e
    mount --bind "$1/node" /sys/devices/system/node
    mount -t tmpfs -o size=64k hl-other-machine /sys/kernel/security
    printf "[none] integrity confidentiality\n" >/sys/kernel/security/lockdown
    build=$2
    shift 2
    # The facts reader, without the file, must see the same machine the file describes.
    seen=$(env -u HOTLINE_HOST_FACTS "$build/tests/host_tests" --gtest_filter=MachineFactsHost.* 2>&1) || true
    for want in "machine fact lockdown = none (from /sys/kernel/security/lockdown)" \
                "machine fact nodes = {node 0: 0 1; node 1: memory only} (from /sys/devices/system/node/node*/cpulist)"; do
        grep -qF "$want" <<<"$seen" || { echo "other_machine.sh: the facts reader does not see: $want" >&2; echo "$seen" >&2; exit 1; }
        echo "read in the namespace: $want"
    done
    "$build/hotline" probe | grep -E "^(lockdown|topology|  node)" | sed "s/^/hotline probe in the namespace: /"
    ctest --test-dir "$build" -L host --output-on-failure "$@"
' other-machine "$scratch" "$build" "$@"
