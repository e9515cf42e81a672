// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* Structures shared by the BPF programs and the C++ agent.
 * Plain C types only, no includes: both sides compile this file unchanged. */
#ifndef HOTLINE_ABI_H
#define HOTLINE_ABI_H

#ifdef __cplusplus
#include <cstdint>
typedef std::uint32_t hl_u32;
typedef std::uint64_t hl_u64;
#else
typedef unsigned int hl_u32;
typedef unsigned long long hl_u64;
#endif

/* log2(ns) latency buckets: slot i counts latencies in [2^i, 2^(i+1)) ns;
 * slot 0 also holds 0 ns.  2^39 ns is ~9 minutes, the last slot is open-ended. */
#define HL_HIST_SLOTS 40
/* Nesting depth of one function on one CPU that the latency stack keeps. */
#define HL_LAT_DEPTH 4
/* Functions one sampling program attributes IPs to. */
#define HL_MAX_SAMPLE_TARGETS 16

/* NUMA nodes the handoff matrix distinguishes; higher node ids fold into the last. */
#define HL_MAX_NODES 8

/* How a program finds the kernel object of a hit (rodata hl_obj_mode). */
#define HL_OBJ_NONE 0
#define HL_OBJ_ARG 1     /* pointer argument hl_obj_arg */
#define HL_OBJ_SKB_DST 2 /* dst held by the sk_buff in argument hl_obj_arg */

/* Argument index meaning "no such argument" (rodata hl_remote_arg: the target
 * has no requested-CPU argument). */
#define HL_ARG_NONE 0xffu

/* A CPU and its NUMA node packed in 32 bits (hl_owner.cpu_node): the CPU in the
 * low 16 bits, the node above.  HL_CPU_OF also truncates a plain CPU id to its
 * field, so that a packed and a plain CPU compare. */
#define HL_CPU_BITS 16
#define HL_CPU_MASK 0xffffu
#define HL_CPU_NODE(cpu, node) (((cpu) & HL_CPU_MASK) | ((node) << HL_CPU_BITS))
#define HL_CPU_OF(cpu_node) ((cpu_node) & HL_CPU_MASK)
#define HL_NODE_OF(cpu_node) (((cpu_node) >> HL_CPU_BITS) & HL_NODE_MASK)
#define HL_NODE_MASK 0xffu

/* The targets' owner table (hl_owner.cpu_node) also keeps, in the top 8 bits,
 * the tracking window in which the owner was recorded: the low bits of the
 * `track_gate` map's value, whose HL_TRACK_OFF bit stops tracking between
 * windows.  Nodes above 255 are recorded as 255 (the handoff matrix folds them
 * into its last row anyway). */
#define HL_GEN_SHIFT 24
#define HL_GEN_MASK 0xffu
#define HL_TRACK_OFF 0x80000000u
#define HL_CPU_NODE_GEN(cpu, node, gen) \
	(HL_CPU_NODE(cpu, (node) > HL_NODE_MASK ? HL_NODE_MASK : (node)) | (((gen) & HL_GEN_MASK) << HL_GEN_SHIFT))
#define HL_GEN_OF(cpu_node) ((cpu_node) >> HL_GEN_SHIFT)
/* The owner and its window, without the node: equal means "this CPU, this window". */
#define HL_OWNER_KEY(cpu_node) ((cpu_node) & (HL_CPU_MASK | (HL_GEN_MASK << HL_GEN_SHIFT)))

/* Per-CPU handoff counters of one target: each tracked hit compares this CPU with
 * the object's previous toucher. */
struct hl_handoff_counts {
	hl_u64 tracked;     /* hits that went through tracking (after --handoff-sample) */
	hl_u64 same_cpu;    /* previous toucher was this CPU */
	hl_u64 cross_cpu;   /* another CPU of the same node */
	hl_u64 cross_node;  /* a CPU of another node */
	hl_u64 new_objects; /* first touch seen (inserted into the owner map) */
	hl_u64 remote;      /* queue_work_on: requested CPU is another CPU */
	hl_u64 evicted;     /* live objects pushed out of the owner table by this CPU's inserts */
	hl_u64 scratch;     /* BPF side only: turns a typed pointer into a plain number */
	hl_u64 windowed;    /* hits while tracking was on, before the object test: the calls of the tracking windows */
	hl_u64 from_node[HL_MAX_NODES]; /* handoffs arriving here, by the previous node */
};

/* One way of the bounded owner table (a 4-way set-associative array): one live
 * object, written only when its owner changes or it is replaced.  32 bytes; a
 * work item's function lives in the parallel `owner_aux` array. */
struct hl_owner {
	hl_u64 obj;        /* object address, 0: empty slot (never shown to users) */
	hl_u64 handoffs;   /* cross-CPU handoffs of this object, same node or not */
	hl_u64 cross_node; /* of which across nodes */
	hl_u32 cpu_node;   /* last toucher: HL_CPU_NODE(cpu, node) */
	hl_u32 stamp;      /* jiffies (low 32 bits) of the last owner change: the oldest way is replaced */
};

/* One set of the owner table, one value of the `owners` map: 128 bytes, two
 * cache lines of one page (the table is page-aligned).  Four ways, so that a
 * small table, whose few pages stay recently touched, still rarely evicts a
 * live object (docs/overhead.md, "pages, not lines"). */
#define HL_OWNER_WAYS 4
struct hl_owner_set {
	struct hl_owner w[HL_OWNER_WAYS];
};

/* Targets one session counts; the calls and events of all of them on one CPU
 * share that CPU's first cache lines of the session's `hits` map. */
#define HL_MAX_TARGETS 32
/* Fixed slots of the tracepoint proxies (no .rodata read on their hot path);
 * directly probed targets get the slots from HL_FIRST_SLOT on. */
#define HL_SLOT_SKB_FREE 0
#define HL_SLOT_QUEUE_WORK 1
#define HL_FIRST_SLOT 2

/* Per-CPU hit counters of every target of a session (value of the `hits`
 * per-CPU array, key 0, one map shared by all of the session's programs): a
 * busy target keeps the line warm for the others, so counting a rare event
 * does not take a cache miss of its own. */
struct hl_hits {
	struct {
		hl_u64 calls;  /* hits counted for the target (for a proxy: matching events) */
		hl_u64 events; /* times the program ran (for a proxy: all events seen) */
	} t[HL_MAX_TARGETS];
};

/* Per-CPU counters of the queue_work_on attribution programs. */
struct hl_workq_counts {
	hl_u64 irqs;         /* irq_handler_entry on this CPU */
	hl_u64 queued;       /* workqueue_queue_work on this CPU */
	hl_u64 remote;       /* of which for another CPU */
	hl_u64 executed;     /* workqueue_execute_start on this CPU */
	hl_u64 scratch;      /* BPF side only, next to the hot counters: a typed pointer as a plain number */
	hl_u64 lat_count;    /* queue -> execute latencies recorded */
	hl_u64 lat_sum_ns;
	hl_u64 lat_lost;     /* execute without a recorded queue (map full, attached mid-flight) */
	hl_u64 hist[HL_HIST_SLOTS];
};

/* Per-CPU counts of queued work by work function (value of the `work_funcs`
 * per-CPU array, key 0): a set-associative table, a function's set picked by a
 * hash of its address, 4 ways of 16 bytes so that a set spans one or two cache
 * lines (per-CPU values are 8-byte aligned).  Only the owning CPU writes it, so
 * no lock: a queue touches one set, where a hash map took a bucket, an element
 * and its per-CPU value, each a cold line at workqueue rates. */
#define HL_WORK_FUNC_WAYS 4
#define HL_WORK_FUNC_SETS 256 /* power of two */
struct hl_work_func {
	hl_u64 func;   /* work function address, 0: free way */
	hl_u64 queued;
};
struct hl_work_funcs {
	struct hl_work_func e[HL_WORK_FUNC_SETS * HL_WORK_FUNC_WAYS];
	hl_u64 other; /* queued work of functions whose set was full */
};

/* Per-CPU latency counters of one watched target (value of the `counts` per-CPU
 * array, key 0); its calls are counted in the session's `hits` map. */
struct hl_counts {
	hl_u64 lat_count;    /* latencies recorded */
	hl_u64 lat_sum_ns;
	hl_u64 lat_lost;     /* exits without a matching entry (stack overflow, migration) */
	hl_u64 hist[HL_HIST_SLOTS];
};

/* Per-CPU latency stack: entry pushes, exit pops.  Only the owning CPU writes it. */
struct hl_lat_stack {
	hl_u32 depth;
	hl_u32 pad;
	hl_u64 ts[HL_LAT_DEPTH];
	hl_u64 tid[HL_LAT_DEPTH];
};

/* Kernel text range [start, end) of one sampled function. */
struct hl_range {
	hl_u64 start;
	hl_u64 end;
};

/* Per-CPU counters of the sampling program (key 0 of its per-CPU array). */
struct hl_sample_counts {
	hl_u64 samples;        /* every sample taken on this CPU */
	hl_u64 kernel_samples; /* samples whose IP was in the kernel */
	hl_u64 hits[HL_MAX_SAMPLE_TARGETS];
};

#ifdef __cplusplus
static_assert(sizeof(struct hl_handoff_counts) == 8 * (9 + HL_MAX_NODES), "hl_handoff_counts layout");
static_assert(sizeof(struct hl_owner) == 32, "hl_owner layout");
static_assert(sizeof(struct hl_owner_set) == 32 * HL_OWNER_WAYS, "hl_owner_set layout");
static_assert(sizeof(struct hl_workq_counts) == 8 * (8 + HL_HIST_SLOTS), "hl_workq_counts layout");
static_assert(sizeof(struct hl_work_funcs) == 16 * HL_WORK_FUNC_SETS * HL_WORK_FUNC_WAYS + 8, "hl_work_funcs layout");
static_assert(sizeof(struct hl_counts) == 8 * (3 + HL_HIST_SLOTS), "hl_counts layout");
static_assert(sizeof(struct hl_hits) == 16 * HL_MAX_TARGETS, "hl_hits layout");
static_assert(sizeof(struct hl_lat_stack) == 8 + 16 * HL_LAT_DEPTH, "hl_lat_stack layout");
static_assert(sizeof(struct hl_range) == 16, "hl_range layout");
static_assert(sizeof(struct hl_sample_counts) == 8 * (2 + HL_MAX_SAMPLE_TARGETS), "hl_sample_counts layout");
#else
_Static_assert(sizeof(struct hl_handoff_counts) == 8 * (9 + HL_MAX_NODES), "hl_handoff_counts layout");
_Static_assert(sizeof(struct hl_owner) == 32, "hl_owner layout");
_Static_assert(sizeof(struct hl_owner_set) == 32 * HL_OWNER_WAYS, "hl_owner_set layout");
_Static_assert(sizeof(struct hl_workq_counts) == 8 * (8 + HL_HIST_SLOTS), "hl_workq_counts layout");
_Static_assert(sizeof(struct hl_work_funcs) == 16 * HL_WORK_FUNC_SETS * HL_WORK_FUNC_WAYS + 8, "hl_work_funcs layout");
_Static_assert(sizeof(struct hl_counts) == 8 * (3 + HL_HIST_SLOTS), "hl_counts layout");
_Static_assert(sizeof(struct hl_hits) == 16 * HL_MAX_TARGETS, "hl_hits layout");
_Static_assert(sizeof(struct hl_lat_stack) == 8 + 16 * HL_LAT_DEPTH, "hl_lat_stack layout");
_Static_assert(sizeof(struct hl_range) == 16, "hl_range layout");
_Static_assert(sizeof(struct hl_sample_counts) == 8 * (2 + HL_MAX_SAMPLE_TARGETS), "hl_sample_counts layout");
#endif

#endif /* HOTLINE_ABI_H */
