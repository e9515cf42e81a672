# SPDX-License-Identifier: Apache-2.0
# The tracepoint proxies on two nodes (--mechanism tracepoint):
#  - dst_release (skb frees and tcp_destroy_sock): churn-split with its ends
#    on CPU 0 (node 0) and CPU 2 (node 1), as handoff-cross records with fentry;
#  - queue_work_on (workqueue_queue_work): writes of vm.stat_refresh, 20 from a
#    shell pinned to CPU 0 and 60 from one pinned to CPU 2, each queueing one
#    work item per CPU (4) from the writer's CPU, 3 of them for other CPUs.
# Checked by hotline_vm_check --test proxy-nodes.
# hlvm-timeout: 150
hotline record --handoff-share 100 --mechanism tracepoint --targets dst_release --workload churn-split --workload-cpus 0,2 \
    --duration 3s --quiet --output dst.json || exit 1
refresh='i=0; while [ $i -lt $0 ]; do echo 1 > /proc/sys/vm/stat_refresh; i=$((i + 1)); done'
hotline record --handoff-share 100 --mechanism tracepoint --targets queue_work_on --no-workq --quiet --output queue.json -- \
    sh -c "taskset -c 0 sh -c '$refresh' 20; taskset -c 2 sh -c '$refresh' 60"
