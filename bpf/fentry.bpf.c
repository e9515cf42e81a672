// SPDX-License-Identifier: GPL-2.0
/* fentry/fexit on one kernel function; the agent sets the attach target before
 * load, so one body serves every target (exact counts, latency from fexit). */
#include "latency.bpf.h"
#include "handoff.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline void hl_fentry_track(__u64 obj, __s64 req_cpu)
{
	if (hl_obj_mode == HL_OBJ_SKB_DST)
		obj = obj ? hl_skb_dst(obj) : 0;
	hl_track(obj, req_cpu);
}

/* Counting (and latency) only. */
SEC("fentry")
int BPF_PROG(hl_fentry)
{
	hl_count_hit();
	hl_lat_enter();
	return 0;
}

/* One program per object argument, each reading its argument at a constant
 * offset: no bpf_get_func_arg (5.17+) needed, so 5.10 loads these too.  The
 * agent loads the one matching the target's object argument. */
#define HL_FENTRY_ARG(K)                                                          \
	SEC("fentry")                                                             \
	int BPF_PROG(hl_fentry_a##K)                                              \
	{                                                                         \
		hl_count_hit();                                                   \
		hl_lat_enter();                                                   \
		hl_fentry_track(ctx[K], -1);                                      \
		return 0;                                                         \
	}

HL_FENTRY_ARG(0)
HL_FENTRY_ARG(1)
HL_FENTRY_ARG(2)
HL_FENTRY_ARG(3)
HL_FENTRY_ARG(4)

/* queue_work_on(int cpu, struct workqueue_struct *wq, struct work_struct *work):
 * the work item is the object and argument 0 the requested CPU.  A separate
 * program because older verifiers refuse integer casts of a pointer argument
 * even on a branch that is never taken. */
SEC("fentry")
int BPF_PROG(hl_fentry_a2_cpu0)
{
	hl_count_hit();
	hl_lat_enter();
	hl_fentry_track(ctx[2], (__s32)ctx[0]);
	return 0;
}

SEC("fexit")
int BPF_PROG(hl_fexit)
{
	hl_lat_exit();
	return 0;
}
