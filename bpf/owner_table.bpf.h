/* SPDX-License-Identifier: GPL-2.0 */
/* Lookups in a set of an owner table (a 4-way set-associative array of ways
 * with `obj` and `stamp`), for the targets' table (handoff.bpf.h) and
 * discover's: no maps here. */
#ifndef HOTLINE_OWNER_TABLE_BPF_H
#define HOTLINE_OWNER_TABLE_BPF_H

#include "common.bpf.h"

/* NAME_find(s, obj): the way of `s` holding `obj`, or HL_OWNER_WAYS (obj is
 * never 0).  NAME_victim(s): the way to give a new object, an empty one, else
 * the one whose owner changed longest ago (wrap-safe jiffies).  A way index is
 * masked with HL_OWNER_WAYS - 1 where it indexes a set: the verifier wants the
 * bound at the access. */
#define HL_OWNER_TABLE_FNS(NAME, SET)                                                    \
	static __always_inline __u32 NAME##_find(const SET *s, __u64 obj)               \
	{                                                                                \
		_Pragma("unroll") for (__u32 i = 0; i < HL_OWNER_WAYS; i++) if (s->w[i].obj == obj) return i; \
		return HL_OWNER_WAYS;                                                    \
	}                                                                                \
	static __always_inline __u32 NAME##_victim(const SET *s)                          \
	{                                                                                \
		__u32 v = 0;                                                             \
		_Pragma("unroll") for (__u32 i = 0; i < HL_OWNER_WAYS; i++)              \
		{                                                                        \
			if (!s->w[i].obj)                                                \
				return i;                                                \
			if ((__s32)(s->w[i].stamp - s->w[v & (HL_OWNER_WAYS - 1)].stamp) < 0) \
				v = i;                                                   \
		}                                                                        \
		return v;                                                                \
	}

#endif /* HOTLINE_OWNER_TABLE_BPF_H */
