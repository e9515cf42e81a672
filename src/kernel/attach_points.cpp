// SPDX-License-Identifier: Apache-2.0
#include "hotline/kernel/attach_points.hpp"

#include <bpf/btf.h>
#include <fnmatch.h>

#include <charconv>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "hotline/kernel/btf_layout.hpp"

namespace hotline {

namespace {

constexpr std::string_view kTracePrefix = "btf_trace_";

// "GLOB" or "GLOB:N": the pattern, and the one argument index it keeps (-1: all).
// An N too large for an int is no argument any prototype has: it keeps none.
std::pair<std::string, int> split_arg(const std::string& g) {
    const std::size_t colon = g.rfind(':');
    if (colon == std::string::npos || colon + 1 == g.size() ||
        g.find_first_not_of("0123456789", colon + 1) != std::string::npos)
        return {g, -1};
    int n = 0;
    auto [end, ec] = std::from_chars(g.data() + colon + 1, g.data() + g.size(), n);
    return {g.substr(0, colon), ec == std::errc() ? n : std::numeric_limits<int>::max()};
}

// The argument indexes of `name` the globs keep: nullopt when none matches,
// an empty set when every argument is kept.
std::optional<std::set<int>> kept_args(const std::string& name, const std::vector<std::string>& globs) {
    if (globs.empty()) return std::set<int>{};
    std::optional<std::set<int>> kept;
    for (const auto& g : globs) {
        auto [pattern, arg] = split_arg(g);
        if (fnmatch(pattern.c_str(), name.c_str(), 0) != 0) continue;
        if (arg < 0) return std::set<int>{};
        if (!kept) kept.emplace();
        kept->insert(arg);
    }
    return kept;
}

// The prototype behind a `btf_trace_NAME` typedef (a pointer to it) or a FUNC;
// null for any other type.
const struct btf_type* prototype(const struct btf* b, const struct btf_type* t, AttachKind kind) {
    if (kind == AttachKind::kFunction) return btf_is_func(t) ? btf__type_by_id(b, t->type) : nullptr;
    if (!btf_is_typedef(t)) return nullptr;
    const struct btf_type* ptr = btf__type_by_id(b, t->type);
    return ptr && btf_is_ptr(ptr) ? btf__type_by_id(b, ptr->type) : nullptr;
}

// The attach point's name, or "" when `t` is not one of `kind`.
std::string attach_name(const struct btf* b, const struct btf_type* t, AttachKind kind) {
    const char* n = btf__name_by_offset(b, t->name_off);
    if (!n || !*n) return {};
    std::string_view name(n);
    if (kind == AttachKind::kFunction) return btf_is_func(t) ? std::string(name) : std::string();
    if (!btf_is_typedef(t) || !name.starts_with(kTracePrefix)) return {};
    return std::string(name.substr(kTracePrefix.size()));
}

std::vector<StructArg> struct_args(const struct btf* b, const struct btf_type* proto, AttachKind kind) {
    std::vector<StructArg> args;
    // A tracepoint's first parameter is the probe's private __data.
    const int first = kind == AttachKind::kTracepoint ? 1 : 0;
    const struct btf_param* params = btf_params(proto);
    for (int i = first; i < btf_vlen(proto); ++i) {
        std::string type = pointed_struct(b, params[i].type);
        if (!type.empty()) args.push_back({i - first, type});
    }
    return args;
}

}  // namespace

std::string_view to_string(AttachKind k) { return k == AttachKind::kTracepoint ? "tracepoint" : "function"; }

std::vector<TypedAttachPoint> typed_attach_points(const struct btf* b, AttachKind kind,
                                                  const std::vector<std::string>& globs) {
    std::vector<TypedAttachPoint> out;
    if (!b) return out;
    const std::uint32_t n = btf__type_cnt(b);
    for (std::uint32_t id = 1; id < n; ++id) {
        const struct btf_type* t = btf__type_by_id(b, id);
        std::string name = attach_name(b, t, kind);
        if (name.empty()) continue;
        auto kept = kept_args(name, globs);
        if (!kept) continue;
        const struct btf_type* proto = prototype(b, t, kind);
        if (!proto || !btf_is_func_proto(proto)) continue;
        auto args = struct_args(b, proto, kind);
        if (!kept->empty())
            std::erase_if(args, [&](const StructArg& a) { return !kept->count(a.index); });
        if (!args.empty()) out.push_back({kind, std::move(name), std::move(args)});
    }
    return out;
}

}  // namespace hotline
