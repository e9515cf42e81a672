// SPDX-License-Identifier: Apache-2.0
// Reads cache-line layouts of kernel structs from BTF, for pre-6.4 and 6.4+
// dst_entry alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hotline/model/layout.hpp"
#include "hotline/base/result.hpp"

struct btf;

namespace hotline {

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

// The struct (or union) a pointer type points to, through typedefs and
// qualifiers; "" when `type_id` is not such a pointer or the struct is anonymous.
std::string pointed_struct(const struct btf* b, std::uint32_t type_id);

// The struct type a function's argument N points to, from BTF ("" when not a struct pointer).
std::string func_arg_struct(const struct btf* b, const std::string& func, int arg);

}  // namespace hotline
