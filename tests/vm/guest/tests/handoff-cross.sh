# SPDX-License-Identifier: Apache-2.0
# dst handoffs across nodes: loopback connection churn whose two ends sit on
# CPU 0 (node 0) and CPU 2 (node 1); the route each connection holds is
# released on the other node.  Checked by hotline_vm_check --test handoff-cross.
# hlvm-timeout: 120
hotline record --handoff-share 100 --mechanism fentry --targets dst_release --workload churn-split \
    --workload-cpus 0,2 --duration 3s --quiet --output record.json
