// SPDX-License-Identifier: Apache-2.0
// discover-nodes: `hotline discover` under tcp-crr on both nodes and on one.
#include "vm_check.hpp"

namespace vmcheck {

namespace {

// The types of a discover section by cross-node handoffs per second, most first.
std::vector<std::pair<double, std::string>> by_cross_node(const json& doc) {
    std::vector<std::pair<double, std::string>> out;
    if (const json* types = at(doc, {"discover", "types"}))
        for (const auto& t : *types) out.push_back({t.value("cross_node_per_s", 0.0), t.value("type", "")});
    std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.first > b.first; });
    return out;
}

double cross_node_of(const std::vector<std::pair<double, std::string>>& ranked, const std::string& type) {
    for (auto& [v, t] : ranked)
        if (t == type) return v;
    return 0;
}

std::string top(const std::vector<std::pair<double, std::string>>& ranked, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < ranked.size() && i < n; ++i)
        out += fmt::format("{}{} {:.0f}/s", i ? ", " : "", ranked[i].second, ranked[i].first);
    return out;
}

}  // namespace

// `type` among the top 5 types of a run by cross-node handoffs, and in the
// run on one node (or with each CPU's own objects) under 1% of that rate: the
// workload's objects stay, and an object of the rest of the guest may still
// cross once (a socket at 0.25/s against 193/s across, in one run).
void expect_crosses(Checks& c, const json& across, const json& alone, const std::string& type, const std::string& how) {
    auto ranked = by_cross_node(across);
    std::size_t rank = std::size_t(
        std::find_if(ranked.begin(), ranked.end(), [&](auto& p) { return p.second == type; }) - ranked.begin());
    c.expect(rank < 5 && ranked[rank].first > 0,
             fmt::format("{}: {} among the top 5 types by cross-node handoffs", how, type), top(ranked, 6));
    auto local = by_cross_node(alone);
    const double stays = cross_node_of(local, type), crosses = cross_node_of(ranked, type);
    c.expect(stays <= 0.01 * crosses,
             fmt::format("without it, {} crosses nodes under 1% as often ({:.2f}/s against {:.1f}/s)", type, stays,
                         crosses),
             top(local, 6));
}

void check_discover_nodes(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "discover-nodes");
    if (!reported(c, r)) return;
    auto crr = load_json(c, r, "crr-across.json"), crr0 = load_json(c, r, "crr-node0.json");
    auto split = load_json(c, r, "split.json"), own = load_json(c, r, "own.json");
    if (!crr || !crr0 || !split || !own) return;
    expect_crosses(c, *crr, *crr0, "dst_entry", "tcp-crr on both nodes (fentry on dst_release)");
    expect_crosses(c, *crr, *crr0, "sock", "tcp-crr on both nodes, one listening socket");
    expect_crosses(c, *split, *own, "sock", "connections served on the other node (churn-split on CPUs 0 and 2)");
}

}  // namespace vmcheck
