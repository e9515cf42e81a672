# SPDX-License-Identifier: Apache-2.0
# fentry and kprobe count the same calls: a kprobe recording (outer.json) runs
# over a window that strictly contains an fentry recording (inner.json) of
# hotline's loopback connection churn on node 1 (CPUs 2-3), both attached to
# dst_release and ipv4_dst_check at once.  Nothing else runs on node 1, so both
# count the same node-1 calls.  /proc/net/snmp before and after the fentry
# recording gives the kernel's own count of its connections
# (lib/kernel-counts.sh).  Checked by hotline_vm_check --test fentry-vs-kprobe.
# hlvm-timeout: 150
. /hlvm/tests/lib/kernel-counts.sh
targets=dst_release,ipv4_dst_check

# The outer recording stops on SIGTERM; its duration is only a backstop.
hotline record --handoff-share 100 --mechanism kprobe --targets "$targets" --duration 100s --quiet \
    --output outer.json >outer.txt 2>outer.err &
outer=$!

# Session::open attaches every program before the plan is printed.
waited=0
until grep -q '^hotline: ipv4_dst_check ' outer.err; do
    if ! kill -0 "$outer" 2>/dev/null || [ "$waited" -ge 600 ]; then
        echo "fentry-vs-kprobe: the kprobe recording did not attach (waited $((waited / 10)) s)"
        cat outer.err
        kill -TERM "$outer" 2>/dev/null
        wait "$outer"
        exit 1
    fi
    usleep 100000
    waited=$((waited + 1))
done
cat outer.err

tcp_opens_before
hotline record --handoff-share 100 --mechanism fentry --targets "$targets" --workload churn --workload-cpus 2-3 \
    --duration 3s --quiet --output inner.json >inner.txt
rc=$?
tcp_opens_after

kill -TERM "$outer"
wait "$outer"
orc=$?
echo "fentry-vs-kprobe: inner (fentry) exit $rc, outer (kprobe) exit $orc"
[ "$rc" -eq 0 ] && [ "$orc" -eq 0 ]
