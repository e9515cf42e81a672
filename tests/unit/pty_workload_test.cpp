// SPDX-License-Identifier: Apache-2.0
// The paced pty writer behind `hotline cost`'s default workload (no root needed).
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <thread>

#include "hotline/workload/workload.hpp"

using namespace hotline;

TEST(PtyWorkload, BadOptionsAreNamed) {
    PtyOptions o;
    auto a = PtyWorkload::start(o);
    ASSERT_FALSE(a);
    EXPECT_NE(a.error().message().find("no CPUs"), std::string::npos) << a.error().message();
    o.cpus = {0};
    o.writes_per_cpu = 0;
    auto b = PtyWorkload::start(o);
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message().find("writes per CPU"), std::string::npos) << b.error().message();
}

TEST(PtyWorkload, EveryWriteComesBackOutOfThePty) {
    PtyOptions o;
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    for (int c = 0; c < CPU_SETSIZE && o.cpus.size() < 2; ++c)
        if (CPU_ISSET(c, &set)) o.cpus.push_back(c);
    o.writes_per_cpu = 4;
    o.pause_us = 0;
    auto w = PtyWorkload::start(o);
    ASSERT_TRUE(w) << w.error().message();
    // Wait for the writer to move through every CPU at least twice.
    for (int i = 0; i < 2000 && (*w)->writes() < 16 && (*w)->error().empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    (*w)->stop();
    EXPECT_EQ((*w)->error(), "");
    EXPECT_GE((*w)->writes(), 16u);
}
