// SPDX-License-Identifier: Apache-2.0
// The machine facts of machine_facts.hpp, read from the kernel's own files and
// by loading empty BPF programs with libbpf (tests/lib/bpf/machine_facts.bpf.c).
#include "machine_facts.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "files.hpp"
#include "machine_facts.skel.h"

namespace hostfacts {

namespace fs = std::filesystem;

namespace {

using testlib::slurp;

std::string command_output(const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[512];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
}

// "none [integrity] confidentiality" -> "integrity".
std::string bracketed(const std::string& text) {
    auto lb = text.find('['), rb = text.find(']');
    if (lb == std::string::npos || rb == std::string::npos || rb < lb) return "unreadable: " + text;
    return text.substr(lb + 1, rb - lb - 1);
}

// securityfs is often not mounted: it is then mounted in a private mount
// namespace of a child (unshare(1)), never in the host's view.
std::string read_lockdown(std::string* from) {
    const std::string path = "/sys/kernel/security/lockdown";
    if (fs::exists(path)) {
        *from = path;
        return bracketed(slurp(path));
    }
    std::string text = command_output(
        "unshare -m --propagation private sh -c 'mount -t securityfs securityfs /sys/kernel/security && "
        "{ cat /sys/kernel/security/lockdown 2>/dev/null || echo \"[none] (no lockdown file)\"; }' 2>/dev/null");
    *from = path + " (securityfs mounted in a private mount namespace)";
    return bracketed(text);
}

std::vector<int> parse_cpulist(const std::string& s) {
    std::vector<int> cpus;
    std::istringstream in(s);
    for (std::string part; std::getline(in, part, ',');) {
        if (part.find_first_of("0123456789") == std::string::npos) continue;
        int lo = std::stoi(part), hi = lo;
        if (auto dash = part.find('-'); dash != std::string::npos) hi = std::stoi(part.substr(dash + 1));
        for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
    return cpus;
}

std::map<int, std::vector<int>> read_nodes(std::string* from) {
    std::map<int, std::vector<int>> nodes;
    const fs::path dir = "/sys/devices/system/node";
    std::error_code ec;
    for (auto& e : fs::directory_iterator(dir, ec)) {
        std::string n = e.path().filename().string();
        if (n.size() <= 4 || n.rfind("node", 0) != 0 || n.find_first_not_of("0123456789", 4) != std::string::npos)
            continue;
        nodes[std::stoi(n.substr(4))] = parse_cpulist(slurp((e.path() / "cpulist").string()));
    }
    *from = (dir / "node*/cpulist").string();
    if (nodes.empty()) {  // a kernel without NUMA: one node holds every CPU
        nodes[0] = parse_cpulist(slurp("/sys/devices/system/cpu/possible"));
        *from = "/sys/devices/system/cpu/possible (no " + dir.string() + ")";
    }
    return nodes;
}

// Offset in bytes of member `name` of struct `type`, looking into anonymous
// members; -1 when absent.
int member_offset(const struct btf* b, int type_id, const std::string& name, int base = 0) {
    const struct btf_type* t = btf__type_by_id(b, std::uint32_t(type_id));
    if (!t || !(btf_is_struct(t) || btf_is_union(t))) return -1;
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
        int off = base + int(btf_member_bit_offset(t, std::uint32_t(i)) / 8);
        const char* n = btf__name_by_offset(b, m->name_off);
        if (n && name == n) return off;
        if (!n || !*n) {
            int inner = member_offset(b, int(m->type), name, off);
            if (inner >= 0) return inner;
        }
    }
    return -1;
}

// The name of the struct or union member `name` of struct `type` is, or "".
std::string member_type(const struct btf* b, const char* type, const char* name) {
    int id = btf__find_by_name_kind(b, type, BTF_KIND_STRUCT);
    const struct btf_type* t = id > 0 ? btf__type_by_id(b, std::uint32_t(id)) : nullptr;
    if (!t) return "";
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
        const char* n = btf__name_by_offset(b, m->name_off);
        if (!n || std::strcmp(n, name) != 0) continue;
        const struct btf_type* mt = btf__type_by_id(b, m->type);
        while (mt && (btf_is_typedef(mt) || btf_is_const(mt) || btf_is_volatile(mt))) mt = btf__type_by_id(b, mt->type);
        return mt && (btf_is_struct(mt) || btf_is_union(mt)) ? btf__name_by_offset(b, mt->name_off) : "";
    }
    return "";
}

const char* kBtfSource = "/sys/kernel/btf/vmlinux (libbpf btf__load_vmlinux_btf)";

DstLayout read_dst_layout(const struct btf* b) {
    DstLayout d;
    int dst = btf__find_by_name_kind(b, "dst_entry", BTF_KIND_STRUCT);
    int rt = btf__find_by_name_kind(b, "rtable", BTF_KIND_STRUCT);
    for (const char* r : {"__rcuref", "__refcnt"})
        if (dst > 0 && (d.refcount_offset = member_offset(b, dst, r)) >= 0) {
            d.refcount = r;
            break;
        }
    if (dst > 0) d.lwtstate_offset = member_offset(b, dst, "lwtstate");
    if (rt > 0) d.rt_genid_offset = member_offset(b, rt, "rt_genid");
    return d;
}

std::string errno_name(int err) {
    const char* n = strerrorname_np(err < 0 ? -err : err);
    return n ? n : "errno " + std::to_string(err);
}

int quiet_libbpf(enum libbpf_print_level, const char*, va_list) { return 0; }

// Loads only `prog` of the facts object, then attaches it: "loads" or the
// errno name of the first refusal.
std::string try_program(const char* prog) {
    struct hl_machine_facts_bpf* s = hl_machine_facts_bpf::open();
    if (!s) return errno_name(errno);
    struct bpf_program* p;
    struct bpf_program* wanted = bpf_object__find_program_by_name(s->obj, prog);
    bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, p == wanted);
    std::string result = "loads";
    if (int err = bpf_object__load(s->obj)) {
        result = errno_name(err);
    } else if (struct bpf_link* l = bpf_program__attach(wanted); !l) {
        result = errno_name(errno);
    } else {
        bpf_link__destroy(l);
    }
    hl_machine_facts_bpf::destroy(s);
    return result;
}

std::string shown_nodes(const std::map<int, std::vector<int>>& nodes) {
    std::string s = "{";
    for (auto& [n, cpus] : nodes) {
        s += (s.size() > 1 ? "; node " : "node ") + std::to_string(n) + ":";
        if (cpus.empty()) s += " memory only";
        for (int c : cpus) s.append(" ").append(std::to_string(c));
    }
    return s + "}";
}

}  // namespace

const MachineFacts& MachineFacts::get() {
    static MachineFacts facts;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* path = getenv("HOTLINE_HOST_FACTS");
        if (path && *path) facts.apply_overrides(path);
        facts.read_machine();
    });
    return facts;
}

void MachineFacts::read_machine() {
    if (!from_.count("lockdown")) lockdown_ = read_lockdown(&from_["lockdown"]);
    if (!from_.count("nodes")) nodes_ = read_nodes(&from_["nodes"]);
    if (!from_.count("dst_entry") || !from_.count("fast_pool_mix")) {
        struct btf* b = btf__load_vmlinux_btf();
        if (!from_.count("dst_entry")) {
            if (b) dst_ = read_dst_layout(b);
            from_["dst_entry"] = kBtfSource;
        }
        if (!from_.count("fast_pool_mix")) {
            if (b) fast_pool_mix_ = member_type(b, "fast_pool", "mix");
            from_["fast_pool_mix"] = kBtfSource;
        }
        btf__free(b);
    }
    auto old = libbpf_set_print(quiet_libbpf);
    for (auto [name, prog, fact] : {std::tuple{"fentry", "facts_fentry", &fentry_},
                                    std::tuple{"fexit", "facts_fexit", &fexit_}}) {
        if (from_.count(name)) continue;
        *fact = try_program(prog);
        from_[name] = std::string("loading and attaching ") + name + "/dst_release with libbpf";
    }
    if (!from_.count("kprobe")) {
        const std::string pmu = "/sys/bus/event_source/devices/kprobe";
        kprobe_ = fs::exists(pmu) ? try_program("facts_kprobe") : "no kprobe PMU";
        if (kprobe_ == "loads") kprobe_ = "attaches";
        from_["kprobe"] = pmu + ", then loading and attaching kprobe/dst_release with libbpf";
    }
    libbpf_set_print(old);
}

void MachineFacts::apply_overrides(const std::string& path) {
    nlohmann::json j = nlohmann::json::parse(slurp(path), nullptr, false);
    if (!j.is_object()) throw std::runtime_error("HOTLINE_HOST_FACTS=" + path + ": not a JSON object");
    const std::string from = "HOTLINE_HOST_FACTS=" + path;
    for (auto& [key, v] : j.items()) {
        if (key == "lockdown") lockdown_ = v.get<std::string>();
        else if (key == "fentry") fentry_ = v.get<std::string>();
        else if (key == "fexit") fexit_ = v.get<std::string>();
        else if (key == "kprobe") kprobe_ = v.get<std::string>();
        else if (key == "nodes")
            for (auto& [n, cpus] : v.items()) nodes_[std::stoi(n)] = cpus.get<std::vector<int>>();
        else if (key == "fast_pool_mix") fast_pool_mix_ = v.get<std::string>();
        else if (key == "dst_entry")
            dst_ = DstLayout{v.at("refcount").get<std::string>(), v.at("refcount_offset").get<int>(),
                             v.value("lwtstate_offset", -1), v.value("rt_genid_offset", -1)};
        else
            throw std::runtime_error(from + ": unknown fact \"" + key +
                                     "\" (lockdown, fentry, fexit, kprobe, nodes, dst_entry, fast_pool_mix)");
        from_[key] = from;
    }
}

int MachineFacts::node_of(int cpu) const {
    for (auto& [n, cpus] : nodes_)
        for (int c : cpus)
            if (c == cpu) return n;
    return -1;
}

int MachineFacts::nodes_with_cpus() const {
    int n = 0;
    for (auto& [node, cpus] : nodes_) n += !cpus.empty();
    return n;
}

std::string MachineFacts::planned(bool has_proxy) const {
    if (fentry_loads()) return "fentry";
    if (kprobe_attaches()) return "kprobe";
    return has_proxy ? "tracepoint" : "sampling";
}

std::vector<std::pair<std::string, std::string>> MachineFacts::rejections_before(bool has_proxy) const {
    std::vector<std::pair<std::string, std::string>> r;
    if (fentry_loads()) return r;
    r.emplace_back("fentry", fentry_ + " at ");
    if (kprobe_attaches()) return r;
    r.emplace_back("kprobe", kprobe_pmu() ? kprobe_ : "kernel built without kprobes");
    if (!has_proxy) r.emplace_back("tracepoint", "no tracepoint proxy");
    return r;
}

std::string MachineFacts::shown(const std::string& name) const {
    if (name == "lockdown") return lockdown_;
    if (name == "fentry") return fentry_;
    if (name == "fexit") return fexit_;
    if (name == "kprobe") return kprobe_;
    if (name == "nodes") return shown_nodes(nodes_);
    if (name == "fast_pool_mix") return fast_pool_mix_.empty() ? "(no member)" : fast_pool_mix_;
    if (name == "dst_entry")
        return dst_.refcount + " at " + std::to_string(dst_.refcount_offset) + ", lwtstate at " +
               std::to_string(dst_.lwtstate_offset) + ", rtable.rt_genid at " + std::to_string(dst_.rt_genid_offset);
    return "?";
}

std::string MachineFacts::why(std::initializer_list<const char*> names) const {
    std::string s;
    for (const char* n : names) {
        auto it = from_.find(n);
        s += std::string(s.empty() ? "" : "; ") + "machine fact " + n + " = " + shown(n) + " (from " +
             (it == from_.end() ? "nowhere" : it->second) + ")";
    }
    return s;
}

}  // namespace hostfacts
