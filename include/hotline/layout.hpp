// Cache-line layout of kernel structs from BTF: which fields share the 64-byte
// line of a hot field (the refcount), for pre-6.4 and 6.4+ dst_entry alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hotline/result.hpp"

struct btf;

namespace hotline {

inline constexpr std::uint32_t kCacheLine = 64;

struct FieldPos {
    std::string path;  // "dst_entry.__refcnt", "rtable.rt_genid", "dst_entry.rcu_head.next"
    std::uint32_t offset = 0;  // bytes from the start of the outermost struct
    std::uint32_t size = 0;
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

// Every field of a struct, nested structs and unions flattened (arrays as one field).
Result<std::vector<FieldPos>> flatten_struct(const struct btf* b, const std::string& type);

// Finds the first of `anchors` in `type` and reports its cache line.  `container`
// (may be empty) is a struct whose first member is `type`; its fields count too.
// `watched` names fields (leaf names, searched in type and container) to flag.
Result<LineLayout> line_layout(const struct btf* b, const std::string& type,
                               const std::vector<std::string>& anchors, const std::string& container,
                               const std::vector<std::string>& watched);

// The layout hotline shows for a target's object type (dst_entry, work_struct, or
// any struct: its first field's line).
Result<LineLayout> object_layout(const struct btf* b, const std::string& type);

// The struct type a function's argument N points to, from BTF ("" when not a struct pointer).
std::string func_arg_struct(const struct btf* b, const std::string& func, int arg);

std::string describe(const LineLayout& l);

}  // namespace hotline
