// SPDX-License-Identifier: GPL-2.0
/* Empty programs on every tracepoint a default session's events run on a
 * kernel without fentry (bench only): what any program there costs before it
 * does anything, at the workload's own event rates. */
#include "empty.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* The tracepoints bpftrace's script counts, and the session's proxies. */
HL_EMPTY_PROG("tp_btf/consume_skb", hl_fl_consume_skb)
HL_EMPTY_PROG("tp_btf/kfree_skb", hl_fl_kfree_skb)
HL_EMPTY_PROG("tp_btf/workqueue_queue_work", hl_fl_queue_work)
/* The session's proxy only. */
HL_EMPTY_PROG("tp_btf/tcp_destroy_sock", hl_fl_tcp_destroy_sock)
/* The workqueue attribution's other two programs. */
HL_EMPTY_PROG("tp_btf/workqueue_execute_start", hl_fl_execute_start)
HL_EMPTY_PROG("tp_btf/irq_handler_entry", hl_fl_irq)
