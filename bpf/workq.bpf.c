// SPDX-License-Identifier: GPL-2.0
/* queue_work_on attribution: which work functions are queued, remote queueing,
 * work items per hard interrupt, and queue -> execute latency. */
#include "workq.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Used where the queue_work_on proxy does not attribute work itself (fentry or
 * kprobe on queue_work_on, or no proxy). */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_wq_queue, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	hl_wq_queued(work, (__u64)work->func, hl_other_cpu(req_cpu, bpf_get_smp_processor_id()));
	return 0;
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(hl_wq_execute, struct work_struct *work)
{
	struct hl_workq_counts *w = hl_workq();
	struct hl_queued *q;
	__u64 key, at, delta;

	if (!w)
		return 0;
	w->executed++;
	key = hl_as_number(&w->scratch, (__u64)work);
	q = hl_queued_slot(key);
	if (!q || q->work != key) {
		w->lat_lost++;
		return 0;
	}
	at = q->at_ns;
	q->work = 0;
	delta = bpf_ktime_get_ns() - at;
	/* An item queued into the slot between the two loads above. */
	if ((__s64)delta < 0) {
		w->lat_lost++;
		return 0;
	}
	hl_hist_add(w->hist, delta);
	w->lat_count++;
	w->lat_sum_ns += delta;
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(hl_wq_irq)
{
	struct hl_workq_counts *w = hl_workq();

	if (w)
		w->irqs++;
	return 0;
}
