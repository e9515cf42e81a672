/* SPDX-License-Identifier: GPL-2.0 */
/* The session's hit counters, for objects that count hits.  All state is
 * per-CPU: a hit never writes a cache line another CPU writes. */
#ifndef HOTLINE_HITS_BPF_H
#define HOTLINE_HITS_BPF_H

#include "common.bpf.h"

/* One map for the whole session: the agent creates it and every object that
 * counts reuses it (bpf_map__reuse_fd). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hl_hits);
} hits SEC(".maps");

static __always_inline struct hl_hits *hl_hits_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&hits, &zero);
}

static __always_inline void hl_count_slot(__u32 slot)
{
	struct hl_hits *h = hl_hits_get();

	slot &= HL_MAX_TARGETS - 1;
	if (h) {
		h->t[slot].calls++;
		h->t[slot].events++;
	}
}

#endif /* HOTLINE_HITS_BPF_H */
