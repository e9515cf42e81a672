// SPDX-License-Identifier: Apache-2.0
// Discovery's state, shared by its attach side (discovery.cpp) and its read
// side (discovery_read.cpp).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "hotline/probe/bpf_skeleton.hpp"
#include "hotline/probe/discovery.hpp"
#include "attach_windows.hpp"
#include "hotline/probe/run_stats_window.hpp"
#include "discover.skel.h"

namespace hotline {

class DiscoveryImpl final : public Discovery {
public:
    DiscoveryImpl(DiscoverOptions opts, const Topology& topo) : opts_(std::move(opts)), topo_(topo), sample_(opts_.sample) {}

    const std::vector<DiscoverSlot>& slots() const override { return slots_; }
    bool attached(std::size_t slot) const override { return slot < live_.size() && live_[slot]; }
    std::size_t attached_count() const override { return programs_.size(); }
    std::vector<DiscoverRefusal> refusals() const override;
    std::size_t over_capacity() const override { return over_; }
    double attach_seconds() const override { return attach_seconds_; }
    std::uint32_t sample() const override { return sample_; }
    int duty_percent() const override { return discover_duty_percent(opts_); }
    double watched_seconds() const override { return windows_ ? windows_->watched_seconds() : 0.0; }
    Result<DiscoverReading> read() const override;
    ProgCost total_cost() const override;

    Status choose(const std::vector<TypedAttachPoint>& points);
    Status open_programs();

private:
    Result<std::unique_ptr<LoadedObject>> load_once(bool* retry);
    Status attach();
    Status start_reading();
    Status read_counts(DiscoverReading& r) const;
    std::size_t node_of_value(int idx) const;
    Status read_pairs(DiscoverReading& r) const;
    Status scan_owners(DiscoverReading& r) const;
    std::vector<ProgCost> costs() const;

    const DiscoverOptions opts_;
    const Topology& topo_;
    const std::uint32_t sample_;
    std::vector<DiscoverSlot> slots_;
    std::vector<bool> live_;
    std::vector<std::string> type_names_;  // a slot's type index (hl_disc_type) into this
    std::vector<DiscoverRefusal> refusals_;
    std::size_t over_ = 0;
    double attach_seconds_ = 0;
    std::unique_ptr<LoadedObject> obj_;
    std::vector<bpf_program*> programs_;
    // After obj_, which owns the links: its thread stops before they go.
    std::unique_ptr<AttachWindows> windows_;
    std::shared_ptr<const void> owners_view_;
    std::unique_ptr<RunStatsWindow::Member> stats_;
    mutable std::optional<RunCostScaler> scaler_;
    // Object ids per (type, address): stable across reads, the address never shown.
    mutable std::map<std::pair<std::uint16_t, std::uint64_t>, std::uint64_t> ids_;
    mutable std::vector<std::uint64_t> next_id_;
};

}  // namespace hotline
