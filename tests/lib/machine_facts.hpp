// SPDX-License-Identifier: Apache-2.0
// What this machine is, for the host tests' expectations: lockdown, which BPF
// program types the kernel admits, NUMA nodes, the BTF layout of dst_entry.
// Read without hotline's code (sysfs, securityfs, /proc and libbpf directly),
// so that a wrong read inside hotline shows up as a disagreement with the test
// instead of being copied into the expectation.
//
// HOTLINE_HOST_FACTS=FILE (a JSON object, keys as in the accessors below)
// overrides any fact it names; the others are still read from the machine.
// tests/host/other_machine.sh uses it to run the host tier as if on another
// machine.  Every fact keeps where it came from, so a failed expectation can
// say which fact it rested on (why()).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hostfacts {

// struct dst_entry in the kernel's BTF.  Offsets in bytes; -1 when absent.
struct DstLayout {
    std::string refcount;        // __refcnt (before 6.4) or __rcuref
    int refcount_offset = -1;    // into struct dst_entry
    int lwtstate_offset = -1;    // into struct dst_entry
    int rt_genid_offset = -1;    // into struct rtable, which begins with its dst_entry
};

class MachineFacts {
public:
    // Read once per process (and the override file applied).  Throws
    // std::runtime_error when the override file is unreadable or names an
    // unknown fact.
    static const MachineFacts& get();

    const std::string& lockdown() const { return lockdown_; }  // none, integrity, confidentiality
    // "loads", or the errno name the kernel refused an fentry (fexit) program
    // on dst_release with, at load or at attach ("EPERM").
    const std::string& fentry() const { return fentry_; }
    const std::string& fexit() const { return fexit_; }
    bool fentry_loads() const { return fentry_ == "loads"; }
    bool fexit_loads() const { return fexit_ == "loads"; }
    // "attaches", "no kprobe PMU", or the errno name of the refusal.
    const std::string& kprobe() const { return kprobe_; }
    bool kprobe_attaches() const { return kprobe_ == "attaches"; }
    bool kprobe_pmu() const { return kprobe_ != "no kprobe PMU"; }
    // Node -> its CPUs (empty for a memory-only node).
    const std::map<int, std::vector<int>>& nodes() const { return nodes_; }
    int node_of(int cpu) const;  // -1: no node lists the CPU
    int nodes_with_cpus() const;
    const DstLayout& dst() const { return dst_; }
    // The type of struct fast_pool's member mix in BTF: timer_list (6.1+),
    // work_struct (5.18-6.0) or empty (no such member).
    const std::string& fast_pool_mix() const { return fast_pool_mix_; }

    // The mechanism hotline's documented order (fentry, kprobe, tracepoint,
    // sampling) gives a function of the kernel's BTF and kallsyms, with or
    // without a tracepoint proxy.
    std::string planned(bool has_proxy) const;
    // The plan's rejections before that mechanism, as {mechanism, words its
    // reason must contain}.
    std::vector<std::pair<std::string, std::string>> rejections_before(bool has_proxy) const;
    // "machine fact NAME = VALUE (from SOURCE)" for each name, for failure messages.
    std::string why(std::initializer_list<const char*> names) const;

private:
    MachineFacts() = default;
    void read_machine();
    void apply_overrides(const std::string& path);
    std::string shown(const std::string& name) const;

    std::string lockdown_, fentry_, fexit_, kprobe_, fast_pool_mix_;
    std::map<int, std::vector<int>> nodes_;
    DstLayout dst_;
    std::map<std::string, std::string> from_;  // fact -> where it was read
};

}  // namespace hostfacts
