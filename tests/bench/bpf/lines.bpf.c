// SPDX-License-Identifier: GPL-2.0
/* Where the time of a counting program goes on a live tracepoint (bench only):
 * programs that differ by one cache line touched, all on workqueue_queue_work,
 * attached in a chosen order behind a lead program.  At the event rates of a
 * live system the lines a program touches are mostly cold; tests/bench/cold_lines
 * prices each line by the difference between neighbouring programs. */
#include "hits.bpf.h"
#include "empty.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* One 128-byte slot per CPU (no line written by two CPUs). */
struct hl_ln_slot {
	__u64 v[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct hl_ln_slot);
} ln_lines SEC(".maps");

const volatile __u32 hl_ln_step = 1;

HL_EMPTY_PROG("tp_btf/workqueue_queue_work", hl_ln_lead)

HL_EMPTY_PROG("tp_btf/workqueue_queue_work", hl_ln_empty)

/* One read-modify-write of this CPU's line. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_line)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_ln_slot *s = bpf_map_lookup_elem(&ln_lines, &cpu);

	if (s)
		s->v[0]++;
	return 0;
}

/* The same line again: warm when hl_ln_line ran just before. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_line_again)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_ln_slot *s = bpf_map_lookup_elem(&ln_lines, &cpu);

	if (s)
		s->v[1]++;
	return 0;
}

/* The line plus one .rodata value (the load stays in the JIT code). */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_rodata)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_ln_slot *s = bpf_map_lookup_elem(&ln_lines, &cpu);

	if (s)
		s->v[2] += hl_ln_step;
	return 0;
}

/* The proxies' counting body (fixed slot of a per-CPU `hits` map). */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_count)
{
	hl_count_slot(HL_SLOT_QUEUE_WORK);
	return 0;
}
