# --func NAME:argN on fentry and on kprobe.  hrtimer_nanosleep's argument 0 is
# the requested time, the same value for every 1 ms sleep, so as an "object" it
# moves to whichever CPU sleeps next: one task after another sleeps on CPU 0
# (node 0) then CPU 2 (node 1), 10 rounds: 19 handoffs, every one across nodes.
# hlvm-timeout: 120
for mech in fentry kprobe; do
    hotline record --mechanism "$mech" --func hrtimer_nanosleep:arg0 --no-workq --quiet --output "arg-$mech.json" -- \
        sh -c 'i=0; while [ $i -lt 10 ]; do taskset -c 0 usleep 1000; taskset -c 2 usleep 1000; i=$((i + 1)); done' ||
        exit 1
done
