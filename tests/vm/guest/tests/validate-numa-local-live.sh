# SPDX-License-Identifier: Apache-2.0
# numa-local with --live on a command spread over both nodes: the command is
# hotline's own tcp-crr run (the guest has no Python), which uses every CPU it
# may (its affinity): CPUs 0-3 in baseline trials, node 0's CPUs 0-1 (memory
# bound to node 0) in fix trials.  The throughput is read from its output.
# 1 s runs, 3-6 pairs: the handoff criterion is decided in about 4 (TCG's CPU
# guardrail often is not, and the verdict may stay INCONCLUSIVE).  Exits with validate's status; checked by
# hotline_vm_check --test validate-numa-local-live.
# hlvm-timeout: 240
hotline validate --fix numa-local --live --yes --trials 3 --max-trials 6 --targets dst_release \
    --metric 'connections: [0-9]+ \(([0-9.]+)/s\)' -o verdict.json \
    -- hotline scenario run tcp-crr -d 1s
