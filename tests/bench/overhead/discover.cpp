// SPDX-License-Identifier: Apache-2.0
// The discover section: how long `hotline discover`'s default attach set takes
// to load and attach, what it attaches and what the kernel refuses.  What it
// costs a workload is the loss section's `discover` arm (--loss-arm discover).
#include "hotline/kernel/kernel.hpp"
#include "hotline/probe/discovery.hpp"
#include "overhead.hpp"

namespace overhead {

json discover_section(bool smoke, const Topology& topo) {
    fmt::print("\n== discover: the default attach set\n");
    auto btf = KernelBtf::load();
    if (!btf) {
        failed("discover: " + btf.error().message());
        return json::object();
    }
    std::vector<double> secs;
    // Only figures that measured something: no empty list, no zero count.
    json last;
    std::size_t refused_n = 0;
    for (int i = 0; i < (smoke ? 1 : 5); ++i) {
        auto d = Discovery::open(DiscoverOptions{}, *btf, topo);
        if (!d) {
            failed("discover: " + d.error().message());
            return json::object();
        }
        secs.push_back((*d)->attach_seconds());
        last = {{"attach_points", (*d)->attached_count()}};
        refused_n = (*d)->refusals().size();
        for (const auto& r : (*d)->refusals()) last["refused"].push_back({{"attach", r.attach}, {"reason", r.reason}});
        if ((*d)->over_capacity()) last["over_capacity"] = (*d)->over_capacity();
    }
    std::sort(secs.begin(), secs.end());
    const double median = secs[secs.size() / 2];
    fmt::print("{} attach points, attached in {:.3f} s (median of {}), {} refused\n", last["attach_points"].get<int>(),
               median, secs.size(), refused_n);
    check("discover: attach of the default set, s", median, 3.0);
    last["attach_seconds"] = {{"median", median}, {"all", secs}};
    return last;
}

}  // namespace overhead
