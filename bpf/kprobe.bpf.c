// SPDX-License-Identifier: GPL-2.0
/* kprobe/kretprobe on one kernel function, attached by name at run time:
 * the fallback when fentry cannot load (no BTF trampolines, lockdown). */
#include "common.bpf.h"

SEC("kprobe")
int BPF_KPROBE(hl_kprobe)
{
	hl_count_hit();
	hl_lat_enter();
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(hl_kretprobe)
{
	hl_lat_exit();
	return 0;
}
