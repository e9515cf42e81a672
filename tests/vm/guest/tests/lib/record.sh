# SPDX-License-Identifier: Apache-2.0
# Shared by record-*.sh: `hotline record` with one forced mechanism while node 1
# (CPUs 2-3) does all the work:
#  - hotline's loopback TCP connection churn pinned to CPUs 2-3 (dst_release,
#    ipv4_dst_check; the recording counts its connections), and
#  - a shell pinned to CPUs 2-3 writing vm.stat_refresh, each write queueing one
#    work item per CPU from the writer's CPU (queue_work_on).
# Around the recording, the kernel's own counts, which owe nothing to hotline's
# BPF programs (lib/kernel-counts.sh).
# Usage: record_on_node1 MECHANISM
. /hlvm/tests/lib/kernel-counts.sh

record_on_node1() {
    tcp_opens_before || return 1
    queue_work_trace_start || return 1
    taskset -c 2-3 sh -c 'while :; do echo 1 >/proc/sys/vm/stat_refresh; usleep 20000; done' &
    writer=$!
    hotline record --mechanism "$1" --targets dst_release,ipv4_dst_check,queue_work_on \
        --workload churn --workload-cpus 2-3 --duration 3s --quiet --output record.json
    rc=$?
    kill "$writer"
    wait "$writer" 2>/dev/null
    queue_work_trace_stop
    tcp_opens_after || return 1
    return $rc
}
