// SPDX-License-Identifier: GPL-2.0
/* Where the time of a counting program goes on a live tracepoint (bench only):
 * programs that differ by one cache line touched, all on workqueue_queue_work,
 * attached in a chosen order behind a lead program.  At the event rates of a
 * live system the lines a program touches are mostly cold; tests/bench/cold_lines
 * prices each line by the difference between neighbouring programs.  The
 * hl_ln_pg_* programs price pages: how many a run touches, in which memory, and
 * how long ago each was last touched (a page drawn at random from a larger
 * region was touched less recently). */
#include "hits.bpf.h"
#include "empty.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* One 128-byte slot per CPU (no line written by two CPUs). */
struct hl_ln_slot {
	__u64 v[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct hl_ln_slot);
} ln_lines SEC(".maps");

const volatile __u32 hl_ln_step = 1;

HL_EMPTY_PROG("tp_btf/workqueue_queue_work", hl_ln_lead)

HL_EMPTY_PROG("tp_btf/workqueue_queue_work", hl_ln_empty)

/* One read-modify-write of this CPU's line. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_line)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_ln_slot *s = bpf_map_lookup_elem(&ln_lines, &cpu);

	if (s)
		s->v[0]++;
	return 0;
}

/* The same line again: warm when hl_ln_line ran just before. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_line_again)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_ln_slot *s = bpf_map_lookup_elem(&ln_lines, &cpu);

	if (s)
		s->v[1]++;
	return 0;
}

/* The line plus one .rodata value (the load stays in the JIT code). */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_rodata)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hl_ln_slot *s = bpf_map_lookup_elem(&ln_lines, &cpu);

	if (s)
		s->v[2] += hl_ln_step;
	return 0;
}

/* The proxies' counting body (fixed slot of a per-CPU `hits` map). */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_count)
{
	hl_count_slot(HL_SLOT_QUEUE_WORK);
	return 0;
}

/* Pages.  Each program has maps of its own, so none finds lines another just
 * touched.  vmalloc'd: mmapable arrays (the kernel maps them in 4 KiB pages,
 * as it does the owner table).  Direct-mapped: plain arrays of at most 32 KiB,
 * which the kernel allocates with kmalloc. */
#define HL_LN_TOUCH 6
#define HL_LN_CPUS 64

struct hl_ln_page {
	__u64 v[512];
};

#define HL_LN_VMALLOC(name, pages)                              \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_ARRAY);               \
		__uint(max_entries, pages);                     \
		__uint(map_flags, BPF_F_MMAPABLE);              \
		__type(key, __u32);                             \
		__type(value, struct hl_ln_page);               \
	} name SEC(".maps")

#define HL_LN_KMALLOC(name, pages)                              \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_ARRAY);               \
		__uint(max_entries, pages);                     \
		__type(key, __u32);                             \
		__type(value, struct hl_ln_page);               \
	} name SEC(".maps")

HL_LN_VMALLOC(ln_vm_one, HL_LN_CPUS);
HL_LN_VMALLOC(ln_vm_six, HL_LN_CPUS * HL_LN_TOUCH);
HL_LN_KMALLOC(ln_km_one, 1);
HL_LN_KMALLOC(ln_km_six, HL_LN_TOUCH);
/* 7 pages: the array's header must fit under 32 KiB too. */
HL_LN_KMALLOC(ln_km_28k, 7);
HL_LN_VMALLOC(ln_vm_32k, 8);
HL_LN_VMALLOC(ln_vm_64k, 16);
HL_LN_VMALLOC(ln_vm_128k, 32);
HL_LN_VMALLOC(ln_vm_512k, 128);
HL_LN_VMALLOC(ln_vm_1m, 256);
HL_LN_VMALLOC(ln_vm_16m, 4096);

/* Per-CPU values a hit touches: three maps of 512 bytes a CPU each, as the
 * session's hits, handoff and workqueue counters are, against one map holding
 * all three. */
struct hl_ln_pcpu {
	__u64 v[64];
};

struct hl_ln_pcpu3 {
	__u64 v[3 * 64];
};

#define HL_LN_PERCPU(name, value_type)                                \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);        \
		__uint(max_entries, 1);                         \
		__type(key, __u32);                             \
		__type(value, value_type);                      \
	} name SEC(".maps")

HL_LN_PERCPU(ln_pc_a, struct hl_ln_pcpu);
HL_LN_PERCPU(ln_pc_b, struct hl_ln_pcpu);
HL_LN_PERCPU(ln_pc_c, struct hl_ln_pcpu);
HL_LN_PERCPU(ln_pc_abc, struct hl_ln_pcpu3);

/* A larger region in direct-mapped parts: an array of maps whose inner arrays
 * are each small enough for kmalloc (as ln_km_28k). */
#define HL_LN_PART_PAGES 7
struct hl_ln_part {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HL_LN_PART_PAGES);
	__type(key, __u32);
	__type(value, struct hl_ln_page);
};

#define HL_LN_PART(name) struct hl_ln_part name SEC(".maps")
HL_LN_PART(ln_p4_0); HL_LN_PART(ln_p4_1); HL_LN_PART(ln_p4_2); HL_LN_PART(ln_p4_3);
HL_LN_PART(ln_p16_0); HL_LN_PART(ln_p16_1); HL_LN_PART(ln_p16_2); HL_LN_PART(ln_p16_3);
HL_LN_PART(ln_p16_4); HL_LN_PART(ln_p16_5); HL_LN_PART(ln_p16_6); HL_LN_PART(ln_p16_7);
HL_LN_PART(ln_p16_8); HL_LN_PART(ln_p16_9); HL_LN_PART(ln_p16_10); HL_LN_PART(ln_p16_11);
HL_LN_PART(ln_p16_12); HL_LN_PART(ln_p16_13); HL_LN_PART(ln_p16_14); HL_LN_PART(ln_p16_15);

/* An outer array of `parts` inner arrays, listed after the macro. */
#define HL_LN_PARTS(name, parts, ...)                           \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);       \
		__uint(max_entries, parts);                     \
		__type(key, __u32);                             \
		__array(values, struct hl_ln_part);             \
	} name SEC(".maps") = { .values = { __VA_ARGS__ } }

HL_LN_PARTS(ln_km_4parts, 4, &ln_p4_0, &ln_p4_1, &ln_p4_2, &ln_p4_3);
HL_LN_PARTS(ln_km_16parts, 16, &ln_p16_0, &ln_p16_1, &ln_p16_2, &ln_p16_3, &ln_p16_4, &ln_p16_5, &ln_p16_6,
	    &ln_p16_7, &ln_p16_8, &ln_p16_9, &ln_p16_10, &ln_p16_11, &ln_p16_12, &ln_p16_13, &ln_p16_14,
	    &ln_p16_15);

/* Adds one to a word of an entry (written out at each call site: a key on the
 * stack in a loop defeats the verifier's bound on the loop). */
static __always_inline void hl_ln_bump(void *map, __u32 key, __u32 word)
{
	struct hl_ln_page *p = bpf_map_lookup_elem(map, &key);

	if (p)
		p->v[word & 511]++;
}

/* This CPU's own line of a shared page (CPUs 0-7 apart by 64 bytes). */
static __always_inline __u32 hl_ln_cpu_word(void)
{
	return (bpf_get_smp_processor_id() % 8) * 8;
}

static __always_inline __u32 hl_ln_random_page(__u32 pages)
{
	return bpf_get_prandom_u32() % pages;
}

/* Six lines of this CPU's own page. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_vm_1page)
{
	__u32 k = bpf_get_smp_processor_id() % HL_LN_CPUS;
	struct hl_ln_page *p = bpf_map_lookup_elem(&ln_vm_one, &k);

	if (!p)
		return 0;
	for (int i = 0; i < HL_LN_TOUCH; i++)
		p->v[i * 64]++;
	return 0;
}

/* One line on each of six pages of this CPU's own. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_vm_6pages)
{
	__u32 k = (bpf_get_smp_processor_id() % HL_LN_CPUS) * HL_LN_TOUCH;

	hl_ln_bump(&ln_vm_six, k, 0);
	hl_ln_bump(&ln_vm_six, k + 1, 0);
	hl_ln_bump(&ln_vm_six, k + 2, 0);
	hl_ln_bump(&ln_vm_six, k + 3, 0);
	hl_ln_bump(&ln_vm_six, k + 4, 0);
	hl_ln_bump(&ln_vm_six, k + 5, 0);
	return 0;
}

/* Six lines of one direct-mapped page (this CPU's 512 bytes of it). */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_km_1page)
{
	__u32 w = hl_ln_cpu_word() * 8;

	hl_ln_bump(&ln_km_one, 0, w);
	hl_ln_bump(&ln_km_one, 0, w + 8);
	hl_ln_bump(&ln_km_one, 0, w + 16);
	hl_ln_bump(&ln_km_one, 0, w + 24);
	hl_ln_bump(&ln_km_one, 0, w + 32);
	hl_ln_bump(&ln_km_one, 0, w + 40);
	return 0;
}

/* This CPU's line on each of six direct-mapped pages. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_km_6pages)
{
	__u32 w = hl_ln_cpu_word();

	hl_ln_bump(&ln_km_six, 0, w);
	hl_ln_bump(&ln_km_six, 1, w);
	hl_ln_bump(&ln_km_six, 2, w);
	hl_ln_bump(&ln_km_six, 3, w);
	hl_ln_bump(&ln_km_six, 4, w);
	hl_ln_bump(&ln_km_six, 5, w);
	return 0;
}

/* One line in each of three per-CPU maps. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_pc_3maps)
{
	hl_ln_bump(&ln_pc_a, 0, 0);
	hl_ln_bump(&ln_pc_b, 0, 0);
	hl_ln_bump(&ln_pc_c, 0, 0);
	return 0;
}

/* The same three lines, in one per-CPU map. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_pc_1map)
{
	__u32 zero = 0;
	struct hl_ln_pcpu3 *p = bpf_map_lookup_elem(&ln_pc_abc, &zero);

	if (p) {
		p->v[0]++;
		p->v[64]++;
		p->v[128]++;
	}
	return 0;
}

/* The random draw alone, no line: the price of the helper. */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(hl_ln_pg_random)
{
	return hl_ln_random_page(256) == 1000;
}

/* One line on a page drawn at random, as a hash table's slot is: the larger
 * the region, the longer since the page was last touched. */
#define HL_LN_RANDOM_PAGE_PROG(name, map, pages)                          \
	SEC("tp_btf/workqueue_queue_work")                                \
	int BPF_PROG(name)                                                \
	{                                                                 \
		hl_ln_bump(&map, hl_ln_random_page(pages), hl_ln_cpu_word()); \
		return 0;                                                 \
	}

HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_km_28k, ln_km_28k, 7)
HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_vm_32k, ln_vm_32k, 8)
HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_vm_64k, ln_vm_64k, 16)
HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_vm_128k, ln_vm_128k, 32)
HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_vm_512k, ln_vm_512k, 128)
HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_vm_1m, ln_vm_1m, 256)
HL_LN_RANDOM_PAGE_PROG(hl_ln_pg_vm_16m, ln_vm_16m, 4096)

/* One line on a random page of a random part. */
#define HL_LN_RANDOM_PART_PROG(name, outer, parts)                        \
	SEC("tp_btf/workqueue_queue_work")                                \
	int BPF_PROG(name)                                                \
	{                                                                 \
		__u32 r = bpf_get_prandom_u32(), part = r % (parts);      \
		void *inner = bpf_map_lookup_elem(&outer, &part);         \
                                                                          \
		if (inner)                                                \
			hl_ln_bump(inner, (r >> 8) % HL_LN_PART_PAGES,       \
				    hl_ln_cpu_word());                    \
		return 0;                                                 \
	}

HL_LN_RANDOM_PART_PROG(hl_ln_pg_km_4x28k, ln_km_4parts, 4)
HL_LN_RANDOM_PART_PROG(hl_ln_pg_km_16x28k, ln_km_16parts, 16)
