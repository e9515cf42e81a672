// SPDX-License-Identifier: Apache-2.0
// A session attached in windows (serve's default, SessionOptions::duty_percent)
// beside one attached throughout, on one workload: the windowed one is attached
// its share of the time, sees that share of the calls, and keeps the handoffs
// per call of the whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "hotline/daemon/serve.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/workload/workload.hpp"

using namespace hotline;

namespace {

// The pty's work items (flush_to_ldisc; the machine's own terminals have
// theirs): queued, and handed over.  Other work queued meanwhile is left out:
// on a busy machine it comes in bursts, which a tenth of the time samples unevenly.
double flush_queued(const Interval& iv) {
    auto it = iv.d.workq.funcs.find("flush_to_ldisc");
    return it == iv.d.workq.funcs.end() ? 0 : double(it->second);
}

double flush_handoffs(const Interval& iv) {
    double n = 0;
    for (const auto& o : iv.d.objects)
        if (o.detail == "flush_to_ldisc") n += double(o.handoffs);
    return n;
}

// Queue-to-execute times of at least 2^29 ns (0.54 s): none of the pty's work
// waits that long; a queue seen before a window off paired with an execute
// seen after it would (the off time is 1.5 s).
std::uint64_t waits_over_half_a_second(const Interval& iv) {
    std::uint64_t n = 0;
    for (std::size_t slot = 29; slot < iv.d.workq.hist.size(); ++slot) n += iv.d.workq.hist[slot];
    return n;
}

}  // namespace

TEST(DutyCycleHost, ServesDefaultIsAttachedItsShareAndKeepsHandoffsPerCall) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    auto topo = read_topology();
    ASSERT_TRUE(topo) << topo.error().message();
    if (topo->cpus.size() < 2) GTEST_FAIL() << "needs 2 CPUs";
    SessionOptions throughout;
    throughout.targets = {"queue_work_on"};
    throughout.latency = false;
    SessionOptions windowed = throughout;
    windowed.duty_percent = daemon::kDefaultDutyPercent;
    auto full = Session::open(throughout, probe_kernel(), *topo);
    ASSERT_TRUE(full) << full.error().message();
    auto part = Session::open(windowed, probe_kernel(), *topo);
    ASSERT_TRUE(part) << part.error().message();
    // The flush work item of a pty written from every CPU in turn: a handoff on
    // most writes, at a steady rate.
    PtyOptions po;
    po.cpus = topo->cpus;
    po.writes_per_cpu = 1;
    po.pause_us = 0;
    auto w = PtyWorkload::start(po);
    ASSERT_TRUE(w) << w.error().message();
    auto f0 = (*full)->read(), p0 = (*part)->read();
    ASSERT_TRUE(f0 && p0);
    // Whole periods, so that the attached share does not depend on the phase.
    std::this_thread::sleep_for(3 * kSessionDutyPeriod);
    auto f1 = (*full)->read(), p1 = (*part)->read();
    (*w)->stop();
    ASSERT_TRUE(f1 && p1);
    EXPECT_EQ((*w)->error(), "");
    const Interval fi = delta(*f0, *f1), pi = delta(*p0, *p1);
    const double share = daemon::kDefaultDutyPercent / 100.0;
    EXPECT_EQ(pi.d.duty_percent, daemon::kDefaultDutyPercent);
    EXPECT_EQ(fi.d.duty_percent, 100);
    EXPECT_NEAR(pi.watched_seconds() / pi.seconds(), share, 0.2 * share)
        << pi.watched_seconds() << " s attached of " << pi.seconds();
    ASSERT_TRUE(fi.d.has_workq && pi.d.has_workq);
    ASSERT_GT(flush_queued(fi), 1000) << "the pty writer queued too little work";
    const double seen = flush_queued(pi) / flush_queued(fi);
    EXPECT_NEAR(seen, share, 0.4 * share) << flush_queued(pi) << " queued windowed, " << flush_queued(fi)
                                          << " attached throughout";
    const double hf = flush_handoffs(fi) / flush_queued(fi), hp = flush_handoffs(pi) / flush_queued(pi);
    ASSERT_GT(hf, 0.1) << "the writer did not hand its work item over";
    EXPECT_NEAR(hp / hf, 1.0, 0.1) << "handoffs per queued work: windowed " << hp << ", attached throughout " << hf;
    EXPECT_GT(pi.d.workq.lat_count, 0u);
    EXPECT_EQ(waits_over_half_a_second(pi), waits_over_half_a_second(fi))
        << "queue-to-execute times across a window off";
}
