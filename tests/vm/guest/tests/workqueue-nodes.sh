# SPDX-License-Identifier: Apache-2.0
# Workqueue attribution (the recording's totals.workqueue): writes of
# vm.stat_refresh, 20 from a shell pinned to CPU 0 and 60 from one pinned to
# CPU 2.  Each write runs schedule_on_each_cpu(refresh_vm_stats): 4 work items
# queued on the writer's CPU, 3 of them for another CPU, and each CPU executes
# one.  Recorded twice: with the default plan (queue_work_on by fentry, the
# queue side in hl_wq_queue) and with --mechanism tracepoint (the queue side in
# the queue_work_on proxy's program).  Checked by hotline_vm_check --test
# workqueue-nodes.
# hlvm-timeout: 150
refresh='i=0; while [ $i -lt $0 ]; do echo 1 > /proc/sys/vm/stat_refresh; i=$((i + 1)); done'
writers="taskset -c 0 sh -c '$refresh' 20; taskset -c 2 sh -c '$refresh' 60"
hotline record --targets queue_work_on --no-handoffs --quiet --output workq.json -- sh -c "$writers" || exit 1
hotline record --mechanism tracepoint --targets queue_work_on --no-handoffs --quiet --output workq-proxy.json -- \
    sh -c "$writers"
