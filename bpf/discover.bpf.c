// SPDX-License-Identifier: GPL-2.0
/* `hotline discover`: which kernel objects, of any type, move between CPUs.
 * One template, many attach points: the agent points slot S's program for
 * argument A at a tp_btf tracepoint or a function (fentry) whose argument A is
 * a pointer to a struct, and gives the slot's type in .rodata.  A touch is an
 * attach point seeing the pointer, not a memory access.  The owner table is the
 * targets' design (handoff.bpf.h): set-associative, written only when an
 * object's owner changes, with the object's type in its key. */
#include "common.bpf.h"
#include "owner_table.bpf.h"
#include "hotline/model/discover_abi.h"

char LICENSE[] SEC("license") = "GPL";

/* Set before load. */
const volatile __u32 hl_disc_sample = 1; /* track objects whose hash % N == 0 */
const volatile __u32 hl_disc_sets = 1;   /* sets in the owner table (power of two) */
const volatile __u16 hl_disc_type[HL_DISC_SLOTS] = {};

/* Mmapable and sized by the agent before load, as `owners` in handoff.bpf.h. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hl_disc_set);
} disc_owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HL_DISC_SLOTS);
	__type(key, __u32);
	__type(value, struct hl_disc_counts);
} disc_counts SEC(".maps");

/* Cross-CPU handoffs by (slot that touched the object last, slot touching it
 * now): key from * HL_DISC_SLOTS + to. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HL_DISC_SLOTS * HL_DISC_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} disc_pairs SEC(".maps");

/* The object's key: its address with its type's index in bits 48-53, which
 * are all ones in every kernel address, so one address under two types is two
 * objects. */
static __always_inline __u64 hl_disc_key(__u64 obj, __u16 type)
{
	return obj ^ ((__u64)type << 48);
}

HL_OWNER_TABLE_FNS(hl_disc, struct hl_disc_set)

static __always_inline void hl_disc_insert(struct hl_disc_set *s, __u64 obj, __u16 type, __u32 slot,
					   __u32 cpu_node, struct hl_disc_counts *c)
{
	struct hl_disc_owner *o = &s->w[hl_disc_victim(s) & (HL_OWNER_WAYS - 1)];

	if (o->obj)
		c->evicted++;
	o->handoffs = 0;
	o->cross_node = 0;
	o->cpu_node = cpu_node;
	o->stamp = (__u32)bpf_jiffies64();
	o->type = type;
	o->slot = slot;
	o->obj = obj;
	c->new_objects++;
}

static __always_inline void hl_disc_handoff(struct hl_disc_owner *o, __u32 slot, __u32 cpu, __u32 node,
					    struct hl_disc_counts *c)
{
	__u32 key = (o->slot & (HL_DISC_SLOTS - 1)) * HL_DISC_SLOTS + slot;
	__u64 *pair;

	if (HL_NODE_OF(o->cpu_node) == node) {
		c->cross_cpu++;
	} else {
		c->cross_node++;
		o->cross_node++;
	}
	hl_inc_clamped(c->from_node, HL_NODE_OF(o->cpu_node));
	pair = bpf_map_lookup_elem(&disc_pairs, &key);
	if (pair)
		(*pair)++;
	o->handoffs++;
	o->cpu_node = HL_CPU_NODE(cpu, node);
	o->slot = slot;
	o->stamp = (__u32)bpf_jiffies64();
}

/* Not inlined: 512 programs share one copy in the object (libbpf appends it to
 * each program it loads). */
static __noinline void hl_disc_touch(__u64 ptr, __u32 slot)
{
	struct hl_disc_counts *c;
	struct hl_disc_set *s;
	struct hl_disc_owner *o;
	__u32 key = slot, set, cpu, way;
	__u16 type;
	__u64 obj, h;

	if (!ptr)
		return;
	slot &= HL_DISC_SLOTS - 1;
	type = hl_disc_type[slot];
	c = bpf_map_lookup_elem(&disc_counts, &key);
	if (!c)
		return;
	obj = hl_as_number(&c->scratch, ptr);
	h = hl_addr_hash(obj, 6);
	obj = hl_disc_key(obj, type);
	/* Whole objects are sampled, so every touch of a tracked object counts. */
	if (hl_disc_sample > 1 && (h >> 16) % hl_disc_sample)
		return;
	c->touches++;
	set = h & (hl_disc_sets - 1);
	s = bpf_map_lookup_elem(&disc_owners, &set);
	if (!s)
		return;
	cpu = bpf_get_smp_processor_id();
	way = hl_disc_find(s, obj);
	if (way < HL_OWNER_WAYS) {
		o = &s->w[way & (HL_OWNER_WAYS - 1)];
		if (HL_CPU_OF(o->cpu_node) == HL_CPU_OF(cpu)) {
			c->same_cpu++;
			/* The owner's own line, written only when another attach point takes over. */
			if (o->slot != slot)
				o->slot = slot;
			return;
		}
		hl_disc_handoff(o, slot, cpu, bpf_get_numa_node_id(), c);
		return;
	}
	hl_disc_insert(s, obj, type, slot, HL_CPU_NODE(cpu, bpf_get_numa_node_id()), c);
}

/* The slot and the argument are constants of each program: a tracing
 * program's context is read at a constant offset only. */
#define HL_DISC_PROG(S, A)                                                       \
	SEC("tp_btf")                                                            \
	int BPF_PROG(hl_dtp_s##S##_a##A)                                     \
	{                                                                        \
		hl_disc_touch(ctx[A], S);                                        \
		return 0;                                                        \
	}                                                                        \
	SEC("fentry")                                                            \
	int BPF_PROG(hl_dfn_s##S##_a##A)                                     \
	{                                                                        \
		hl_disc_touch(ctx[A], S);                                        \
		return 0;                                                        \
	}

#define HL_DISC_SLOT(S) HL_DISC_PROG(S, 0) HL_DISC_PROG(S, 1) HL_DISC_PROG(S, 2) HL_DISC_PROG(S, 3)

HL_DISC_SLOT(0) HL_DISC_SLOT(1) HL_DISC_SLOT(2) HL_DISC_SLOT(3) HL_DISC_SLOT(4) HL_DISC_SLOT(5) HL_DISC_SLOT(6) HL_DISC_SLOT(7)
HL_DISC_SLOT(8) HL_DISC_SLOT(9) HL_DISC_SLOT(10) HL_DISC_SLOT(11) HL_DISC_SLOT(12) HL_DISC_SLOT(13) HL_DISC_SLOT(14) HL_DISC_SLOT(15)
HL_DISC_SLOT(16) HL_DISC_SLOT(17) HL_DISC_SLOT(18) HL_DISC_SLOT(19) HL_DISC_SLOT(20) HL_DISC_SLOT(21) HL_DISC_SLOT(22) HL_DISC_SLOT(23)
HL_DISC_SLOT(24) HL_DISC_SLOT(25) HL_DISC_SLOT(26) HL_DISC_SLOT(27) HL_DISC_SLOT(28) HL_DISC_SLOT(29) HL_DISC_SLOT(30) HL_DISC_SLOT(31)
HL_DISC_SLOT(32) HL_DISC_SLOT(33) HL_DISC_SLOT(34) HL_DISC_SLOT(35) HL_DISC_SLOT(36) HL_DISC_SLOT(37) HL_DISC_SLOT(38) HL_DISC_SLOT(39)
HL_DISC_SLOT(40) HL_DISC_SLOT(41) HL_DISC_SLOT(42) HL_DISC_SLOT(43) HL_DISC_SLOT(44) HL_DISC_SLOT(45) HL_DISC_SLOT(46) HL_DISC_SLOT(47)
HL_DISC_SLOT(48) HL_DISC_SLOT(49) HL_DISC_SLOT(50) HL_DISC_SLOT(51) HL_DISC_SLOT(52) HL_DISC_SLOT(53) HL_DISC_SLOT(54) HL_DISC_SLOT(55)
HL_DISC_SLOT(56) HL_DISC_SLOT(57) HL_DISC_SLOT(58) HL_DISC_SLOT(59) HL_DISC_SLOT(60) HL_DISC_SLOT(61) HL_DISC_SLOT(62) HL_DISC_SLOT(63)
