# SPDX-License-Identifier: Apache-2.0
# discover on two nodes.  tcp-crr with its client/server pairs on CPUs 0-3
# (both nodes, one server address, one listening socket every server accepts
# from) and fentry on dst_release: the shared input route (dst_entry) and the
# listener (sock, seen by sk_data_ready where each handshake completes) cross
# nodes; on node 0's CPUs 0-1 they cannot.  Connection sockets are judged on the
# churn: each connection served on the other node (churn-split on CPUs 0 and 2)
# hands its sockets across, each CPU keeping its own (churn) does not.  Checked
# by hotline_vm_check --test discover-nodes.
# hlvm-timeout: 180
hotline discover --scenario tcp-crr --shared-listener --cpus 0-3 --duration 3s --functions dst_release --output crr-across.json
hotline discover --scenario tcp-crr --shared-listener --cpus 0,1 --duration 3s --functions dst_release --output crr-node0.json
hotline discover --workload churn-split --workload-cpus 0,2 --duration 3s --types sock --output split.json
hotline discover --workload churn --workload-cpus 0,2 --duration 3s --types sock --output own.json
