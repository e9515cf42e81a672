// SPDX-License-Identifier: Apache-2.0
// Handoff tracking in windows (SessionOptions::track_percent): the calls are
// counted throughout, the handoffs in the windows, and every figure made of
// them is scaled by the windows' share of the calls.
#include <gtest/gtest.h>

#include <sstream>

#include "hotline/model/contention.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/model/topology.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/report/output.hpp"
#include "hotline/session/tracing.hpp"
#include "snapshot_fixtures.hpp"

using namespace hotline;

namespace {

// Two CPUs, everything on CPU 1: `calls` calls, `windowed` of them while
// tracking was on, `handoffs` cross-CPU handoffs counted then.
Snapshot at(double t, double tracking_s, int track, std::uint64_t calls, std::uint64_t windowed,
            std::uint64_t handoffs) {
    Snapshot s;
    s.t = t;
    s.attached_s = t;
    s.tracking_s = tracking_s;
    s.track_percent = track;
    TargetCounters c = test::on_cpu1("dst_release", Fidelity::kPartial, calls, windowed, handoffs);
    c.object_type = "dst_entry";
    c.handoffs.windowed = {0, windowed};
    s.targets.push_back(c);
    return s;
}

Topology two_cpus() {
    Topology t;
    t.cpus = {0, 1};
    t.nodes = {0};
    t.cpu_node = {{0, 0}, {1, 0}};
    return t;
}

}  // namespace

// 8 s, tracking on 2 of them: 10,000 calls, 2,000 of them in the windows (the
// traffic was not even), 900 handoffs counted there: 0.45 a call, 4,500 in all.
TEST(TrackWindows, HandoffsAreScaledByTheWindowsShareOfTheCalls) {
    const Interval iv = delta(at(100, 10, 25, 0, 0, 0), at(108, 12, 25, 10000, 2000, 900));
    EXPECT_DOUBLE_EQ(iv.tracking_seconds(), 2);
    EXPECT_DOUBLE_EQ(iv.watched_seconds(), 8);
    EXPECT_DOUBLE_EQ(iv.handoff_scale(iv.d.targets[0]), 5);
    TrialMetrics m = trial_metrics(iv, {.ops = 5000, .seconds = 8, .cpu_seconds = 1, .extra = {}});
    EXPECT_DOUBLE_EQ(m.at("handoff.dst_release.cross_cpu_per_op"), 0.9);
    EXPECT_DOUBLE_EQ(m.at("handoff.dst_release.tracked_per_s"), 1000);
    EXPECT_DOUBLE_EQ(m.at("handoff.dst_release.cross_cpu_share"), 0.45);
    EXPECT_DOUBLE_EQ(m.at("proxy.dst_release.per_op"), 2);
}

// One object in 2 tracked besides: both parts multiply.
TEST(TrackWindows, TheObjectSampleMultipliesTheWindowsScale) {
    Snapshot later = at(108, 12, 25, 10000, 2000, 900);
    later.targets[0].handoffs.sample = 2;
    const Interval iv = delta(at(100, 10, 25, 0, 0, 0), later);
    EXPECT_DOUBLE_EQ(iv.handoff_scale(iv.d.targets[0]), 10);
}

// Tracking throughout: the handoffs stand for themselves, whatever the
// windowed count says (it is read a moment apart from the calls).
TEST(TrackWindows, TrackingThroughoutIsNotScaled) {
    const Interval iv = delta(at(100, 100, 100, 0, 0, 0), at(108, 108, 100, 10000, 9990, 900));
    EXPECT_DOUBLE_EQ(iv.handoff_scale(iv.d.targets[0]), 1);
    EXPECT_DOUBLE_EQ(iv.tracking_seconds(), 8);
    const Interval none = delta(at(100, 10, 25, 0, 0, 0), at(108, 12, 25, 10000, 0, 0));
    EXPECT_DOUBLE_EQ(none.handoff_scale(none.d.targets[0]), 1) << "no call in a window: nothing to scale";
}

// A fix's trial arms compare handoffs per operation on the same footing.
TEST(TrackWindows, TrialContentionIsScaled) {
    const Interval iv = delta(at(100, 10, 25, 0, 0, 0), at(108, 12, 25, 10000, 2000, 900));
    std::vector<ObjectContention> c;
    add_trial_contention(c, Arm::kBaseline, iv, 5000);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_DOUBLE_EQ(c[0].baseline.total(), 4500);
}

// The report says the handoffs were tracked in windows; per call is over the
// windows' calls, rates per tracked second.
TEST(TrackWindows, TheReportSaysSoAndCountsPerCallOverTheWindows) {
    const Interval iv = delta(at(100, 10, 25, 0, 0, 0), at(108, 12, 25, 10000, 2000, 900));
    std::ostringstream os;
    render_handoffs_text(os, iv, two_cpus(), false);
    EXPECT_NE(os.str().find("tracked 25% of the time: 2.0 s"), std::string::npos) << os.str();
    EXPECT_NE(os.str().find("handoffs/s 450.0"), std::string::npos) << os.str();
    EXPECT_NE(os.str().find("handoffs per call 0.450"), std::string::npos) << os.str();
}

// A recording says which share of each interval its handoff counts cover, so
// that a reader (the HTML page, a script) can tell windows from the whole time.
TEST(TrackWindows, TheRecordingSaysTheShareAndTheTrackedSeconds) {
    const nlohmann::json j = to_json(delta(at(100, 10, 25, 0, 0, 0), at(108, 12, 25, 10000, 2000, 900)));
    EXPECT_EQ(j["tracking"]["percent"], 25);
    EXPECT_DOUBLE_EQ(j["tracking"]["seconds"].get<double>(), 2);
    const nlohmann::json all = to_json(delta(at(100, 100, 100, 0, 0, 0), at(108, 108, 100, 1, 1, 0)));
    EXPECT_EQ(all["tracking"]["percent"], 100);
    EXPECT_DOUBLE_EQ(all["tracking"]["seconds"].get<double>(), 8);
}

TEST(TrackWindows, TheIntervalAndTheMergeCarryTheTrackingTime) {
    const Interval iv = delta(at(100, 10, 25, 0, 0, 0), at(108, 12, 25, 1, 1, 0));
    EXPECT_DOUBLE_EQ(iv.d.tracking_s, 2);
    EXPECT_EQ(iv.d.track_percent, 25);
    Snapshot merged;
    merge_session(merged, at(108, 12, 25, 1, 1, 0));
    merge_session(merged, at(108, 30, 100, 1, 1, 0));
    EXPECT_DOUBLE_EQ(merged.tracking_s, 12);
    EXPECT_EQ(merged.track_percent, 25);
}

TEST(TrackWindows, BadSharesAreRefusedByName) {
    SessionOptions o;
    o.track_percent = 0;
    EXPECT_FALSE(check_session_options(o));
    o.track_percent = 101;
    EXPECT_FALSE(check_session_options(o));
    o.track_percent = 25;
    EXPECT_TRUE(check_session_options(o));
    o.duty_percent = 10;
    auto both = check_session_options(o);
    ASSERT_FALSE(both);
    EXPECT_NE(both.error().message().find("tracking windows within attach windows"), std::string::npos);
    TracingOptions t;
    t.handoff_share = 0;
    auto r = check_tracing_options(t);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("--handoff-share 0"), std::string::npos) << r.error().message();
}

TEST(TrackWindows, RecordsDefaultReachesTheSession) {
    TracingOptions t;
    t.handoff_share = kRecordHandoffShare;
    auto r = check_tracing_options(t);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->session.track_percent, kRecordHandoffShare);
}

// An interval between two windows has calls and no handoff counts: it says
// nothing about handoffs, rather than zero of them.
TEST(TrackWindows, AnIntervalBetweenWindowsHasNoHandoffFigures) {
    const Interval iv = delta(at(100, 10, 25, 0, 0, 0), at(101, 10, 25, 1000, 0, 0));
    EXPECT_FALSE(iv.handoffs_tracked(iv.d.targets[0]));
    TrialMetrics m = trial_metrics(iv, {.ops = 500, .seconds = 1, .cpu_seconds = 1, .extra = {}});
    EXPECT_FALSE(m.contains("handoff.dst_release.cross_cpu_per_op"));
    EXPECT_TRUE(m.contains("proxy.dst_release.per_op"));
    std::vector<ObjectContention> c;
    add_trial_contention(c, Arm::kBaseline, iv, 500);
    EXPECT_TRUE(c.empty());
    std::ostringstream os;
    render_handoffs_text(os, iv, two_cpus(), false);
    EXPECT_NE(os.str().find("not tracked in this interval"), std::string::npos) << os.str();
    const Interval throughout = delta(at(100, 100, 100, 0, 0, 0), at(101, 101, 100, 1000, 0, 0));
    EXPECT_TRUE(throughout.handoffs_tracked(throughout.d.targets[0]));
}
