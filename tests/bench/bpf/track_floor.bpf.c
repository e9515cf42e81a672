// SPDX-License-Identifier: GPL-2.0
/* The floor of handoff tracking (bench only), on workqueue_queue_work and on
 * the dst_release proxies' tracepoints: the least any tracker of the same work
 * touches, each thing in the kernel's direct map (kmalloc'd arrays of at most
 * 32 KiB: no per-CPU area, no vmalloc'd page), where a cold touch costs least
 * on hosts whose page walks are dear.  bench_overhead's queue-work and workload
 * sections run these beside hotline's tracking, so that their ratios can be
 * read against what no layout gets under. */
#include "common.bpf.h"
#include "owner_table.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* One line per CPU: the hits, the owner changes, the scratch word. */
struct hl_tf_cpu {
	__u64 hits;
	__u64 handoffs;
	__u64 scratch;
	__u64 pad[5];
};

/* Sized by user space to the possible CPUs before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_tf_cpu);
} tf_cpus SEC(".maps");

#define HL_TF_SETS 64 /* 8 KiB of sets: one kmalloc'd region */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HL_TF_SETS);
	__type(key, __u32);
	__type(value, struct hl_owner_set);
} tf_owners SEC(".maps");

HL_OWNER_TABLE_FNS(hl_tf, struct hl_owner_set)

static __always_inline struct hl_tf_cpu *hl_tf_this_cpu(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&tf_cpus, &cpu);
}

/* Counting alone: one line of this CPU's, the least a counter costs. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tf_count, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	struct hl_tf_cpu *c = hl_tf_this_cpu();

	if (c)
		c->hits++;
	return 0;
}

/* What bpftrace's scripts and hotline's tracker do per object: an owner per
 * object rewritten only when it changes, each change counted on this CPU. */
static __always_inline void hl_tf_touch(struct hl_tf_cpu *c, __u64 obj)
{
	__u32 cpu = bpf_get_smp_processor_id(), set, way;
	struct hl_owner_set *s;
	struct hl_owner *o;

	obj = hl_as_number(&c->scratch, obj);
	set = hl_addr_hash(obj, 6) & (HL_TF_SETS - 1);
	s = bpf_map_lookup_elem(&tf_owners, &set);
	if (!s)
		return;
	way = hl_tf_find(s, obj);
	if (way < HL_OWNER_WAYS && s->w[way & (HL_OWNER_WAYS - 1)].cpu_node == cpu)
		return;
	if (way >= HL_OWNER_WAYS) {
		way = hl_tf_victim(s);
		s->w[way & (HL_OWNER_WAYS - 1)].obj = obj;
	} else {
		c->handoffs++;
	}
	o = &s->w[way & (HL_OWNER_WAYS - 1)];
	o->cpu_node = cpu;
	o->stamp = (__u32)bpf_jiffies64();
}

/* Work items: every queued work counted, its item tracked. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_tf_track, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	struct hl_tf_cpu *c = hl_tf_this_cpu();

	if (c) {
		c->hits++;
		hl_tf_touch(c, (__u64)work);
	}
	return 0;
}

/* Routes, as the dst_release proxies' _track programs: a freed skb's route when
 * the skb holds a reference on it, a destroyed socket's two routes. */
static __always_inline void hl_tf_skb_freed(struct sk_buff *skb)
{
	struct hl_tf_cpu *c = hl_tf_this_cpu();
	unsigned long refdst = skb->_skb_refdst;

	if (!c)
		return;
	c->hits++;
	if (refdst && !(refdst & SKB_DST_NOREF))
		hl_tf_touch(c, refdst);
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_tf_consume_skb, struct sk_buff *skb)
{
	hl_tf_skb_freed(skb);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(hl_tf_kfree_skb, struct sk_buff *skb)
{
	hl_tf_skb_freed(skb);
	return 0;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(hl_tf_tcp_destroy_sock, struct sock *sk)
{
	struct hl_tf_cpu *c = hl_tf_this_cpu();
	__u64 rx = (__u64)sk->sk_rx_dst, out = (__u64)sk->sk_dst_cache;

	if (!c)
		return 0;
	c->hits++;
	if (rx)
		hl_tf_touch(c, rx);
	if (out)
		hl_tf_touch(c, out);
	return 0;
}
