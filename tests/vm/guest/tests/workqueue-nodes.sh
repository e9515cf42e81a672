# Workqueue attribution (hl_wq_queue, hl_wq_execute: the recording's
# totals.workqueue): writes of vm.stat_refresh, 20 from a shell pinned to
# CPU 0 and 60 from one pinned to CPU 2.  Each write runs
# schedule_on_each_cpu(refresh_vm_stats): 4 work items queued on the writer's
# CPU, 3 of them for another CPU, and each CPU executes one.  Checked by
# hotline_vm_check --test workqueue-nodes.
# hlvm-timeout: 90
refresh='i=0; while [ $i -lt $0 ]; do echo 1 > /proc/sys/vm/stat_refresh; i=$((i + 1)); done'
hotline record --targets queue_work_on --no-handoffs --quiet --output workq.json -- \
    sh -c "taskset -c 0 sh -c '$refresh' 20; taskset -c 2 sh -c '$refresh' 60"
