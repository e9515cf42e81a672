// SPDX-License-Identifier: Apache-2.0
// Readers of the per-CPU counter maps into a Snapshot, in topology CPU order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attach.hpp"
#include "hotline/model/metrics.hpp"

namespace hotline {

class CounterReader {
public:
    CounterReader(const Topology& topo, int handoff_sample) : topo_(topo), handoff_sample_(handoff_sample) {}
    void set_kallsyms(const Kallsyms* ks) { ksyms_ = ks; }

    // The `hits` map every directly probed and proxy target counts into, per CPU index.
    Result<std::vector<hl_hits>> read_hits(int hits_fd) const;
    // Calls, events and latency of one attached target (handoffs too when tracked).
    Status read_target(const Attached& a, const std::vector<hl_hits>& hits, const TargetPlan* tp, Snapshot& s) const;
    // The workqueue attribution programs' counters and work functions.
    Status read_workq(const LoadedObject& workq, Snapshot& s) const;
    // The sampling program's counters; one TargetCounters per sampled target.
    Status read_sampling(const LoadedObject& sampling, const std::vector<SampledTarget>& sampled, Snapshot& s) const;

private:
    Status read_work_funcs(const LoadedObject& workq, WorkqCounters& w) const;
    Status read_handoffs(const Attached& a, TargetCounters& c, std::vector<HotObject>& objects) const;
    void scan_owners(const Attached& a, std::uint32_t capacity, std::vector<HotObject>& objects,
                     std::uint64_t* live) const;
    // Stable per-session id of an object address; the address itself is never shown.
    std::uint64_t object_id(const std::string& target, std::uint64_t addr) const;
    int ncpu() const;
    std::size_t width() const { return std::size_t(topo_.max_cpu() + 1); }
    // The CPU number of per-CPU value `idx`, or -1 when outside the report's width.
    int cpu_of(int idx) const;

    const Topology& topo_;
    int handoff_sample_;
    const Kallsyms* ksyms_ = nullptr;
    mutable std::map<std::pair<std::string, std::uint64_t>, std::uint64_t> ids_;
    mutable std::uint64_t next_id_ = 1;
};

// A read-only shared mapping of an mmapable array map, unmapped with the last owner.
Result<std::shared_ptr<const void>> map_view(bpf_map* m);

// Run statistics of one program as a cost row of the snapshot.
ProgCost prog_cost(const bpf_object* obj, const std::string& target, const std::string& program);

}  // namespace hotline
