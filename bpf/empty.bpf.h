/* SPDX-License-Identifier: GPL-2.0 */
/* Empty programs: the floor hotline's programs are priced against (`hotline
 * cost`, tests/bench). */
#ifndef HOTLINE_EMPTY_BPF_H
#define HOTLINE_EMPTY_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* A BPF_PROG program that does nothing, attached at `sec` and named `name`
 * (the name user space looks the program up by). Not for kprobes, whose
 * context is struct pt_regs (BPF_KPROBE). */
#define HL_EMPTY_PROG(sec, name)	\
	SEC(sec)			\
	int BPF_PROG(name)		\
	{				\
		return 0;		\
	}

#endif /* HOTLINE_EMPTY_BPF_H */
