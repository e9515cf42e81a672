/* SPDX-License-Identifier: GPL-2.0 */
/* Counting and latency helpers shared by every hotline BPF program.
 * All state is per-CPU: a hit never writes a cache line another CPU writes. */
#ifndef HOTLINE_COMMON_BPF_H
#define HOTLINE_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hotline/abi.h"

char LICENSE[] SEC("license") = "GPL";

/* Set before load: push entry timestamps only when an exit program is attached. */
const volatile bool hl_latency = false;

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
	struct hl_counts *c = hl_counts_get();

	if (c) {
		c->calls++;
		c->events++;
	}
}

/* floor(log2(v)) without loops, for the histogram slot. */
static __always_inline __u32 hl_log2(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline void hl_lat_enter(void)
{
	struct hl_lat_stack *s;
	__u32 zero = 0, d;

	if (!hl_latency)
		return;
	s = bpf_map_lookup_elem(&lat_stack, &zero);
	if (!s)
		return;
	d = s->depth;
	if (d < HL_LAT_DEPTH) {
		s->ts[d] = bpf_ktime_get_ns();
		s->tid[d] = bpf_get_current_pid_tgid();
	}
	/* Deeper nesting still counts depth so exits stay paired with entries. */
	if (d < 64)
		s->depth = d + 1;
}

static __always_inline void hl_lat_exit(void)
{
	struct hl_lat_stack *s;
	struct hl_counts *c;
	__u32 zero = 0, d, slot;
	__u64 now, delta;

	s = bpf_map_lookup_elem(&lat_stack, &zero);
	c = hl_counts_get();
	if (!s || !c)
		return;
	d = s->depth;
	if (d == 0) {
		/* Attached mid-call, or the entry ran on another CPU. */
		c->lat_lost++;
		return;
	}
	d--;
	s->depth = d;
	if (d >= HL_LAT_DEPTH || s->tid[d] != bpf_get_current_pid_tgid()) {
		c->lat_lost++;
		return;
	}
	now = bpf_ktime_get_ns();
	delta = now - s->ts[d];
	slot = delta ? hl_log2(delta) : 0;
	if (slot >= HL_HIST_SLOTS)
		slot = HL_HIST_SLOTS - 1;
	/* clang clamps a zero-extended copy and indexes with the original register;
	 * verifiers before ~6.8 (Debian's 5.10, 6.1, 6.12) then see an unbounded
	 * index and refuse the program (EACCES).  Re-check the register used. */
	barrier_var(slot);
	if (slot < HL_HIST_SLOTS)
		c->hist[slot]++;
	c->lat_count++;
	c->lat_sum_ns += delta;
}

#endif /* HOTLINE_COMMON_BPF_H */
