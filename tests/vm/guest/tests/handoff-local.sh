# SPDX-License-Identifier: Apache-2.0
# The same churn with both ends on node 0 (CPUs 0 and 1): handoffs stay inside
# the node.  Checked by hotline_vm_check --test handoff-local.
# hlvm-timeout: 120
hotline record --handoff-share 100 --mechanism fentry --targets dst_release --workload churn-split \
    --workload-cpus 0,1 --duration 3s --quiet --output record.json
