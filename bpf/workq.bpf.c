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

/* Queued work by work function (hl_work_funcs: a per-CPU set-associative table). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_work_funcs);
} work_funcs SEC(".maps");

/* A queued work item and when it was queued. */
struct hl_queued {
	__u64 work; /* 0: free */
	__u64 at_ns;
};

#define HL_QUEUED_SLOTS 8192 /* power of two */

/* Work items waiting to run, each in the slot its address hashes to: written at
 * queue, cleared at execute.  A direct-mapped array, not a hash map: a queue or
 * an execute touches one line, with no lock and no helper call (the LRU hash map
 * this replaces took two locks and several cold lines on every work item).  An
 * item queued into a taken slot replaces the older one, whose execute then
 * counts as lost.  Plain stores, best effort like the owner table. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HL_QUEUED_SLOTS);
	__type(key, __u32);
	__type(value, struct hl_queued);
} queued_at SEC(".maps");

static __always_inline struct hl_workq_counts *hl_workq(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&workq, &zero);
}

/* The slot of a work item by its address.  Shifted by 3, not 6: work items
 * sharing a cache line are common (two in one structure) and must not share a
 * slot. */
static __always_inline struct hl_queued *hl_queued_slot(__u64 key)
{
	__u32 slot = hl_addr_hash(key, 3) & (HL_QUEUED_SLOTS - 1);

	return bpf_map_lookup_elem(&queued_at, &slot);
}

/* One more queued item of `func` on this CPU: its way in its set, a free way, or
 * `other` when the set is full. */
static __always_inline void hl_count_work_func(__u64 func)
{
	__u32 zero = 0, set, i;
	struct hl_work_funcs *t = bpf_map_lookup_elem(&work_funcs, &zero);
	struct hl_work_func *e;

	if (!t)
		return;
	set = hl_addr_hash(func, 4) & (HL_WORK_FUNC_SETS - 1);
#pragma unroll
	for (i = 0; i < HL_WORK_FUNC_WAYS; i++) {
		e = &t->e[set * HL_WORK_FUNC_WAYS + i];
		if (e->func == func) {
			e->queued++;
			return;
		}
		if (!e->func) {
			e->func = func;
			e->queued = 1;
			return;
		}
	}
	t->other++;
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_wq_queue, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	struct hl_workq_counts *w = hl_workq();
	struct hl_queued *q;
	__u64 key;

	if (!w)
		return 0;
	w->queued++;
	if (req_cpu >= 0 && req_cpu < hl_nr_cpus && req_cpu != bpf_get_smp_processor_id())
		w->remote++;
	/* The caller just wrote the work item: a direct load is a cache hit. */
	hl_count_work_func(hl_as_number(&w->scratch, (__u64)work->func));
	key = hl_as_number(&w->scratch, (__u64)work);
	q = hl_queued_slot(key);
	if (q) {
		q->at_ns = bpf_ktime_get_ns();
		q->work = key;
	}
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
