#include "hotline/kernel/attach_points.hpp"

#include <bpf/btf.h>
#include <fnmatch.h>

#include <string_view>

#include "hotline/kernel/btf_layout.hpp"

namespace hotline {

namespace {

constexpr std::string_view kTracePrefix = "btf_trace_";

bool matches(const std::string& name, const std::vector<std::string>& globs) {
    if (globs.empty()) return true;
    for (const auto& g : globs)
        if (fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
    return false;
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
        if (name.empty() || !matches(name, globs)) continue;
        const struct btf_type* proto = prototype(b, t, kind);
        if (!proto || !btf_is_func_proto(proto)) continue;
        auto args = struct_args(b, proto, kind);
        if (!args.empty()) out.push_back({kind, std::move(name), std::move(args)});
    }
    return out;
}

}  // namespace hotline
