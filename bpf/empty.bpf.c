// SPDX-License-Identifier: GPL-2.0
/* Empty programs on the same attach points as hotline's: the floor that
 * `hotline cost` and the benchmarks compare hotline's programs against. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "empty.bpf.h"

char LICENSE[] SEC("license") = "GPL";

HL_EMPTY_PROG("fentry", hl_empty_fentry)

SEC("kprobe")
int BPF_KPROBE(hl_empty_kprobe)
{
	return 0;
}

HL_EMPTY_PROG("tp_btf/workqueue_queue_work", hl_empty_tp_queue_work)

HL_EMPTY_PROG("tp_btf/consume_skb", hl_empty_tp_consume_skb)

HL_EMPTY_PROG("tp_btf/kfree_skb", hl_empty_tp_kfree_skb)

/* Warm-up twins for the skb tracepoints: attached before every measured variant,
 * they take the cache miss on skb->_skb_refdst so that whichever variant runs
 * first is not charged for it. */
SEC("tp_btf/consume_skb")
int BPF_PROG(hl_touch_consume_skb, struct sk_buff *skb)
{
	volatile unsigned long v = skb->_skb_refdst;

	(void)v;
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(hl_touch_kfree_skb, struct sk_buff *skb)
{
	volatile unsigned long v = skb->_skb_refdst;

	(void)v;
	return 0;
}

HL_EMPTY_PROG("tp_btf/tcp_destroy_sock", hl_empty_tp_tcp_destroy_sock)
