// SPDX-License-Identifier: GPL-2.0
/* Tracepoint proxies for targets that cannot be probed directly.
 * queue_work_on: workqueue_queue_work fires once per queued work (exact).
 * dst_release: skb free tracepoints, counting skbs that hold a refcounted dst;
 * each such free drops one dst reference, but dst_release has other callers,
 * so this proxy is partial.  tcp_destroy_sock adds the references a TCP socket
 * held on its routes (sk_rx_dst, the input route every connection to one local
 * address shares, and sk_dst_cache): inet_sock_destruct drops them just after,
 * usually on the same CPU, and this is where connection churn moves a route
 * between CPUs on kernels whose data packets carry noref dsts.
 *
 * Each comes as a counting-only program and a _track program (counting plus
 * handoff tracking); the agent loads one of the two.  queue_work_on's come with
 * the workqueue attribution's queue side too (_wq), for sessions that attribute
 * work.  The counting programs
 * read no .rodata and use fixed slots of the shared `hits` map, as at the
 * event rates of a live system every cache line a program touches is usually
 * cold (docs/overhead.md, "Where the time goes"). */
#include "hits.bpf.h"
#include "handoff.bpf.h"
#include "workq.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* attribute: also the workqueue attribution's queue side (workq.bpf.h), in the
 * session's workqueue object's maps, so that hl_wq_queue need not run too. */
static __always_inline void hl_queue_work(int req_cpu, struct work_struct *work, bool track, bool attribute)
{
	/* The work item was just written by the caller: a direct load of its
	 * function is a cache hit, where a probe read inside the tracker is not. */
	__u64 func = (__u64)work->func;

	hl_count_slot(HL_SLOT_QUEUE_WORK);
	if (track)
		hl_track_aux((__u64)work, req_cpu, func);
	if (attribute)
		hl_wq_queued(work, func, hl_other_cpu(req_cpu, bpf_get_smp_processor_id()));
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tp_queue_work, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	hl_queue_work(req_cpu, work, false, false);
	return 0;
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tp_queue_work_track, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	hl_queue_work(req_cpu, work, true, false);
	return 0;
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tp_queue_work_wq, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	hl_queue_work(req_cpu, work, false, true);
	return 0;
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tp_queue_work_track_wq, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	hl_queue_work(req_cpu, work, true, true);
	return 0;
}

static __always_inline void hl_skb_freed(struct sk_buff *skb, bool track)
{
	struct hl_hits *h = hl_hits_get();
	unsigned long refdst;

	if (!h)
		return;
	h->t[HL_SLOT_SKB_FREE].events++;
	/* tp_btf arguments are trusted BTF pointers: a direct (CO-RE relocated)
	 * load, no probe-read helper call on this hot path. */
	refdst = skb->_skb_refdst;
	if (!track) {
		h->t[HL_SLOT_SKB_FREE].calls += hl_dst_refcounted(refdst);
		return;
	}
	/* The same test as hl_dst_refcounted, as a condition: its branch-free
	 * form would add instructions here. */
	if (refdst && !(refdst & SKB_DST_NOREF)) {
		h->t[HL_SLOT_SKB_FREE].calls++;
		hl_track(refdst, -1);
	}
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_tp_consume_skb, struct sk_buff *skb)
{
	hl_skb_freed(skb, false);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(hl_tp_kfree_skb, struct sk_buff *skb)
{
	hl_skb_freed(skb, false);
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_tp_consume_skb_track, struct sk_buff *skb)
{
	hl_skb_freed(skb, true);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(hl_tp_kfree_skb_track, struct sk_buff *skb)
{
	hl_skb_freed(skb, true);
	return 0;
}

/* The socket's routes, each one reference dropped when the socket goes: a
 * direct load (tp_btf's socket is a trusted BTF pointer). */
static __always_inline void hl_sock_destroyed(struct sock *sk, bool track)
{
	struct hl_hits *h = hl_hits_get();
	__u64 rx, out;

	if (!h)
		return;
	h->t[HL_SLOT_SKB_FREE].events++;
	rx = (__u64)sk->sk_rx_dst;
	out = (__u64)sk->sk_dst_cache;
	h->t[HL_SLOT_SKB_FREE].calls += (rx != 0) + (out != 0);
	if (!track)
		return;
	/* Once per route counted in `calls` (the tracker's windowed count). */
	if (rx)
		hl_track(rx, -1);
	if (out)
		hl_track(out, -1);
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(hl_tp_tcp_destroy_sock, struct sock *sk)
{
	hl_sock_destroyed(sk, false);
	return 0;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(hl_tp_tcp_destroy_sock_track, struct sock *sk)
{
	hl_sock_destroyed(sk, true);
	return 0;
}
