// SPDX-License-Identifier: GPL-2.0
/* cpu-clock sampling: attributes each sample whose kernel IP falls inside a
 * watched function's text range (from kallsyms) to that function, like perf top.
 *
 * UAPI headers, not vmlinux.h: the perf_event context (bpf_user_pt_regs_t) has a
 * fixed user-visible layout, so the object carries no CO-RE relocation and libbpf
 * loads it without parsing the kernel's BTF.  This object loads after the kallsyms
 * table arrives (its ranges are read-only data), on the agent's start-up path. */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hotline/model/abi.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct hl_range hl_ranges[HL_MAX_SAMPLE_TARGETS] = {};
const volatile __u32 hl_nranges = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_sample_counts);
} samples SEC(".maps");

SEC("perf_event")
int hl_sample(struct bpf_perf_event_data *ctx)
{
	struct hl_sample_counts *s;
	__u32 zero = 0;
	__u64 ip;

	s = bpf_map_lookup_elem(&samples, &zero);
	if (!s)
		return 0;
	s->samples++;
	ip = PT_REGS_IP(&ctx->regs);
	/* x86-64 kernel text lives in the upper half of the address space. */
	if (!(ip >> 63))
		return 0;
	s->kernel_samples++;
	for (__u32 i = 0; i < HL_MAX_SAMPLE_TARGETS; i++) {
		if (i >= hl_nranges)
			break;
		if (ip >= hl_ranges[i].start && ip < hl_ranges[i].end) {
			s->hits[i]++;
			break;
		}
	}
	return 0;
}
