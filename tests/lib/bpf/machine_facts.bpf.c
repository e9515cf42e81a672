// SPDX-License-Identifier: GPL-2.0
/* Empty programs whose load and attach tell the host tests what this kernel
 * admits (tests/lib/machine_facts.cpp): fentry, fexit and a kprobe, each on
 * dst_release, a function every kernel hotline supports has.  The names do not
 * start with hl_, so counts of hotline's programs never include them. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("fentry/dst_release")
int BPF_PROG(facts_fentry)
{
	return 0;
}

SEC("fexit/dst_release")
int BPF_PROG(facts_fexit)
{
	return 0;
}

SEC("kprobe/dst_release")
int BPF_KPROBE(facts_kprobe)
{
	return 0;
}
