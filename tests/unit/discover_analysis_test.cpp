// SPDX-License-Identifier: Apache-2.0
// discover's rates from its counts: per second the programs were attached
// (a duty cycle detaches them part of the time), scaled from the sampled
// objects to all of them; the programs' cost per second of the recording;
// the duty cycle's default.
#include <gtest/gtest.h>

#include "discover_analysis.hpp"

using namespace hotline;

namespace {

class FakeDiscovery final : public Discovery {
public:
    FakeDiscovery(std::uint32_t sample, int duty, double watched) : sample_(sample), duty_(duty), watched_(watched) {
        slots_ = {{AttachKind::kTracepoint, "sched_waking", 0, "task_struct"},
                  {AttachKind::kTracepoint, "sched_switch", 2, "task_struct"}};
    }
    const std::vector<DiscoverSlot>& slots() const override { return slots_; }
    bool attached(std::size_t) const override { return true; }
    std::size_t attached_count() const override { return slots_.size(); }
    std::vector<DiscoverRefusal> refusals() const override { return {}; }
    std::size_t over_capacity() const override { return 0; }
    double attach_seconds() const override { return 0.01; }
    std::uint32_t sample() const override { return sample_; }
    int duty_percent() const override { return duty_; }
    double watched_seconds() const override { return watched_; }
    Result<DiscoverReading> read() const override { return DiscoverReading{}; }
    ProgCost total_cost() const override {
        ProgCost c;
        c.run_cnt = 4000;
        c.run_time_ns = 400000;
        return c;
    }

private:
    std::vector<DiscoverSlot> slots_;
    std::uint32_t sample_;
    int duty_;
    double watched_;
};

DiscoverReading reading() {
    DiscoverReading r;
    r.slots.resize(2);
    r.slots[0].touches = 600;
    r.slots[0].same_cpu = 500;
    r.slots[0].cross_cpu = 100;
    r.slots[1].touches = 400;
    r.slots[1].same_cpu = 380;
    r.slots[1].cross_cpu = 20;
    return r;
}

}  // namespace

TEST(DiscoverAnalysis, RatesArePerAttachedSecondAndCostPerRecordedSecond) {
    FakeDiscovery d(1, 50, 2.0);
    auto j = discover_analysis(d, reading(), {}, 4.0, 5);
    ASSERT_EQ(j["types"].size(), 1u);
    const auto& t = j["types"][0];
    // 1,000 touches and 120 handoffs in the 2 s attached of a 4-s recording.
    EXPECT_DOUBLE_EQ(t["touches_per_s"].get<double>(), 500.0);
    EXPECT_DOUBLE_EQ(t["handoffs_per_s"].get<double>(), 60.0);
    EXPECT_DOUBLE_EQ(t["attach_points"][0]["touches_per_s"].get<double>(), 300.0);
    // What the programs cost the machine is over the whole recording.
    EXPECT_DOUBLE_EQ(j["program_runs_per_s"].get<double>(), 1000.0);
    EXPECT_EQ(j["duty_cycle"]["percent"], 50);
    EXPECT_DOUBLE_EQ(j["duty_cycle"]["watched_s"].get<double>(), 2.0);
}

TEST(DiscoverAnalysis, SampledObjectsAreScaledToAll) {
    FakeDiscovery d(4, 100, 4.0);
    auto j = discover_analysis(d, reading(), {}, 4.0, 5);
    const auto& t = j["types"][0];
    EXPECT_DOUBLE_EQ(t["touches_per_s"].get<double>(), 1000.0);
    EXPECT_DOUBLE_EQ(t["cross_cpu_per_s"].get<double>(), 120.0);
}

TEST(DiscoverDuty, HalfForTracepointsThroughoutForFunctionsAndAskedWins) {
    DiscoverOptions o;
    EXPECT_EQ(discover_duty_percent(o), kDiscoverDutyPercent);
    // fentry is not attached again each window (a trampoline rebuild each time).
    o.functions = {"dst_release"};
    EXPECT_EQ(discover_duty_percent(o), 100);
    o.duty_percent = 25;
    EXPECT_EQ(discover_duty_percent(o), 25);
}
