// SPDX-License-Identifier: Apache-2.0
#include "hotline/model/topology.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "hotline/base/util.hpp"

namespace hotline {

namespace {

// Each CPU once, ascending.  Built from the merged ranges, so a list that
// repeats a large range many times costs its length, not ranges x CPUs.
std::vector<int> cpus_of(std::vector<std::pair<int, int>> ranges) {
    std::sort(ranges.begin(), ranges.end());
    std::vector<int> out;
    int next = 0;  // lowest CPU not yet listed
    for (auto [a, b] : ranges) {
        for (int c = std::max(a, next); c <= b; ++c) out.push_back(c);
        next = std::max(next, b + 1);
    }
    return out;
}

}  // namespace

Result<std::vector<int>> parse_cpulist(std::string_view text) {
    std::string t(trim(text));
    if (t.empty()) return std::vector<int>{};
    std::vector<std::pair<int, int>> ranges;
    std::string_view s = t;
    while (!s.empty()) {
        auto comma = s.find(',');
        std::string_view part = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
        auto dash = part.find('-');
        int a = 0, b = 0;
        auto parse = [](std::string_view p, int& v) {
            auto r = std::from_chars(p.data(), p.data() + p.size(), v);
            return r.ec == std::errc{} && r.ptr == p.data() + p.size() && v >= 0;
        };
        bool ok = dash == std::string_view::npos
                      ? parse(part, a) && (b = a, true)
                      : parse(part.substr(0, dash), a) && parse(part.substr(dash + 1), b);
        if (!ok || b < a || b > 65535)
            return make_error("bad CPU list \"" + t + "\" near \"" + std::string(part) + "\"",
                              EINVAL, "expected e.g. 0-3,8,10-11");
        ranges.emplace_back(a, b);
    }
    return cpus_of(std::move(ranges));
}

std::string format_cpulist(const std::vector<int>& cpus) {
    std::ostringstream os;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (i) os << ',';
        os << cpus[i];
        if (j > i) os << '-' << cpus[j];
        i = j + 1;
    }
    return os.str();
}

int Topology::node_of(int cpu) const {
    auto it = cpu_node.find(cpu);
    return it == cpu_node.end() ? 0 : it->second;
}

std::vector<int> Topology::cpus_of(int node) const {
    std::vector<int> out;
    for (auto [c, n] : cpu_node)
        if (n == node) out.push_back(c);
    return out;
}

}  // namespace hotline
