// SPDX-License-Identifier: Apache-2.0
// A validation's contention per arm (contention.hpp): each trial's handoffs
// added to its arm, per CPU and per node pair, scaled by the sampling rate.
#include <gtest/gtest.h>

#include "hotline/model/contention.hpp"
#include "hotline/model/verdict.hpp"

using namespace hotline;

namespace {

Interval interval(std::vector<std::uint64_t> cross_cpu, std::vector<std::uint64_t> cross_node,
                  std::vector<std::vector<std::uint64_t>> matrix, int sample = 1) {
    Interval iv;
    TargetCounters untracked;
    untracked.target = "tcp_prequeue";
    TargetCounters t;
    t.target = "dst_release";
    t.object_type = "dst_entry";
    t.has_handoffs = true;
    t.handoffs.cross_cpu = std::move(cross_cpu);
    t.handoffs.cross_node = std::move(cross_node);
    t.handoffs.matrix = std::move(matrix);
    t.handoffs.sample = sample;
    iv.d.targets = {untracked, t};
    return iv;
}

}  // namespace

TEST(Contention, EachArmSumsItsTrialsPerCpuAndNodePair) {
    std::vector<ObjectContention> c;
    add_trial_contention(c, Arm::kBaseline, interval({1, 2}, {10, 20}, {{3, 10}, {20, 0}}), 100);
    add_trial_contention(c, Arm::kCandidate, interval({0, 1}, {0, 0}, {{1, 0}, {0, 0}}), 90);
    add_trial_contention(c, Arm::kBaseline, interval({4, 5}, {0, 1}, {{9, 1}, {0, 0}}), 110);
    ASSERT_EQ(c.size(), 1u) << "the untracked target has no entry";
    EXPECT_EQ(c[0].target, "dst_release");
    EXPECT_EQ(c[0].object_type, "dst_entry");
    const ArmHandoffs& b = c[0].baseline;
    EXPECT_EQ(b.trials, 2);
    EXPECT_DOUBLE_EQ(b.ops, 210);
    EXPECT_EQ(b.by_cpu, (std::vector<double>{15, 28})) << "cross-CPU and cross-node, both trials";
    EXPECT_EQ(b.by_node, (std::vector<std::vector<double>>{{12, 11}, {20, 0}}));
    EXPECT_DOUBLE_EQ(b.total(), 43);
    EXPECT_EQ(c[0].fix.trials, 1);
    EXPECT_DOUBLE_EQ(c[0].fix.total(), 1);
    EXPECT_DOUBLE_EQ(c[0].arm(Arm::kCandidate).ops, 90);
}

TEST(Contention, SampledCountsAreScaledToEveryObject) {
    std::vector<ObjectContention> c;
    add_trial_contention(c, Arm::kBaseline, interval({1, 2}, {0, 3}, {{6}}, 8), 10);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].sample, 8);
    EXPECT_EQ(c[0].baseline.by_cpu, (std::vector<double>{8, 40}));
    EXPECT_EQ(c[0].baseline.by_node, (std::vector<std::vector<double>>{{48}}));
}
