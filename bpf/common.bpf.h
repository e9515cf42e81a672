/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by hotline's BPF programs.  No maps and no load-time
 * constants here: each object declares the maps it uses, itself or through a
 * map header (hits.bpf.h, latency.bpf.h, handoff.bpf.h). */
#ifndef HOTLINE_COMMON_BPF_H
#define HOTLINE_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hotline/model/abi.h"

/* include/linux/skbuff.h: the low bit of _skb_refdst marks a dst the skb holds
 * no reference on (a macro, so not in vmlinux.h). */
#ifndef SKB_DST_NOREF
#define SKB_DST_NOREF 1UL
#endif

/* floor(log2(v)) without loops, for the histogram slot. */
static __always_inline __u32 hl_log2(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* arr[idx]++ on an array (not a pointer), idx clamped to its last entry.
 * clang clamps a zero-extended copy and indexes with the original register;
 * verifiers before ~6.8 (Debian's 5.10, 6.1, 6.12) then see an unbounded index
 * and refuse the program (EACCES), so the index is checked again on the
 * register used.  A macro: through a pointer parameter clang no longer folds
 * the array's offset into the load. */
#define hl_inc_clamped(arr, idx)                                       \
	do {                                                           \
		const __u32 __n = sizeof(arr) / sizeof((arr)[0]);      \
		__u32 __i = (idx);                                     \
                                                                       \
		if (__i >= __n)                                        \
			__i = __n - 1;                                 \
		barrier_var(__i);                                      \
		if (__i < __n)                                         \
			(arr)[__i]++;                                  \
	} while (0)

/* Counts a latency in its log2 slot of a histogram array (HL_HIST_SLOTS). */
#define hl_hist_add(hist, delta_ns)                                    \
	do {                                                           \
		__u64 __d = (delta_ns);                                \
                                                                       \
		hl_inc_clamped(hist, __d ? hl_log2(__d) : 0);          \
	} while (0)

/* A pointer as a plain number: the verifier allows no shifts or multiplies on a
 * fentry or tp_btf argument, or on a pointer loaded through one (work->func); a
 * store to map memory and a load back give the same bits as a number.  `scratch`
 * is a word on a line the caller writes anyway, so the round trip costs no line. */
static __always_inline __u64 hl_as_number(__u64 *scratch, __u64 ptr)
{
	*scratch = ptr;
	barrier();
	return *(volatile __u64 *)scratch;
}

/* A multiplicative (Fibonacci) hash of an address, in the low 32 bits of the
 * result; the address's low `align_bits` bits are dropped first. */
static __always_inline __u64 hl_addr_hash(__u64 addr, __u32 align_bits)
{
	return ((addr >> align_bits) * 0x9E3779B97F4A7C15ULL) >> 32;
}

/* 1 if an skb's _skb_refdst holds a reference on its dst (set, noref bit
 * clear), else 0, without a branch: whether an skb holds one is not predictable. */
static __always_inline __u64 hl_dst_refcounted(unsigned long refdst)
{
	return ((refdst | -refdst) >> 63) & ~refdst & SKB_DST_NOREF;
}

/* The object of a hit from an skb argument: its dst, noref bit cleared. */
static __always_inline __u64 hl_skb_dst(__u64 skb)
{
	return BPF_CORE_READ((struct sk_buff *)skb, _skb_refdst) & ~SKB_DST_NOREF;
}

#endif /* HOTLINE_COMMON_BPF_H */
