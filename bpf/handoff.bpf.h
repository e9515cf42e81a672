/* SPDX-License-Identifier: GPL-2.0 */
/* Handoff tracking: which CPU touched a kernel object last, for objects that
 * track hits (fentry, kprobe, the proxies' _track programs).
 *
 * The one shared structure is a bounded owner table with one slot per live
 * object, written only when the object's owner (last CPU to touch it) changes
 * or the object replaces another.  It is a 4-way set-associative array, not a
 * hash map: a lookup is an index and up to four compares, with no locks (an LRU
 * hash map takes a spinlock on insert, which is contention of its own).  In a
 * full set the way whose owner changed longest ago is replaced and counted as
 * an eviction.  Slot contents are best effort (plain stores, no atomics: an atomic
 * here would add the very contention being measured); the per-CPU totals are
 * exact. */
#ifndef HOTLINE_HANDOFF_BPF_H
#define HOTLINE_HANDOFF_BPF_H

#include "common.bpf.h"
#include "cpus.bpf.h"
#include "owner_table.bpf.h"

/* Set before load. */
const volatile __u32 hl_obj_mode = HL_OBJ_NONE;
const volatile __u32 hl_obj_arg = 0;
const volatile __u32 hl_obj_is_work = 0;    /* object is a work_struct: remember ->func */
const volatile __u32 hl_handoff_sample = 1; /* track objects whose hash % N == 0 */
const volatile __u32 hl_remote_arg = HL_ARG_NONE; /* argument holding a requested CPU */
const volatile __u32 hl_owner_sets = 1;     /* sets in the owner table (power of two) */

/* Mmapable: the kernel then page-aligns the values, so a set (four 32-byte
 * ways) is two cache lines of one page, and the agent scans the table in its
 * mapping.  The agent sizes it before load: one value per set. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hl_owner_set);
} owners SEC(".maps");

/* Work items: the work function of the object in the same way of `owners`
 * (index set * HL_OWNER_WAYS + way), written only when a work item is inserted.
 * Mmapable, so that the agent reads both tables from their mappings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HL_OWNER_WAYS);
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

/* Whether tracking is on, and in which window (HL_TRACK_OFF, HL_GEN_MASK): the
 * agent writes it at each window's edge; 0 (tracking throughout, one window)
 * unless it does.  Read by every tracked hit, written a few times a second: a
 * line every CPU keeps shared. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} track_gate SEC(".maps");

HL_OWNER_TABLE_FNS(hl_owner, struct hl_owner_set)

static __always_inline void hl_owner_insert(struct hl_owner_set *s, __u32 set, __u64 obj, __u32 cpu_node,
					    __u64 aux, struct hl_handoff_counts *hc)
{
	__u32 way = hl_owner_victim(s) & (HL_OWNER_WAYS - 1), k;
	struct hl_owner *victim = &s->w[way];
	__u64 *ax;

	if (victim->obj)
		hc->evicted++;
	victim->cpu_node = cpu_node;
	victim->handoffs = 0;
	victim->cross_node = 0;
	victim->stamp = (__u32)bpf_jiffies64();
	victim->obj = obj;
	if (hl_obj_is_work) {
		k = set * HL_OWNER_WAYS + way;
		ax = bpf_map_lookup_elem(&owner_aux, &k);
		if (ax)
			*ax = aux ? aux : (__u64)BPF_CORE_READ((struct work_struct *)obj, func);
	}
	hc->new_objects++;
}

/* A touch of an object whose owner was recorded in an earlier tracking window:
 * who touched it in between is unknown, so it is no handoff; it opens the
 * object's owner for this window. */
static __always_inline void hl_owner_reopen(struct hl_owner *o, __u32 cpu_node)
{
	o->cpu_node = cpu_node;
	o->stamp = (__u32)bpf_jiffies64();
}

/* Called once per counted call (a proxy's calls are its matching events), so
 * that `windowed` counts the calls of the tracking windows.
 * aux: a work item's function when the caller could read it directly (tp_btf),
 * else 0 and it is read here, only when the object is inserted. */
static __always_inline void hl_track_aux(__u64 obj, __s64 req_cpu, __u64 aux)
{
	struct hl_handoff_counts *hc;
	struct hl_owner_set *s;
	struct hl_owner *o;
	__u32 zero = 0, cpu, node, prev, set, way, gen, cpu_node, *gate;
	__u64 h;

	gate = bpf_map_lookup_elem(&track_gate, &zero);
	if (!gate)
		return;
	gen = *gate;
	if (gen & HL_TRACK_OFF)
		return;
	gen &= HL_GEN_MASK;
	hc = bpf_map_lookup_elem(&handoffs, &zero);
	if (!hc)
		return;
	hc->windowed++;
	if (!obj)
		return;
	obj = hl_as_number(&hc->scratch, obj);
	h = hl_addr_hash(obj, 6);
	/* Sample whole objects, not hits, so every touch of a tracked object counts. */
	if (hl_handoff_sample > 1 && (h >> 16) % hl_handoff_sample)
		return;
	set = h & (hl_owner_sets - 1);
	s = bpf_map_lookup_elem(&owners, &set);
	if (!s)
		return;
	cpu = bpf_get_smp_processor_id();
	hc->tracked++;
	hc->remote += hl_other_cpu(req_cpu, cpu);
	way = hl_owner_find(s, obj);
	/* Same CPU in this window, so same node: the common case needs no node
	 * lookup (a helper call). */
	if (way < HL_OWNER_WAYS &&
	    HL_OWNER_KEY(s->w[way & (HL_OWNER_WAYS - 1)].cpu_node) == HL_OWNER_KEY(HL_CPU_NODE_GEN(cpu, 0, gen))) {
		hc->same_cpu++;
		return;
	}
	node = bpf_get_numa_node_id();
	cpu_node = HL_CPU_NODE_GEN(cpu, node, gen);
	if (way >= HL_OWNER_WAYS) {
		hl_owner_insert(s, set, obj, cpu_node, aux, hc);
		return;
	}
	o = &s->w[way & (HL_OWNER_WAYS - 1)];
	if (HL_GEN_OF(o->cpu_node) != gen) {
		hl_owner_reopen(o, cpu_node);
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
	hl_owner_reopen(o, cpu_node);
}

static __always_inline void hl_track(__u64 obj, __s64 req_cpu)
{
	hl_track_aux(obj, req_cpu, 0);
}

#endif /* HOTLINE_HANDOFF_BPF_H */
