# SPDX-License-Identifier: Apache-2.0
# numa-local validated in tcp-crr across both nodes: baseline trials run the
# scenario's client/server pairs on CPUs 0-3 (both nodes, veth between two
# namespaces), fix trials on node 0's CPUs 0-1; the shared input route's
# dst_release handoffs across nodes should go away.  TCG-sized: 1 s trials,
# 3-10 per arm: the sequential test stops at the first pair where every
# criterion is decided (TCG's baseline handoffs vary by 2x between trials, so
# 4 pairs were too few).  Exits with validate's status; checked by hotline_vm_check
# --test validate-numa-local.
# hlvm-timeout: 180
hotline validate --fix numa-local --scenario tcp-crr --trials 3 --max-trials 10 --duration 1s \
    --targets dst_release -o verdict.json --junit verdict.xml
