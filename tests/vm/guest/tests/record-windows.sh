# SPDX-License-Identifier: Apache-2.0
# record's default: handoffs tracked in windows (25% of each 2 s), the calls
# counted throughout.  churn-split with its ends on CPUs 0 and 2 hands each
# connection's route across nodes about twice (handoff-cross); scaled by the
# windows' share of the calls, the windows' handoffs say the same of the whole
# run.  Checked by hotline_vm_check --test record-windows.
# hlvm-timeout: 120
hotline record --mechanism fentry --targets dst_release --workload churn-split \
    --workload-cpus 0,2 --duration 8s --quiet --output record.json
