// SPDX-License-Identifier: GPL-2.0
/* Batched trigger benchmark, in the style of the kernel selftests' bench
 * trigger tests: a raw_tp driver run with BPF_PROG_TEST_RUN fires the
 * signal_generate tracepoint many times per run (bpf_send_signal_thread with a
 * signal ignored by default, so nothing is ever queued), and hotline's counting
 * bodies, which read no tracepoint argument, are attached there next to an
 * empty program.  One syscall per batch: ns per hit without syscall noise. */
#include "hits.bpf.h"
#include "handoff.bpf.h"
#include "empty.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 hl_trigger_sig = 23; /* SIGURG */
const volatile __u32 hl_trigger_loops = 100000;
__u64 hl_trigger_errors = 0;

static long hl_trigger_one(__u64 i, void *ctx)
{
	if (bpf_send_signal_thread(hl_trigger_sig))
		hl_trigger_errors++;
	return 0;
}

SEC("raw_tp")
int hl_trigger_driver(void *ctx)
{
	bpf_loop(hl_trigger_loops, hl_trigger_one, NULL, 0);
	return 0;
}

HL_EMPTY_PROG("tp_btf/signal_generate", hl_trig_empty)

/* The counting body of the proxy programs. */
SEC("tp_btf/signal_generate")
int BPF_PROG(hl_trig_count)
{
	hl_count_slot(HL_SLOT_QUEUE_WORK);
	return 0;
}

/* Counting plus handoff tracking of one object that stays on this CPU: the
 * owner lookup every tracked hit pays. */
SEC("tp_btf/signal_generate")
int BPF_PROG(hl_trig_handoff)
{
	hl_count_slot(HL_SLOT_QUEUE_WORK);
	hl_track(4096, -1);
	return 0;
}
