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

/* include/linux/skbuff.h: the low bit of _skb_refdst marks a dst the skb holds
 * no reference on (a macro, so not in vmlinux.h). */
#ifndef SKB_DST_NOREF
#define SKB_DST_NOREF 1UL
#endif

/* Set before load: push entry timestamps only when an exit program is attached. */
const volatile bool hl_latency = false;
/* Set before load: this target's slot in the session's shared `hits` map. */
const volatile __u32 hl_slot = 0;

/* One map for the whole session: the agent creates it and every object reuses it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_hits);
} hits SEC(".maps");

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

static __always_inline struct hl_hits *hl_hits_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&hits, &zero);
}

static __always_inline void hl_count_slot(__u32 slot)
{
	struct hl_hits *h = hl_hits_get();

	slot &= HL_MAX_TARGETS - 1;
	if (h) {
		h->t[slot].calls++;
		h->t[slot].events++;
	}
}

static __always_inline void hl_count_hit(void)
{
	hl_count_slot(hl_slot);
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

/* arr[idx]++ on an array (not a pointer), idx clamped to its last entry.
 * clang clamps a zero-extended copy and indexes with the original register;
 * verifiers before ~6.8 (Debian's 5.10, 6.1, 6.12) then see an unbounded index
 * and refuse the program (EACCES), so the index is checked again on the
 * register used.  A macro: through a pointer parameter clang no longer folds
 * the array's offset into the load. */
#define hl_inc_clamped(arr, idx)                                       \
	do {                                                           \
		const __u32 __n = sizeof(arr) / sizeof((arr)[0]);      \
		__u32 __i = (idx);                                     \
                                                                       \
		if (__i >= __n)                                        \
			__i = __n - 1;                                 \
		barrier_var(__i);                                      \
		if (__i < __n)                                         \
			(arr)[__i]++;                                  \
	} while (0)

/* Counts a latency in its log2 slot of a histogram array (HL_HIST_SLOTS). */
#define hl_hist_add(hist, delta_ns)                                    \
	do {                                                           \
		__u64 __d = (delta_ns);                                \
                                                                       \
		hl_inc_clamped(hist, __d ? hl_log2(__d) : 0);          \
	} while (0)

/* 1 if an skb's _skb_refdst holds a reference on its dst (set, noref bit
 * clear), else 0, without a branch: whether an skb holds one is not predictable. */
static __always_inline __u64 hl_dst_refcounted(unsigned long refdst)
{
	return ((refdst | -refdst) >> 63) & ~refdst & SKB_DST_NOREF;
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

/* ---- handoff tracking ---------------------------------------------------
 * The one shared structure: a bounded owner table with one slot per live object,
 * written only when the object's owner (last CPU to touch it) changes or the
 * object replaces another.  It is a 2-way set-associative array, not a hash map:
 * a lookup is an index and two compares, with no locks (an LRU hash map takes a
 * spinlock on insert, which is contention of its own).  In a full set the way
 * whose owner changed longest ago is replaced and counted as an eviction.  Slot
 * contents are best effort (plain stores, no atomics: an atomic here would add
 * the very contention being measured); the per-CPU totals are exact. */

const volatile __u32 hl_obj_mode = HL_OBJ_NONE;
const volatile __u32 hl_obj_arg = 0;
const volatile __u32 hl_obj_is_work = 0;    /* object is a work_struct: remember ->func */
const volatile __u32 hl_handoff_sample = 1; /* track objects whose hash % N == 0 */
const volatile __u32 hl_remote_arg = HL_ARG_NONE; /* argument holding a requested CPU */
const volatile __u32 hl_nr_cpus = 0;
const volatile __u32 hl_owner_sets = 1;     /* sets in the owner table (power of two) */

/* Mmapable: the kernel then page-aligns the values, so a set (two 32-byte ways)
 * is exactly one cache line, and the agent scans the table in its mapping. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hl_owner);
} owners SEC(".maps");

/* Work items: the work function of the object in the same way of `owners`,
 * written only when a work item is inserted.  Mmapable, so that the agent reads
 * both tables from their mappings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} owner_aux SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_handoff_counts);
} handoffs SEC(".maps");

/* aux: a work item's function when the caller could read it directly (tp_btf),
 * else 0 and it is read here, only when the object is inserted. */
static __always_inline void hl_track_aux(__u64 obj, __s64 req_cpu, __u64 aux)
{
	struct hl_handoff_counts *hc;
	struct hl_owner *w0, *w1, *o, *victim;
	__u32 zero = 0, cpu, node, prev, set, k0, k1, k, cpu_node;
	__u64 h, *ax;

	if (!obj)
		return;
	hc = bpf_map_lookup_elem(&handoffs, &zero);
	if (!hc)
		return;
	/* fentry and tp_btf arguments are typed pointers, on which the verifier
	 * allows no shifts or multiplies; a round trip through map memory gives
	 * back the same bits as a plain number. */
	hc->scratch = obj;
	barrier();
	obj = *(volatile __u64 *)&hc->scratch;
	h = ((obj >> 6) * 0x9E3779B97F4A7C15ULL) >> 32;
	/* Sample whole objects, not hits, so every touch of a tracked object counts. */
	if (hl_handoff_sample > 1 && (h >> 16) % hl_handoff_sample)
		return;
	set = h & (hl_owner_sets - 1);
	k0 = set * 2;
	k1 = k0 + 1;
	w0 = bpf_map_lookup_elem(&owners, &k0);
	w1 = bpf_map_lookup_elem(&owners, &k1);
	if (!w0 || !w1)
		return;
	cpu = bpf_get_smp_processor_id();
	hc->tracked++;
	if (req_cpu >= 0 && req_cpu < hl_nr_cpus && req_cpu != cpu)
		hc->remote++;
	o = w0->obj == obj ? w0 : w1->obj == obj ? w1 : NULL;
	/* Same CPU, so same node: the common case needs no node lookup (a helper call). */
	if (o && HL_CPU_OF(o->cpu_node) == HL_CPU_OF(cpu)) {
		hc->same_cpu++;
		return;
	}
	node = bpf_get_numa_node_id();
	cpu_node = HL_CPU_NODE(cpu, node);
	if (!o) {
		/* The way whose owner changed longest ago (wrap-safe jiffies). */
		k = !w0->obj ? k0 : !w1->obj ? k1 : (__s32)(w0->stamp - w1->stamp) <= 0 ? k0 : k1;
		victim = k == k0 ? w0 : w1;
		if (victim->obj)
			hc->evicted++;
		victim->cpu_node = cpu_node;
		victim->handoffs = 0;
		victim->cross_node = 0;
		victim->stamp = (__u32)bpf_jiffies64();
		victim->obj = obj;
		if (hl_obj_is_work) {
			ax = bpf_map_lookup_elem(&owner_aux, &k);
			if (ax)
				*ax = aux ? aux : (__u64)BPF_CORE_READ((struct work_struct *)obj, func);
		}
		hc->new_objects++;
		return;
	}
	prev = HL_NODE_OF(o->cpu_node);
	if (prev == node) {
		hc->cross_cpu++;
	} else {
		hc->cross_node++;
		o->cross_node++;
	}
	hl_inc_clamped(hc->from_node, prev);
	o->handoffs++;
	o->cpu_node = cpu_node;
	o->stamp = (__u32)bpf_jiffies64();
}

static __always_inline void hl_track(__u64 obj, __s64 req_cpu)
{
	hl_track_aux(obj, req_cpu, 0);
}

/* The object of a hit from an skb argument: its dst, noref bit cleared. */
static __always_inline __u64 hl_skb_dst(__u64 skb)
{
	return BPF_CORE_READ((struct sk_buff *)skb, _skb_refdst) & ~SKB_DST_NOREF;
}

#endif /* HOTLINE_COMMON_BPF_H */
