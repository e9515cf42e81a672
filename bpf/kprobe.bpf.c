// SPDX-License-Identifier: GPL-2.0
/* kprobe/kretprobe on one kernel function, attached by name at run time:
 * the fallback when fentry cannot load (no BTF trampolines, lockdown). */
#include "latency.bpf.h"
#include "handoff.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Probe reads, not direct ctx loads: clang folds a switch of register loads into
 * one load at a computed offset, which the verifier refuses on a ctx pointer. */
static __always_inline __u64 hl_kprobe_arg(struct pt_regs *ctx, __u32 n)
{
	switch (n) {
	case 0: return PT_REGS_PARM1_CORE(ctx);
	case 1: return PT_REGS_PARM2_CORE(ctx);
	case 2: return PT_REGS_PARM3_CORE(ctx);
	case 3: return PT_REGS_PARM4_CORE(ctx);
	case 4: return PT_REGS_PARM5_CORE(ctx);
	default: return 0;
	}
}

SEC("kprobe")
int BPF_KPROBE(hl_kprobe)
{
	hl_count_hit();
	hl_lat_enter();
	if (hl_obj_mode != HL_OBJ_NONE) {
		__u64 obj = hl_kprobe_arg(ctx, hl_obj_arg);
		__s64 req_cpu = -1;

		if (hl_obj_mode == HL_OBJ_SKB_DST)
			obj = obj ? hl_skb_dst(obj) : 0;
		if (hl_remote_arg != HL_ARG_NONE)
			req_cpu = (__s32)hl_kprobe_arg(ctx, hl_remote_arg);
		hl_track(obj, req_cpu);
	}
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(hl_kretprobe)
{
	hl_lat_exit();
	return 0;
}
