// SPDX-License-Identifier: Apache-2.0
#include "discover_analysis.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace hotline {

namespace {

struct TypeTotals {
    std::string type;
    DiscoverSlotCounts c;
    std::vector<std::size_t> slots;
    std::uint64_t handoffs() const { return c.cross_cpu + c.cross_node; }
};

void add_matrix(std::vector<std::vector<std::uint64_t>>& sum, const std::vector<std::vector<std::uint64_t>>& m) {
    if (sum.empty()) sum.assign(m.size(), std::vector<std::uint64_t>(m.size(), 0));
    for (std::size_t i = 0; i < m.size() && i < sum.size(); ++i)
        for (std::size_t j = 0; j < m[i].size() && j < sum[i].size(); ++j) sum[i][j] += m[i][j];
}

std::vector<TypeTotals> per_type(const Discovery& d, const DiscoverReading& r) {
    std::vector<TypeTotals> types;
    for (std::size_t i = 0; i < d.slots().size() && i < r.slots.size(); ++i) {
        const auto& s = d.slots()[i];
        auto it = std::find_if(types.begin(), types.end(), [&](auto& t) { return t.type == s.type; });
        if (it == types.end()) it = types.insert(types.end(), TypeTotals{s.type, {}, {}});
        const auto& c = r.slots[i];
        it->c.touches += c.touches;
        it->c.same_cpu += c.same_cpu;
        it->c.cross_cpu += c.cross_cpu;
        it->c.cross_node += c.cross_node;
        it->c.new_objects += c.new_objects;
        it->c.evicted += c.evicted;
        add_matrix(it->c.node_matrix, c.node_matrix);
        if (d.attached(i)) it->slots.push_back(i);
    }
    std::stable_sort(types.begin(), types.end(), [](auto& a, auto& b) { return a.handoffs() > b.handoffs(); });
    return types;
}

// Per second, scaled from the sampled objects to all of them.
double rate(std::uint64_t n, std::uint32_t sample, double seconds) {
    return seconds > 0 ? double(n) * sample / seconds : 0.0;
}

nlohmann::json scaled(const std::vector<std::vector<std::uint64_t>>& m, std::uint32_t sample) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& row : m) {
        nlohmann::json r = nlohmann::json::array();
        for (auto v : row) r.push_back(v * sample);
        out.push_back(std::move(r));
    }
    return out;
}

nlohmann::json attach_points_json(const Discovery& d, const DiscoverReading& r, const TypeTotals& t, double seconds) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i : t.slots) {
        const auto& c = r.slots[i];
        if (!c.touches) continue;
        out.push_back({{"attach", d.slots()[i].label()},
                       {"touches_per_s", rate(c.touches, d.sample(), seconds)},
                       {"handoffs_in_per_s", rate(c.cross_cpu + c.cross_node, d.sample(), seconds)}});
    }
    return out;
}

nlohmann::json pairs_json(const Discovery& d, const DiscoverReading& r, const TypeTotals& t, std::size_t top) {
    nlohmann::json out = nlohmann::json::array();
    std::set<std::size_t> mine(t.slots.begin(), t.slots.end());
    for (const auto& p : r.pairs) {
        if (!mine.count(p.to) || out.size() >= top) continue;
        out.push_back({{"from", d.slots()[p.from].label()}, {"to", d.slots()[p.to].label()},
                       {"handoffs", p.handoffs * d.sample()}});
    }
    return out;
}

nlohmann::json objects_json(const Discovery& d, const DiscoverReading& r, const std::string& type, std::size_t top) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& o : r.objects) {
        if (o.type != type || out.size() >= top) continue;
        out.push_back({{"object", fmt::format("{}#{}", o.type, o.id)}, {"handoffs", o.handoffs},
                       {"cross_node", o.cross_node}, {"last_touched_by", d.slots()[o.last_slot].label()}});
    }
    return out;
}

nlohmann::json type_json(const Discovery& d, const DiscoverReading& r, const TypeTotals& t, double seconds,
                         std::size_t top) {
    const std::uint32_t n = d.sample();
    return {{"type", t.type},
            {"touches_per_s", rate(t.c.touches, n, seconds)},
            {"same_cpu_per_s", rate(t.c.same_cpu, n, seconds)},
            {"cross_cpu_per_s", rate(t.c.cross_cpu, n, seconds)},
            {"cross_node_per_s", rate(t.c.cross_node, n, seconds)},
            {"handoffs_per_s", rate(t.handoffs(), n, seconds)},
            {"objects", t.c.new_objects * n},
            {"node_matrix", scaled(t.c.node_matrix, n)},
            {"evicted", t.c.evicted * n},
            {"attach_points", attach_points_json(d, r, t, seconds)},
            {"single_attach_point", t.slots.size() == 1},
            {"handed_over", pairs_json(d, r, t, top)},
            {"hottest", objects_json(d, r, t.type, top)}};
}

nlohmann::json duty_json(const Discovery& d) {
    return {{"percent", d.duty_percent()},
            {"period_s", std::chrono::duration<double>(kDiscoverDutyPeriod).count()},
            {"watched_s", d.watched_seconds()}};
}

nlohmann::json setup_json(const Discovery& d, double seconds) {
    nlohmann::json refused = nlohmann::json::array();
    for (const auto& f : d.refusals()) refused.push_back({{"attach", f.attach}, {"reason", f.reason}});
    ProgCost cost = d.total_cost();
    return {{"touch", kTouchMeaning},
            {"sample", d.sample()},
            {"duty_cycle", duty_json(d)},
            {"attach_points", d.attached_count()},
            {"attach_seconds", d.attach_seconds()},
            {"refused", refused},
            {"over_capacity", d.over_capacity()},
            {"program_runs_per_s", seconds > 0 ? double(cost.run_cnt) / seconds : 0.0},
            {"program_cpu_percent", seconds > 0 ? double(cost.run_time_ns) / 1e9 / seconds * 100 : 0.0},
            {"program_ns_per_run", cost.run_cnt ? double(cost.run_time_ns) / double(cost.run_cnt) : 0.0}};
}

}  // namespace

nlohmann::json discover_analysis(const Discovery& d, const DiscoverReading& r,
                                 const std::map<std::string, nlohmann::json>& layouts, double seconds,
                                 std::size_t top) {
    nlohmann::json out = setup_json(d, seconds);
    // Counts are from the windows the programs were attached in.
    const double watched = d.watched_seconds();
    nlohmann::json types = nlohmann::json::array();
    for (const auto& t : per_type(d, r)) {
        if (!t.c.touches) continue;
        nlohmann::json j = type_json(d, r, t, watched, top);
        auto l = layouts.find(t.type);
        if (types.size() < top && t.handoffs() && l != layouts.end()) j["layout"] = l->second;
        types.push_back(std::move(j));
    }
    out["types"] = std::move(types);
    out["live_objects"] = r.live_objects * d.sample();
    return out;
}

}  // namespace hotline
