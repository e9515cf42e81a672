/* SPDX-License-Identifier: GPL-2.0 */
/* A directly probed target (fentry, kprobe): its slot in the session's `hits`
 * map and its entry -> exit latency, kept on a per-CPU stack. */
#ifndef HOTLINE_LATENCY_BPF_H
#define HOTLINE_LATENCY_BPF_H

#include "hits.bpf.h"

/* Set before load: push entry timestamps only when an exit program is attached. */
const volatile bool hl_latency = false;
/* Set before load: this target's slot in the session's shared `hits` map. */
const volatile __u32 hl_slot = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_lat_stack);
} lat_stack SEC(".maps");

static __always_inline struct hl_counts *hl_counts_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counts, &zero);
}

static __always_inline void hl_count_hit(void)
{
	hl_count_slot(hl_slot);
}

/* Entry pushes (timestamp, thread) on this CPU's stack.  A task that migrates
 * inside the function exits elsewhere and leaves a stale entry here; a full
 * stack is therefore taken as stale and restarted (its entries counted lost). */
static __always_inline void hl_lat_enter(void)
{
	struct hl_lat_stack *s;
	struct hl_counts *c;
	__u32 zero = 0, d;
	__u64 now, tid;

	if (!hl_latency)
		return;
	s = bpf_map_lookup_elem(&lat_stack, &zero);
	if (!s)
		return;
	d = s->depth;
	if (d >= HL_LAT_DEPTH) {
		c = hl_counts_get();
		if (c)
			c->lat_lost += d;
		d = 0;
	}
	now = bpf_ktime_get_ns();
	tid = bpf_get_current_pid_tgid();
#pragma unroll
	for (int i = 0; i < HL_LAT_DEPTH; i++) {
		if ((__u32)i == d) {
			s->ts[i] = now;
			s->tid[i] = tid;
		}
	}
	s->depth = d + 1;
}

/* Exit pops the newest entry of this thread.  Entries above it belong to calls
 * that can no longer return here (interrupts finish before the task resumes), so
 * they are dropped as lost; no entry of this thread means it entered on another CPU. */
static __always_inline void hl_lat_exit(void)
{
	struct hl_lat_stack *s;
	struct hl_counts *c;
	__u32 zero = 0, d, k = 0;
	__u64 now, delta, tid, ts = 0;
	bool found = false;

	s = bpf_map_lookup_elem(&lat_stack, &zero);
	c = hl_counts_get();
	if (!s || !c)
		return;
	now = bpf_ktime_get_ns();
	tid = bpf_get_current_pid_tgid();
	d = s->depth;
	if (d > HL_LAT_DEPTH)
		d = HL_LAT_DEPTH;
	/* Fully unrolled with constant indices: a computed index into the stack
	 * is refused by older verifiers even after a bounds check. */
#pragma unroll
	for (int i = HL_LAT_DEPTH - 1; i >= 0; i--) {
		if ((__u32)i >= d || found)
			continue;
		if (s->tid[i] == tid) {
			found = true;
			k = i;
			ts = s->ts[i];
		}
	}
	if (!found) {
		c->lat_lost++;
		return;
	}
	c->lat_lost += d - 1 - k;
	s->depth = k;
	delta = now - ts;
	hl_hist_add(c->hist, delta);
	c->lat_count++;
	c->lat_sum_ns += delta;
}

#endif /* HOTLINE_LATENCY_BPF_H */
