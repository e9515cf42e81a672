// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* Structures of `hotline discover`, shared by bpf/discover.bpf.c and the agent.
 * Plain C types only: both sides compile this file unchanged. */
#ifndef HOTLINE_DISCOVER_ABI_H
#define HOTLINE_DISCOVER_ABI_H

#include "hotline/model/abi.h"

#ifdef __cplusplus
typedef std::uint16_t hl_u16;
#else
typedef unsigned short hl_u16;
#endif

/* Attach points one discover object holds: each has one program per object
 * argument index below HL_DISC_ARGS, for a tp_btf tracepoint and for fentry.
 * A power of two: a slot read back from the owner table is masked with it. */
#define HL_DISC_SLOTS 64
#define HL_DISC_ARGS 4

/* One way of discover's owner table: an object of one type, as the owner table
 * of the targets (hl_owner), plus its type and the slot that touched it last,
 * so that a handoff names the attach points on both sides. */
struct hl_disc_owner {
	hl_u64 obj;        /* object address, 0: empty way (never shown to users) */
	hl_u32 handoffs;   /* cross-CPU handoffs, same node or not */
	hl_u32 cross_node; /* of which across nodes */
	hl_u32 cpu_node;   /* last toucher: HL_CPU_NODE(cpu, node) */
	hl_u32 stamp;      /* jiffies (low 32 bits) of the last owner change */
	hl_u16 type;       /* the type's index in the session (hl_disc_type) */
	hl_u16 slot;       /* the attach point that touched it last */
	hl_u32 pad;
};

struct hl_disc_set {
	struct hl_disc_owner w[HL_OWNER_WAYS];
};

/* Per-CPU counters of one attach point (value of `disc_counts`, key: slot):
 * two cache lines. */
struct hl_disc_counts {
	hl_u64 touches;     /* pointers seen of tracked objects (after sampling) */
	hl_u64 same_cpu;    /* previous toucher was this CPU */
	hl_u64 cross_cpu;   /* another CPU of the same node */
	hl_u64 cross_node;  /* a CPU of another node */
	hl_u64 new_objects; /* first touch seen (inserted into the owner table) */
	hl_u64 evicted;     /* live objects pushed out by this CPU's inserts */
	hl_u64 scratch;     /* BPF side only: turns a typed pointer into a plain number */
	hl_u64 pad;
	hl_u64 from_node[HL_MAX_NODES]; /* handoffs arriving on this CPU, by the previous toucher's node */
};

#ifdef __cplusplus
static_assert(sizeof(struct hl_disc_owner) == 32, "hl_disc_owner layout");
static_assert(sizeof(struct hl_disc_set) == 32 * HL_OWNER_WAYS, "hl_disc_set layout");
static_assert(sizeof(struct hl_disc_counts) == 8 * (8 + HL_MAX_NODES), "hl_disc_counts layout");
#else
_Static_assert(sizeof(struct hl_disc_owner) == 32, "hl_disc_owner layout");
_Static_assert(sizeof(struct hl_disc_set) == 32 * HL_OWNER_WAYS, "hl_disc_set layout");
_Static_assert(sizeof(struct hl_disc_counts) == 8 * (8 + HL_MAX_NODES), "hl_disc_counts layout");
#endif

#endif /* HOTLINE_DISCOVER_ABI_H */
