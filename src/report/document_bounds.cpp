// SPDX-License-Identifier: Apache-2.0
// Bounds of a recording read back from a file (issue: hostile documents).
#include "hotline/report/document_bounds.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace hotline {

namespace {

using json = nlohmann::json;
constexpr std::size_t kMaxProblems = 5;

class Bounds {
public:
    std::vector<std::string> problems;

    bool full() const { return problems.size() >= kMaxProblems; }
    void add(std::string p) {
        if (!full()) problems.push_back(std::move(p));
    }
    // An integer id in [0, limit); says what is wrong otherwise.
    bool id(const json& v, long limit, const std::string& where, const char* what) {
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= limit) {
            add(fmt::format("{} is {}: a {} is an integer from 0 to {}", where, v.dump(), what, limit - 1));
            return false;
        }
        return true;
    }
    void array_at_most(const json& a, std::size_t n, const std::string& where, const char* per) {
        if (a.is_array() && a.size() > n)
            add(fmt::format("{} has {} entries, more than the {} {}", where, a.size(), n, per));
    }
};

// A key from the file, shown without its control characters.
std::string printable(std::string s) {
    if (s.size() > 64) s = s.substr(0, 64) + "...";
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return s;
}

const json& at(const json& j, const char* key) {
    static const json kNull;
    return j.is_object() && j.contains(key) ? j[key] : kNull;
}

// CPU and node ids of the topology; the counts the per-CPU and per-node
// arrays of the rest of the document are held to.
void check_topology(const json& topo, Bounds& b, long& cpus, long& nodes) {
    const json& cs = at(topo, "cpus");
    b.array_at_most(cs, std::size_t(kMaxDocCpus), "topology.cpus", "CPUs Linux supports");
    if (cs.is_array() && cs.size() <= std::size_t(kMaxDocCpus))
        for (std::size_t i = 0; i < cs.size() && !b.full(); ++i) {
            const std::string w = fmt::format("topology.cpus[{}]", i);
            if (b.id(at(cs[i], "cpu"), kMaxDocCpus, w + ".cpu", "CPU id"))
                cpus = std::max(cpus, long(at(cs[i], "cpu").get<long long>()) + 1);
            if (b.id(at(cs[i], "node"), kMaxDocNodes, w + ".node", "node id"))
                nodes = std::max(nodes, long(at(cs[i], "node").get<long long>()) + 1);
        }
    const json& ns = at(topo, "nodes");
    b.array_at_most(ns, std::size_t(kMaxDocNodes), "topology.nodes", "nodes Linux supports");
    if (ns.is_array() && ns.size() <= std::size_t(kMaxDocNodes))
        for (std::size_t i = 0; i < ns.size() && !b.full(); ++i) {
            const std::string w = fmt::format("topology.nodes[{}]", i);
            if (b.id(at(ns[i], "node"), kMaxDocNodes, w + ".node", "node id"))
                nodes = std::max(nodes, long(at(ns[i], "node").get<long long>()) + 1);
            const json& members = at(ns[i], "cpus");
            b.array_at_most(members, std::size_t(kMaxDocCpus), w + ".cpus", "CPUs Linux supports");
        }
}

// One target's counters: per-CPU arrays no longer than the CPUs, the node
// matrix no larger than the nodes.
void check_target(const json& t, const std::string& where, long cpus, long nodes, Bounds& b) {
    for (const char* per_cpu : {"calls", "events"})
        b.array_at_most(at(t, per_cpu), std::size_t(cpus), where + "." + per_cpu, "CPUs of the topology");
    const json& m = at(at(t, "handoffs"), "node_matrix");
    b.array_at_most(m, std::size_t(nodes), where + ".handoffs.node_matrix", "nodes of the topology");
    if (m.is_array() && m.size() <= std::size_t(nodes))
        for (std::size_t r = 0; r < m.size() && !b.full(); ++r)
            b.array_at_most(m[r], std::size_t(nodes), fmt::format("{}.handoffs.node_matrix[{}]", where, r),
                            "nodes of the topology");
}

void check_targets(const json& targets, const std::string& where, long cpus, long nodes, Bounds& b) {
    if (!targets.is_array()) return;
    for (std::size_t j = 0; j < targets.size() && !b.full(); ++j)
        check_target(targets[j], fmt::format("{}.targets[{}]", where, j), cpus, nodes, b);
}

}  // namespace

std::vector<std::string> recording_bound_problems(const json& doc) {
    Bounds b;
    long cpus = 1, nodes = 1;
    check_topology(at(doc, "topology"), b, cpus, nodes);
    const json& ivs = at(doc, "intervals");
    if (ivs.is_array())
        for (std::size_t i = 0; i < ivs.size() && !b.full(); ++i)
            check_targets(at(ivs[i], "targets"), fmt::format("intervals[{}]", i), cpus, nodes, b);
    check_targets(at(at(doc, "totals"), "targets"), "totals", cpus, nodes, b);
    const json& hs = at(doc, "histograms");
    if (hs.is_object())
        for (auto& [target, h] : hs.items()) {
            if (b.full()) break;
            b.array_at_most(at(h, "buckets"), kMaxHistogramBuckets, "histograms." + printable(target) + ".buckets",
                            "log2 buckets a 64-bit nanosecond count has");
        }
    return b.problems;
}

}  // namespace hotline
