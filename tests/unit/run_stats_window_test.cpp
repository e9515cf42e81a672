// SPDX-License-Identifier: Apache-2.0
// Estimating every run of a session's programs from the runs timed in a window
// of each second (RunCostScaler); the window itself is in the host tier.
#include <gtest/gtest.h>

#include "hotline/probe/run_stats_window.hpp"

using namespace hotline;

namespace {

constexpr std::uint64_t kSecond = 1'000'000'000;

// The kernel's cumulative counts of one program.
std::vector<ProgCost> kernel(std::uint64_t runs, std::uint64_t ns) {
    ProgCost c;
    c.target = "dst_release";
    c.program = "hl_tp_kfree_skb";
    c.run_cnt = runs;
    c.run_time_ns = ns;
    return {c};
}

}  // namespace

TEST(RunCostScaler, ScalesTimedRunsByTheShareOfTimeTimed) {
    RunCostScaler s(0, 0);
    auto c = kernel(100, 20'000);  // 100 runs timed in 0.1 s of 1 s
    s.scale(c, kSecond / 10, kSecond);
    EXPECT_EQ(c[0].run_cnt, 1000u);
    EXPECT_EQ(c[0].run_time_ns, 200'000u);
    EXPECT_EQ(c[0].timed_runs, 100u);
    EXPECT_DOUBLE_EQ(c[0].ns_per_run(), 200.0);  // the timed runs' mean, unchanged
}

TEST(RunCostScaler, EachStretchIsScaledByItsOwnShare) {
    RunCostScaler s(0, 0);
    auto c = kernel(100, 10'000);
    s.scale(c, kSecond / 10, kSecond);  // 10% timed: 1000 runs
    c = kernel(300, 30'000);            // 200 more in a second timed throughout
    s.scale(c, kSecond / 10 + kSecond, 2 * kSecond);
    EXPECT_EQ(c[0].run_cnt, 1200u);
    EXPECT_EQ(c[0].run_time_ns, 120'000u);
    EXPECT_EQ(c[0].timed_runs, 300u);
}

TEST(RunCostScaler, AReadWithNothingTimedJoinsTheNextStretch) {
    RunCostScaler s(0, 0);
    auto c = kernel(50, 5'000);
    s.scale(c, kSecond / 10, kSecond / 2);  // 0.1 s of 0.5 s: 250 runs
    EXPECT_EQ(c[0].run_cnt, 250u);
    c = kernel(52, 5'200);  // two runs in flight when the window closed
    s.scale(c, kSecond / 10, kSecond);
    EXPECT_EQ(c[0].run_cnt, 250u) << "no timed time since the last read: the estimate stands";
    EXPECT_EQ(c[0].timed_runs, 52u);
    c = kernel(102, 10'200);  // the next window: 0.1 s timed of the 1 s since the last stretch
    s.scale(c, 2 * kSecond / 10, kSecond + kSecond / 2);
    EXPECT_EQ(c[0].run_cnt, 250u + 520u);
    EXPECT_EQ(c[0].run_time_ns, 25'000u + 52'000u);
}

TEST(RunCostScaler, TimedThroughoutLeavesTheKernelsCounts) {
    RunCostScaler s(0, 0);
    auto c = kernel(777, 77'700);
    // Timed time a little above the stretch (two clocks read apart): no scaling down.
    s.scale(c, kSecond + 5, kSecond);
    EXPECT_EQ(c[0].run_cnt, 777u);
    EXPECT_EQ(c[0].run_time_ns, 77'700u);
}

TEST(RunCostScaler, ProgramsAreScaledApart) {
    RunCostScaler s(0, 0);
    auto c = kernel(10, 1'000);
    ProgCost other = c[0];
    other.program = "hl_sample";
    other.run_cnt = 4;
    other.run_time_ns = 4'000;
    c.push_back(other);
    s.scale(c, kSecond / 4, kSecond);
    EXPECT_EQ(c[0].run_cnt, 40u);
    EXPECT_EQ(c[1].run_cnt, 16u);
    EXPECT_EQ(c[1].run_time_ns, 16'000u);
}

// A window at a fixed point of the period would time the same part of every
// session that starts the window (its start-up); each period draws its own.
TEST(RunStatsTiming, TheWindowFallsAnywhereInItsPeriod) {
    const RunStatsTiming timing;
    std::minstd_rand rng(20261203);
    std::int64_t lo = timing.period.count(), hi = 0, sum = 0;
    constexpr int kPeriods = 2000;
    for (int i = 0; i < kPeriods; ++i) {
        const std::int64_t at = timing.offset(rng).count();
        ASSERT_GE(at, 0);
        ASSERT_LE(at + timing.on.count(), timing.period.count()) << "the window must end within its period";
        lo = std::min(lo, at);
        hi = std::max(hi, at);
        sum += at;
    }
    const double span = double((timing.period - timing.on).count());
    EXPECT_LT(double(lo), 0.02 * span);
    EXPECT_GT(double(hi), 0.98 * span);
    EXPECT_NEAR(double(sum) / kPeriods / span, 0.5, 0.03) << "uniform over the period";
}
