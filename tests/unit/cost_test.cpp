// SPDX-License-Identifier: Apache-2.0
// The arithmetic of `hotline cost` rows: ratios, hit rates and the CPU a variant adds.
#include <gtest/gtest.h>

#include "hotline/probe/cost.hpp"

using namespace hotline;

namespace {

CostRow row() {
    CostRow r;
    r.target = "queue_work_on";
    r.attach = "tp_btf/workqueue_queue_work";
    r.variants = {{"empty", "e", 2000, 80000}, {"count", "c", 2000, 100000}, {"handoff", "h", 2000, 400000}};
    return r;
}

}  // namespace

TEST(CostRow, RatiosAreAgainstTheEmptyProgram) {
    CostRow r = row();
    EXPECT_DOUBLE_EQ(r.ratio("count"), 50.0 / 40.0);
    EXPECT_DOUBLE_EQ(r.ratio("handoff"), 5.0);
    EXPECT_EQ(r.ratio("latency"), 0);  // not attached
}

TEST(CostRow, ExtraCpuIsTheExtraPerHitTimesTheHitRate) {
    CostRow r = row();
    EXPECT_DOUBLE_EQ(r.hits_per_s(4.0), 500.0);
    // (200 - 40) ns over the empty program, 500 hits per second.
    EXPECT_DOUBLE_EQ(r.extra_ns_per_s("handoff", 4.0), 160.0 * 500.0);
    EXPECT_DOUBLE_EQ(r.extra_ns_per_s("count", 4.0), 10.0 * 500.0);
    EXPECT_EQ(r.extra_ns_per_s("latency", 4.0), 0);
    EXPECT_EQ(r.extra_ns_per_s("count", 0), 0);
}

TEST(CostRow, NoEmptyProgramMeansNoRate) {
    CostRow r = row();
    r.variants.erase(r.variants.begin());
    EXPECT_EQ(r.hits_per_s(1.0), 0);
    EXPECT_EQ(r.ratio("count"), 0);
    EXPECT_EQ(r.extra_ns_per_s("count", 1.0), 0);
}
