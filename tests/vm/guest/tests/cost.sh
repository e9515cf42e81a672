# SPDX-License-Identifier: Apache-2.0
# `hotline cost` on the direct paths, fentry and then kprobe forced, while the
# loopback churn runs and a shell writes vm.stat_refresh (queue_work_on).
# Checked by hotline_vm_check --test cost: each target gets a row on its own
# attach point with the empty program and the counting, latency and handoff
# variants, all of which saw the same calls.  Guests run under TCG, so the
# nanoseconds are printed, never judged.
# hlvm-timeout: 150
sh -c 'while :; do echo 1 >/proc/sys/vm/stat_refresh; usleep 20000; done' &
writer=$!
rc=0
for m in fentry kprobe; do
    hotline cost --json --mechanism "$m" --targets dst_release,ipv4_dst_check,queue_work_on \
        --workload churn --duration 2s >"cost-$m.json" || rc=$?
done
kill "$writer"
wait "$writer" 2>/dev/null
exit $rc
