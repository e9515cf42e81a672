// SPDX-License-Identifier: GPL-2.0
/* fentry/fexit on one kernel function; the agent sets the attach target before
 * load, so one body serves every target (exact counts, latency from fexit). */
#include "common.bpf.h"

SEC("fentry")
int BPF_PROG(hl_fentry)
{
	hl_count_hit();
	hl_lat_enter();
	return 0;
}

SEC("fexit")
int BPF_PROG(hl_fexit)
{
	hl_lat_exit();
	return 0;
}
