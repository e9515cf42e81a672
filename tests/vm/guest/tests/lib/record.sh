# Shared by record-*.sh: `hotline record` with one forced mechanism while node 1
# (CPUs 2-3) does all the work:
#  - hotline's loopback TCP connection churn pinned to CPUs 2-3 (dst_release,
#    ipv4_dst_check; the recording counts its connections), and
#  - a shell pinned to CPUs 2-3 writing vm.stat_refresh, each write queueing one
#    work item per CPU from the writer's CPU (queue_work_on).
# Around the recording, the kernel's own counts, which owe nothing to hotline's
# BPF programs (see kernel_counts_*).
# Usage: record_on_node1 MECHANISM
record_on_node1() {
    kernel_counts_start || return 1
    taskset -c 2-3 sh -c 'while :; do echo 1 >/proc/sys/vm/stat_refresh; usleep 20000; done' &
    writer=$!
    hotline record --mechanism "$1" --targets dst_release,ipv4_dst_check,queue_work_on \
        --workload churn --workload-cpus 2-3 --duration 3s --quiet --output record.json
    rc=$?
    kill "$writer"
    wait "$writer" 2>/dev/null
    kernel_counts_stop || return 1
    return $rc
}

# The kernel's counts over a window that contains the recording's:
#  - snmp.before, snmp.after: /proc/net/snmp (Tcp ActiveOpens and PassiveOpens
#    count the churn's connections);
#  - queue-work.events: one line "CPU SECONDS FUNCTION" per workqueue_queue_work
#    event, from ftrace's ring buffer with CLOCK_MONOTONIC timestamps (the
#    recording's clock), so the check can cut the recording's window out of it;
#  - queue-work.overrun: per CPU, events the ring buffer lost (must be 0).
tracefs=/sys/kernel/tracing
queue_work_event=$tracefs/events/workqueue/workqueue_queue_work/enable

kernel_counts_start() {
    cp /proc/net/snmp snmp.before || return 1
    saved_clock=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $tracefs/trace_clock)
    saved_size=$(cat $tracefs/buffer_size_kb)
    echo 0 >$tracefs/tracing_on &&
        echo mono >$tracefs/trace_clock &&
        echo 2048 >$tracefs/buffer_size_kb &&
        echo >$tracefs/trace &&
        echo 1 >"$queue_work_event" &&
        echo 1 >$tracefs/tracing_on || {
        echo "record: cannot trace workqueue_queue_work through $tracefs"
        return 1
    }
}

kernel_counts_stop() {
    echo 0 >$tracefs/tracing_on
    echo 0 >"$queue_work_event"
    cp /proc/net/snmp snmp.after || return 1
    for d in $tracefs/per_cpu/cpu*; do
        echo "${d##*cpu} $(sed -n 's/^overrun: *//p' "$d/stats")"
    done >queue-work.overrun
    # Event lines: "TASK-PID [CPU] FLAGS SECONDS: workqueue_queue_work: ... function=F ..."
    # ("function F" in older kernels' format); the task name may hold spaces, so fields are
    # found by their shape.
    awk '/ workqueue_queue_work: / {
            if (!match($0, /\[[0-9]+\]/)) next
            cpu = substr($0, RSTART + 1, RLENGTH - 2) + 0
            if (!match($0, /[0-9]+\.[0-9]+: workqueue_queue_work: /)) next
            ts = substr($0, RSTART, index(substr($0, RSTART), ":") - 1)
            fn = "?"
            if (match($0, /function[= ][^ ]+/)) fn = substr($0, RSTART + 9, RLENGTH - 9)
            print cpu, ts, fn
        }' $tracefs/trace >queue-work.events
    echo >$tracefs/trace
    echo "$saved_clock" >$tracefs/trace_clock
    echo "${saved_size%% *}" >$tracefs/buffer_size_kb
    echo "record: kernel counts: $(wc -l <queue-work.events) workqueue_queue_work events"
}
