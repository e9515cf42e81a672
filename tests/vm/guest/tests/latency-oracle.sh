# SPDX-License-Identifier: Apache-2.0
# Latency against a duration the test controls: hrtimer_nanosleep timed by fexit
# and by kretprobe while one task pinned to CPU 2 sleeps a requested time over
# and over (busybox usleep: one nanosleep each), at two requested times.
# vm_check judges each recording against the request (sleep-MECH-US.json).
# hlvm-timeout: 180
sleeps() {  # MECHANISM MICROSECONDS COUNT
    hotline record --mechanism "$1" --func hrtimer_nanosleep --no-workq --no-handoffs --quiet \
        --output "sleep-$1-$2.json" -- \
        taskset -c 2 sh -c "i=0; while [ \$i -lt $3 ]; do usleep $2; i=\$((i + 1)); done"
}
for mech in fentry kprobe; do
    sleeps "$mech" 40000 20 || exit 1
    sleeps "$mech" 160000 6 || exit 1
done
