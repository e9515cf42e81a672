// SPDX-License-Identifier: Apache-2.0
// Cache-line layout of a kernel struct: which fields share the 64-byte line of a
// hot field (the refcount).  Read from BTF by the kernel layer (btf_layout.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>


namespace hotline {

inline constexpr std::uint32_t kCacheLine = 64;

struct FieldPos {
    std::string path;  // "dst_entry.__refcnt", "rtable.rt_genid", "dst_entry.rcu_head.next"
    std::uint32_t offset = 0;  // bytes from the start of the outermost struct
    std::uint32_t size = 0;
    std::string type = {};  // as declared: "refcount_t", "spinlock_t", "list_head"; "" for pointers and arrays
};

struct LineLayout {
    std::string type;        // the struct examined, e.g. "dst_entry"
    std::string container;   // a struct embedding it at offset 0 whose fields also count, e.g. "rtable"
    std::uint32_t type_size = 0;
    std::string anchor;      // the hot field found, e.g. "__rcuref"
    std::uint32_t anchor_offset = 0;
    std::uint32_t line_start = 0;  // [line_start, line_start + 64)
    std::vector<FieldPos> on_line;      // every field overlapping the anchor's line
    std::vector<std::string> flagged;   // watched fields that share the line (false-sharing suspects)
    std::vector<std::string> clear;     // watched fields that are on other lines
};

std::string describe(const LineLayout& l);

// Types every CPU that takes, drops or counts them writes: refcounts, atomics
// and locks.  A line holding one is where an object handed between CPUs is
// most likely to bounce.
inline bool written_by_every_user(std::string_view type) {
    static constexpr std::string_view kinds[] = {
        "atomic_t",   "atomic64_t",    "atomic_long_t", "refcount_t", "rcuref_t",  "refcount_struct",
        "spinlock_t", "raw_spinlock_t", "rwlock_t",     "seqcount_t", "seqlock_t", "mutex",
        "rw_semaphore", "lockref",     "local_t",       "qspinlock",  "percpu_ref"};
    for (auto k : kinds)
        if (type == k) return true;
    return false;
}

}  // namespace hotline
