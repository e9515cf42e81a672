// SPDX-License-Identifier: Apache-2.0
// Two sessions on one workload, for host tests that compare a session watching
// part of the time (attach windows, tracking windows) with one watching
// throughout: both opened together and read around the pty writer, whose
// flush work item changes CPU on every write.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "hotline/kernel/kernel.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/workload/workload.hpp"

namespace hosttest {

// Root and at least two CPUs, or the test fails saying which is missing.
inline void require_two_cpus(hotline::Topology& topo) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    auto t = hotline::read_topology();
    ASSERT_TRUE(t) << t.error().message();
    if (t->cpus.size() < 2) GTEST_FAIL() << "needs 2 CPUs";
    topo = *t;
}

struct SessionPair {
    std::unique_ptr<hotline::Session> full, part;  // watching throughout, in part
    hotline::Snapshot full0, full1, part0, part1;  // read before and after the writer's run
};

// `full` and `part` opened together; the pty writer on every CPU in turn for
// `periods` whole windows' periods, so that the watched share does not depend
// on the windows' phase.
inline void run_session_pair(const hotline::SessionOptions& full, const hotline::SessionOptions& part,
                             const hotline::Topology& topo, int periods, SessionPair& out) {
    using namespace hotline;
    auto f = Session::open(full, probe_kernel(), topo);
    ASSERT_TRUE(f) << f.error().message();
    auto p = Session::open(part, probe_kernel(), topo);
    ASSERT_TRUE(p) << p.error().message();
    out.full = std::move(*f);
    out.part = std::move(*p);
    PtyOptions po;
    po.cpus = topo.cpus;
    po.writes_per_cpu = 1;
    po.pause_us = 0;
    auto w = PtyWorkload::start(po);
    ASSERT_TRUE(w) << w.error().message();
    auto f0 = out.full->read(), p0 = out.part->read();
    ASSERT_TRUE(f0 && p0);
    std::this_thread::sleep_for(periods * part.duty_period);
    auto f1 = out.full->read(), p1 = out.part->read();
    (*w)->stop();
    ASSERT_TRUE(f1 && p1);
    EXPECT_EQ((*w)->error(), "");
    out.full0 = std::move(*f0);
    out.full1 = std::move(*f1);
    out.part0 = std::move(*p0);
    out.part1 = std::move(*p1);
}

}  // namespace hosttest
