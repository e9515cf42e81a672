// SPDX-License-Identifier: Apache-2.0
// Helpers for the fix tests of the unit and host tiers: a journal over a
// temporary fixture tree, and fake kernel facts.
#pragma once

#include <map>
#include <set>
#include <string>

#include "files.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/fix/journal.hpp"

namespace hotline::test {

using testlib::TempDir;

// A journal over a fixture procfs root: the two early-demux knobs and
// tcp_rmem, a boot id, and a journal directory and machine lock of its own.
struct JournalSandbox {
    TempDir d;
    KnobRoots roots;
    JournalOptions opts;

    explicit JournalSandbox(const std::string& owner = "unit test") {
        d.write("proc/sys/net/ipv4/ip_early_demux", "1\n");
        d.write("proc/sys/net/ipv4/tcp_early_demux", "1\n");
        d.write("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
        d.write("boot_id", "aaaa-1111\n");
        roots.proc_sys = d / "proc/sys";
        roots.boot_id = d / "boot_id";
        roots.netns_dir = d / "netns";
        opts.dir = d / "journal";
        opts.machine_lock = d / "machine.lock";
        opts.roots = roots;
        opts.allow_global = true;
        opts.owner = owner;
    }
    std::string val(const std::string& rel) const { return normalize_value(d.read("proc/sys/" + rel)); }
    bool journal_exists() const { return d.exists("journal/journal.json"); }
};

// A knob write of the fix "test-fix"; machine-wide unless SCOPE says otherwise.
inline KnobWrite write_of(const std::string& name, const std::string& value, Scope scope = Scope::kGlobal) {
    KnobWrite w;
    w.kind = KnobKind::kSysctl;
    w.name = name;
    w.value = value;
    w.scope = scope;
    w.fix = "test-fix";
    return w;
}

class FakeFacts : public KernelFacts {
public:
    std::set<std::string> knobs, functions, fields;  // fields as "type.member"
    std::map<std::string, std::string> field_types;
    int nodes = 1;

    bool knob_exists(const std::string& s) const override { return knobs.count(s) != 0; }
    std::optional<bool> has_function(const std::string& n) const override { return functions.count(n) != 0; }
    std::optional<bool> has_field(const std::string& t, const std::string& m) const override {
        return fields.count(t + "." + m) != 0;
    }
    std::optional<std::string> field_type(const std::string& t, const std::string& m) const override {
        auto it = field_types.find(t + "." + m);
        if (it == field_types.end()) return std::nullopt;
        return it->second;
    }
    int numa_nodes() const override { return nodes; }
};

// This machine's sysctl REL (in network namespace NS), normalised; "<error>"
// when it cannot be read, so a comparison names what went wrong.
inline std::string knob(const std::string& rel, const std::optional<NetnsRef>& ns = std::nullopt) {
    FsKnobIo io;
    auto v = io.read(KnobKind::kSysctl, rel, ns);
    return v ? normalize_value(*v) : "<" + v.error().message() + ">";
}

}  // namespace hotline::test
