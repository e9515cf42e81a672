// SPDX-License-Identifier: GPL-2.0
/* queue_work_on attribution: which work functions are queued, remote queueing,
 * work items per hard interrupt, and queue -> execute latency. */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set before load. */
const volatile __u32 hl_nr_cpus = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_workq_counts);
} workq SEC(".maps");

/* work->func -> queued count; per-CPU values, so an existing key never shares a write. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} work_funcs SEC(".maps");

/* work item -> queue timestamp: written at queue, deleted at execute. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, __u64);
} queued_at SEC(".maps");

static __always_inline struct hl_workq_counts *hl_workq(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&workq, &zero);
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_wq_queue, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	struct hl_workq_counts *w = hl_workq();
	__u64 func, one = 1, now, *n;
	__u64 key = (__u64)work;

	if (!w)
		return 0;
	w->queued++;
	if (req_cpu >= 0 && req_cpu < hl_nr_cpus && req_cpu != bpf_get_smp_processor_id())
		w->remote++;
	func = (__u64)BPF_CORE_READ(work, func);
	n = bpf_map_lookup_elem(&work_funcs, &func);
	if (n)
		(*n)++;
	else
		bpf_map_update_elem(&work_funcs, &func, &one, BPF_NOEXIST);
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&queued_at, &key, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(hl_wq_execute, struct work_struct *work)
{
	struct hl_workq_counts *w = hl_workq();
	__u64 key = (__u64)work, *ts, delta;

	if (!w)
		return 0;
	w->executed++;
	ts = bpf_map_lookup_elem(&queued_at, &key);
	if (!ts) {
		w->lat_lost++;
		return 0;
	}
	delta = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&queued_at, &key);
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
