// SPDX-License-Identifier: GPL-2.0
/* fentry/fexit on one kernel function; the agent sets the attach target before
 * load, so one body serves every target (exact counts, latency from fexit). */
#include "common.bpf.h"

static __always_inline void hl_fentry_track(void *ctx)
{
	__u64 obj = 0, req = 0;
	__s64 req_cpu = -1;

	if (hl_obj_mode == HL_OBJ_NONE)
		return;
	if (bpf_get_func_arg(ctx, hl_obj_arg, &obj))
		return;
	if (hl_obj_mode == HL_OBJ_SKB_DST)
		obj = obj ? hl_skb_dst(obj) : 0;
	if (hl_remote_arg != 0xff && !bpf_get_func_arg(ctx, hl_remote_arg, &req))
		req_cpu = (__s32)req;
	hl_track(obj, req_cpu);
}

SEC("fentry")
int BPF_PROG(hl_fentry)
{
	hl_count_hit();
	hl_lat_enter();
	hl_fentry_track(ctx);
	return 0;
}

SEC("fexit")
int BPF_PROG(hl_fexit)
{
	hl_lat_exit();
	return 0;
}
