# discover on two nodes: tcp-crr with its client/server pairs on CPUs 0-3 (both
# nodes, one server address), fentry on dst_release (the shared input route,
# dst_entry) and inet_csk_accept (the listener, sock) beside the default
# tracepoints; then the same on node 0's CPUs 0-1.  Checked by hotline_vm_check
# --test discover-nodes: across nodes dst_entry and sock are among the top 5
# types by cross-node handoffs, on one node they have none.
# hlvm-timeout: 150
hotline discover --scenario tcp-crr --cpus 0-3 --duration 3s --functions dst_release,inet_csk_accept \
    --output across.json
hotline discover --scenario tcp-crr --cpus 0,1 --duration 3s --functions dst_release,inet_csk_accept \
    --output node0.json
