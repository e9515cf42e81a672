# SPDX-License-Identifier: Apache-2.0
# The socket-route proxy against fentry on dst_release, on the same run: a
# tracepoint recording of dst_release (outer.json: tp_btf consume_skb, kfree_skb
# and tcp_destroy_sock feeding one owner table) whose window strictly contains an
# fentry recording (inner.json) of the tcp-crr scenario on CPUs 0-1, where
# connections on both CPUs to one address hand the shared input route between
# them.  Checked by hotline_vm_check --test socket-route-vs-fentry.
# hlvm-timeout: 180
hotline record --handoff-share 100 --mechanism tracepoint --targets dst_release --duration 150s --quiet \
    --output outer.json >outer.txt 2>outer.err &
outer=$!

waited=0
until grep -q '^hotline: dst_release ' outer.err; do
    if ! kill -0 "$outer" 2>/dev/null || [ "$waited" -ge 600 ]; then
        echo "socket-route-vs-fentry: the tracepoint recording did not attach (waited $((waited / 10)) s)"
        cat outer.err
        kill -TERM "$outer" 2>/dev/null
        wait "$outer"
        exit 1
    fi
    usleep 100000
    waited=$((waited + 1))
done
cat outer.err

hotline record --handoff-share 100 --mechanism fentry --targets dst_release --scenario tcp-crr --cpus 0-1 \
    --duration 3s --quiet --output inner.json >inner.txt
rc=$?

kill -TERM "$outer"
wait "$outer"
orc=$?
echo "socket-route-vs-fentry: inner (fentry) exit $rc, outer (tracepoint) exit $orc"
[ "$rc" -eq 0 ] && [ "$orc" -eq 0 ]
