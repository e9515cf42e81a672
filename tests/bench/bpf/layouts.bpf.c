// SPDX-License-Identifier: GPL-2.0
/* Counter layouts on a live skb tracepoint (bench only): the dst_release proxy's
 * counting body on the session's per-CPU map, and the alternatives one could
 * pick instead, each attached behind a lead on tp_btf/consume_skb.
 * tests/bench/counter_layouts prices them against the empty program. */
#include "hits.bpf.h"
#include "empty.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* One 128-byte slot per CPU: no line written by two CPUs, no per-CPU map. */
struct hl_lay_slot {
	__u64 v[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct hl_lay_slot);
} lay_cpus SEC(".maps");

/* The same by CPU in global data (16 words per CPU): its address is a
 * constant, no lookup at all. */
__u64 hl_lay_global_slots[512 * 16];

/* The proxy's test for a refcounted dst. */
static __always_inline __u64 hl_lay_refcounted(struct sk_buff *skb)
{
	return hl_dst_refcounted(skb->_skb_refdst);
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_lay_lead, struct sk_buff *skb)
{
	volatile unsigned long v = skb->_skb_refdst;

	(void)v;
	return 0;
}

HL_EMPTY_PROG("tp_btf/consume_skb", hl_lay_empty)

/* The test alone, its result left on the stack: what any counter adds before memory. */
SEC("tp_btf/consume_skb")
int BPF_PROG(hl_lay_insns, struct sk_buff *skb)
{
	volatile __u64 out = hl_lay_refcounted(skb) + bpf_get_smp_processor_id();

	(void)out;
	return 0;
}

/* The proxy's body on a fixed slot of a per-CPU array (this object's own `hits`). */
static __always_inline void hl_lay_count_percpu(struct sk_buff *skb, __u32 slot)
{
	struct hl_hits *h = hl_hits_get();

	if (h) {
		h->t[slot].events++;
		h->t[slot].calls += hl_lay_refcounted(skb);
	}
}

/* What ships. */
SEC("tp_btf/consume_skb")
int BPF_PROG(hl_lay_percpu, struct sk_buff *skb)
{
	hl_lay_count_percpu(skb, HL_SLOT_SKB_FREE);
	return 0;
}

/* The same line once more (the next slot), right after: the price when it is warm. */
SEC("tp_btf/consume_skb")
int BPF_PROG(hl_lay_percpu_again, struct sk_buff *skb)
{
	hl_lay_count_percpu(skb, HL_SLOT_QUEUE_WORK);
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_lay_cpu_array, struct sk_buff *skb)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_lay_slot *s = bpf_map_lookup_elem(&lay_cpus, &cpu);

	if (s) {
		s->v[0]++;
		s->v[1] += hl_lay_refcounted(skb);
	}
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hl_lay_global, struct sk_buff *skb)
{
	__u64 *s = &hl_lay_global_slots[(bpf_get_smp_processor_id() & 511) * 16];

	s[0]++;
	s[1] += hl_lay_refcounted(skb);
	return 0;
}
