/* SPDX-License-Identifier: GPL-2.0 */
/* The workqueue attribution's maps and its queue-side body.  Two objects carry
 * them: the workqueue object (hl_wq_queue, hl_wq_execute, hl_wq_irq) and the
 * proxy object, whose queue_work_on program does the queue side itself when the
 * session attributes work (one program on workqueue_queue_work, not two: one
 * dispatch, and the work item's function loaded once; docs/overhead.md has what
 * it saves).  The proxy object then reuses the workqueue object's maps. */
#ifndef HOTLINE_WORKQ_BPF_H
#define HOTLINE_WORKQ_BPF_H

#include "common.bpf.h"
#include "cpus.bpf.h"

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

/* Power of two; 16 KiB, under the 32 KiB up to which the kernel allocates an
 * array with kmalloc: a few pages of its direct map, kept recently touched
 * (docs/overhead.md, "pages, not lines"). */
#define HL_QUEUED_SLOTS 1024

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

/* A work item queued on this CPU: counted, by function, and its queue time kept
 * for the execute side.  `remote`: queued for another CPU.  `func`: work->func,
 * loaded by the caller (the caller just wrote the item: a direct load is a cache
 * hit). */
static __always_inline void hl_wq_queued(struct work_struct *work, __u64 func, bool remote)
{
	struct hl_workq_counts *w = hl_workq();
	struct hl_queued *q;
	__u64 key;

	if (!w)
		return;
	w->queued++;
	w->remote += remote;
	hl_count_work_func(hl_as_number(&w->scratch, func));
	key = hl_as_number(&w->scratch, (__u64)work);
	q = hl_queued_slot(key);
	if (q) {
		q->at_ns = bpf_ktime_get_ns();
		q->work = key;
	}
}

#endif /* HOTLINE_WORKQ_BPF_H */
