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

void check_discover_nodes(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "discover-nodes");
    if (!reported(c, r)) return;
    auto across = load_json(c, r, "across.json"), node0 = load_json(c, r, "node0.json");
    if (!across || !node0) return;
    auto ranked = by_cross_node(*across);
    for (const char* type : {"dst_entry", "sock"}) {
        std::size_t rank = std::size_t(std::find_if(ranked.begin(), ranked.end(), [&](auto& p) { return p.second == type; }) -
                                       ranked.begin());
        c.expect(rank < 5 && ranked[rank].first > 0,
                 fmt::format("across both nodes, {} is among the top 5 types by cross-node handoffs", type),
                 top(ranked, 6));
    }
    auto local = by_cross_node(*node0);
    for (const char* type : {"dst_entry", "sock"})
        c.expect(cross_node_of(local, type) == 0, fmt::format("on node 0 alone, {} has no cross-node handoff", type),
                 top(local, 6));
}

}  // namespace vmcheck
