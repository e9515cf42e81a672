/* SPDX-License-Identifier: GPL-2.0 */
/* The CPU count and "queued for another CPU", shared by the handoff tracker and
 * the workqueue attribution (an object including both has one copy). */
#ifndef HOTLINE_CPUS_BPF_H
#define HOTLINE_CPUS_BPF_H

#include "common.bpf.h"

/* Set before load. */
const volatile __u32 hl_nr_cpus = 0;

/* req_cpu: the CPU a caller asked for (queue_work_on's first argument; a
 * negative value or WORK_CPU_UNBOUND, which is NR_CPUS, asks for none). */
static __always_inline bool hl_other_cpu(__s64 req_cpu, __u32 cpu)
{
	return req_cpu >= 0 && req_cpu < hl_nr_cpus && req_cpu != cpu;
}

#endif /* HOTLINE_CPUS_BPF_H */
