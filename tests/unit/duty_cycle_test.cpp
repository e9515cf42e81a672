// SPDX-License-Identifier: Apache-2.0
// A session attached in windows (SessionOptions::duty_percent): its counters
// cover the attached time, and what is made of them says so.
#include <gtest/gtest.h>

#include "hotline/model/metrics.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/probe/session.hpp"
#include "snapshot_fixtures.hpp"

using namespace hotline;

namespace {

// Two CPUs; `calls` hits and `handoffs` cross-CPU handoffs on CPU 1.
Snapshot at(double t, double attached_s, int duty, std::uint64_t calls, std::uint64_t handoffs) {
    Snapshot s;
    s.t = t;
    s.attached_s = attached_s;
    s.duty_percent = duty;
    s.targets.push_back(test::on_cpu1("queue_work_on", Fidelity::kExact, calls, calls, handoffs));
    return s;
}

}  // namespace

// 8 s of a scenario, the programs attached 2 of them (25%): 1,000 calls and 100
// handoffs counted while attached, 4,000 operations made in all.
TEST(DutyCycle, RatesArePerAttachedSecondAndPerOpOverTheAttachedOperations) {
    const Interval iv = delta(at(100, 10, 25, 0, 0), at(108, 12, 25, 1000, 100));
    EXPECT_DOUBLE_EQ(iv.seconds(), 8);
    EXPECT_DOUBLE_EQ(iv.watched_seconds(), 2);
    TrialMetrics m = trial_metrics(iv, {.ops = 4000, .seconds = 8, .cpu_seconds = 1, .extra = {}});
    EXPECT_DOUBLE_EQ(m.at("calls.queue_work_on.per_s"), 500);
    EXPECT_DOUBLE_EQ(m.at("calls.queue_work_on.per_op"), 1.0);
    EXPECT_DOUBLE_EQ(m.at("handoff.queue_work_on.cross_cpu_per_op"), 0.1);
    EXPECT_DOUBLE_EQ(m.at("handoff.queue_work_on.tracked_per_s"), 500);
    EXPECT_DOUBLE_EQ(m.at("handoff.queue_work_on.cross_cpu_share"), 0.1);
    EXPECT_DOUBLE_EQ(m.at("scenario.ops_per_s"), 500);
}

// Attached throughout, the interval is the time base, whatever attached_s says.
TEST(DutyCycle, ASessionAttachedThroughoutUsesItsInterval) {
    const Interval iv = delta(at(100, 0, 100, 0, 0), at(108, 0, 100, 1000, 100));
    EXPECT_DOUBLE_EQ(iv.watched_seconds(), 8);
    TrialMetrics m = trial_metrics(iv, {.ops = 4000, .seconds = 8, .cpu_seconds = 1, .extra = {}});
    EXPECT_DOUBLE_EQ(m.at("calls.queue_work_on.per_s"), 125);
    EXPECT_DOUBLE_EQ(m.at("calls.queue_work_on.per_op"), 0.25);
}

// The daemon's sessions run their windows in step: the first one's attached
// time and duty stand for the merged snapshot.
TEST(DutyCycle, MergedSessionsTakeTheFirstOnesAttachedTime) {
    Snapshot merged;
    merge_session(merged, at(100, 25, 25, 10, 1));
    merge_session(merged, at(100, 24.9, 25, 20, 2));
    EXPECT_DOUBLE_EQ(merged.attached_s, 25);
    EXPECT_EQ(merged.duty_percent, 25);
    EXPECT_EQ(merged.targets.size(), 2u);
}

TEST(DutyCycle, ASessionRefusesADutyOutsideOneToAHundred) {
    for (int bad : {0, -5, 101}) {
        SessionOptions o;
        o.duty_percent = bad;
        auto st = check_session_options(o);
        ASSERT_FALSE(st) << bad;
        EXPECT_NE(st.error().message().find("duty cycle"), std::string::npos) << st.error().message();
    }
    SessionOptions o;
    o.duty_percent = 1;
    EXPECT_TRUE(check_session_options(o));
}
