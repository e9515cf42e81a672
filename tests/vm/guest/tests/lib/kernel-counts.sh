# SPDX-License-Identifier: Apache-2.0
# The kernel's own counts over a window that contains a recording's, which owe
# nothing to hotline's BPF programs; the files they leave are judged by
# hotline_vm_check.
#  - tcp_opens_before, tcp_opens_after: snmp.before, snmp.after, copies of
#    /proc/net/snmp (Tcp ActiveOpens and PassiveOpens count connections);
#  - queue_work_trace_start, queue_work_trace_stop: queue-work.events, one line
#    "CPU SECONDS FUNCTION" per workqueue_queue_work event, from ftrace's ring
#    buffer with CLOCK_MONOTONIC timestamps (the recording's clock), so the
#    check can cut the recording's window out of it; queue-work.overrun: per
#    CPU, events the ring buffer lost (must be 0).
tcp_opens_before() { cp /proc/net/snmp snmp.before; }
tcp_opens_after() { cp /proc/net/snmp snmp.after; }

tracefs=/sys/kernel/tracing
queue_work_event=$tracefs/events/workqueue/workqueue_queue_work/enable

queue_work_trace_start() {
    saved_clock=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $tracefs/trace_clock)
    saved_size=$(cat $tracefs/buffer_size_kb)
    if ! { echo 0 >$tracefs/tracing_on &&
        echo mono >$tracefs/trace_clock &&
        echo 2048 >$tracefs/buffer_size_kb &&
        echo >$tracefs/trace &&
        echo 1 >"$queue_work_event" &&
        echo 1 >$tracefs/tracing_on; }; then
        echo "kernel-counts: cannot trace workqueue_queue_work through $tracefs"
        return 1
    fi
}

# Stops the trace, writes the files, and puts the clock and buffer size back.
queue_work_trace_stop() {
    echo 0 >$tracefs/tracing_on
    echo 0 >"$queue_work_event"
    for d in "$tracefs"/per_cpu/cpu*; do
        echo "${d##*cpu} $(sed -n 's/^overrun: *//p' "$d/stats")"
    done >queue-work.overrun
    # Event lines: "TASK-PID [CPU] FLAGS SECONDS: workqueue_queue_work: ... function=F ..."
    # ("function F" in older kernels' format); the task name may hold spaces, so
    # fields are found by their shape.
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
    echo "kernel-counts: $(wc -l <queue-work.events) workqueue_queue_work events"
}
