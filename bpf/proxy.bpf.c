// SPDX-License-Identifier: GPL-2.0
/* Tracepoint proxies for targets that cannot be probed directly.
 * queue_work_on: workqueue_queue_work fires once per queued work (exact).
 * dst_release: skb free tracepoints, counting skbs that hold a refcounted dst;
 * each such free drops one dst reference, but dst_release has other callers,
 * so this proxy is partial. */
#include "common.bpf.h"

#define SKB_DST_NOREF 1UL

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tp_queue_work, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	hl_count_hit();
	if (hl_obj_mode != HL_OBJ_NONE)
		hl_track((__u64)work, req_cpu);
	return 0;
}

static __always_inline void hl_skb_freed(struct sk_buff *skb)
{
	struct hl_counts *c = hl_counts_get();
	unsigned long refdst;

	if (!c)
		return;
	c->events++;
	/* tp_btf arguments are trusted BTF pointers: a direct (CO-RE relocated)
	 * load, no probe-read helper call on this hot path. */
	refdst = skb->_skb_refdst;
	if (refdst && !(refdst & SKB_DST_NOREF)) {
		c->calls++;
		if (hl_obj_mode != HL_OBJ_NONE)
			hl_track(refdst, -1);
	}
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_tp_consume_skb, struct sk_buff *skb)
{
	hl_skb_freed(skb);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(hl_tp_kfree_skb, struct sk_buff *skb)
{
	hl_skb_freed(skb);
	return 0;
}
