// SPDX-License-Identifier: Apache-2.0
// Cache-line layout from BTF: flattens a struct and reports the fields that share
// the hot field's 64-byte line, so a report can say "rt_genid sits on the refcount line".
#include "hotline/kernel/btf_layout.hpp"

#include <bpf/btf.h>
#include <fmt/format.h>

#include <algorithm>

namespace hotline {

namespace {

const struct btf_type* skip_mods(const struct btf* b, std::uint32_t& id) {
    const struct btf_type* t = btf__type_by_id(b, id);
    while (t && (btf_is_typedef(t) || btf_is_const(t) || btf_is_volatile(t) || btf_is_restrict(t) ||
                 btf_is_type_tag(t))) {
        id = t->type;
        t = btf__type_by_id(b, id);
    }
    return t;
}

int find_struct(const struct btf* b, const std::string& name) {
    int id = btf__find_by_name_kind(b, name.c_str(), BTF_KIND_STRUCT);
    return id;
}

// The name a member is declared with: a typedef's (refcount_t, spinlock_t) or
// a struct's; "" for pointers, arrays and anonymous types.
std::string declared_type(const struct btf* b, std::uint32_t id) {
    const struct btf_type* t = btf__type_by_id(b, id);
    while (t && (btf_is_const(t) || btf_is_volatile(t) || btf_is_restrict(t) || btf_is_type_tag(t)))
        t = btf__type_by_id(b, t->type);
    if (!t || !(btf_is_typedef(t) || btf_is_struct(t) || btf_is_union(t) || btf_is_int(t))) return {};
    const char* n = btf__name_by_offset(b, t->name_off);
    return n ? n : "";
}

void flatten(const struct btf* b, std::uint32_t id, const std::string& prefix, std::uint32_t base,
             std::vector<FieldPos>& out, int depth) {
    const struct btf_type* t = btf__type_by_id(b, id);
    if (!t || depth > 8) return;
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
        std::uint32_t bit = btf_member_bit_offset(t, i);
        std::uint32_t off = base + bit / 8;
        const char* nm = btf__name_by_offset(b, m->name_off);
        std::string name = nm && *nm ? nm : "(anon)";
        std::uint32_t mid = m->type;
        const struct btf_type* mt = skip_mods(b, mid);
        long sz = btf__resolve_size(b, m->type);
        std::string path = prefix + "." + name;
        bool anon = !nm || !*nm;
        if (mt && (btf_is_struct(mt) || btf_is_union(mt)) && anon) {
            // Anonymous aggregates belong to the enclosing struct: open them up.
            // Named members (rcu_head, __rcuref) stay one field each.
            flatten(b, mid, prefix, off, out, depth + 1);
            continue;
        }
        FieldPos f;
        f.path = path;
        f.offset = off;
        f.size = sz > 0 ? std::uint32_t(sz) : 0;
        if (btf_member_bitfield_size(t, i)) f.size = (btf_member_bitfield_size(t, i) + 7) / 8;
        f.type = declared_type(b, m->type);
        out.push_back(f);
    }
}

std::string leaf(const std::string& path) {
    auto d = path.rfind('.');
    return d == std::string::npos ? path : path.substr(d + 1);
}

}  // namespace

Result<std::vector<FieldPos>> flatten_struct(const struct btf* b, const std::string& type) {
    if (!b) return make_error("no kernel BTF", ENOENT);
    int id = find_struct(b, type);
    if (id <= 0) return make_error("struct " + type + " not in kernel BTF", ENOENT);
    std::vector<FieldPos> out;
    flatten(b, std::uint32_t(id), type, 0, out, 0);
    std::stable_sort(out.begin(), out.end(), [](const FieldPos& a, const FieldPos& c) { return a.offset < c.offset; });
    return out;
}

Result<LineLayout> line_layout(const struct btf* b, const std::string& type, const std::vector<std::string>& anchors,
                               const std::string& container, const std::vector<std::string>& watched) {
    auto fields = flatten_struct(b, type);
    if (!fields) return fields.error();
    LineLayout l;
    l.type = type;
    int tid = find_struct(b, type);
    l.type_size = std::uint32_t(btf__resolve_size(b, tid));
    bool found = false;
    for (auto& a : anchors) {
        for (auto& f : *fields) {
            if (f.path == type + "." + a) {
                l.anchor = a;
                l.anchor_offset = f.offset;
                found = true;
                break;
            }
        }
        if (found) break;
    }
    if (!found) {
        std::string names;
        for (auto& a : anchors) names += (names.empty() ? "" : "/") + a;
        return make_error("struct " + type + " has no field " + names, ENOENT);
    }
    l.line_start = l.anchor_offset / kCacheLine * kCacheLine;
    std::vector<FieldPos> all = *fields;
    if (!container.empty()) {
        auto cf = flatten_struct(b, container);
        if (cf) {
            l.container = container;
            for (auto& f : *cf)
                if (f.offset >= l.type_size) all.push_back(f);  // the container's own fields
        }
    }
    std::uint32_t lo = l.line_start, hi = l.line_start + kCacheLine;
    for (auto& f : all)
        if (f.offset < hi && f.offset + std::max<std::uint32_t>(f.size, 1) > lo) l.on_line.push_back(f);
    for (auto& w : watched) {
        bool seen = false, on = false;
        for (auto& f : all) {
            if (leaf(f.path) != w) continue;
            seen = true;
            on |= f.offset < hi && f.offset + std::max<std::uint32_t>(f.size, 1) > lo;
        }
        if (seen) (on ? l.flagged : l.clear).push_back(w);
    }
    return l;
}

Result<LineLayout> object_layout(const struct btf* b, const std::string& type) {
    if (type == "dst_entry")
        return line_layout(b, "dst_entry", {"__refcnt", "__rcuref"}, "rtable",
                           {"obsolete", "lwtstate", "rt_genid", "__use", "lastuse"});
    if (type == "work_struct") return line_layout(b, "work_struct", {"data"}, "", {"func", "entry"});
    auto f = flatten_struct(b, type);
    if (!f) return f.error();
    if (f->empty()) return make_error("struct " + type + " has no fields", ENOENT);
    std::string first = (*f)[0].path.substr(type.size() + 1);
    return line_layout(b, type, {first}, "", {});
}

std::string pointed_struct(const struct btf* b, std::uint32_t type_id) {
    const struct btf_type* pt = skip_mods(b, type_id);
    if (!pt || !btf_is_ptr(pt)) return {};
    std::uint32_t tid = pt->type;
    const struct btf_type* st = skip_mods(b, tid);
    if (!st || !(btf_is_struct(st) || btf_is_union(st))) return {};
    const char* n = btf__name_by_offset(b, st->name_off);
    return n ? n : "";
}

std::string func_arg_struct(const struct btf* b, const std::string& func, int arg) {
    if (!b || arg < 0) return {};
    int id = btf__find_by_name_kind(b, func.c_str(), BTF_KIND_FUNC);
    if (id <= 0) return {};
    const struct btf_type* fn = btf__type_by_id(b, id);
    const struct btf_type* proto = btf__type_by_id(b, fn->type);
    if (!proto || !btf_is_func_proto(proto) || arg >= btf_vlen(proto)) return {};
    return pointed_struct(b, btf_params(proto)[arg].type);
}

}  // namespace hotline
