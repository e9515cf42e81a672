// SPDX-License-Identifier: Apache-2.0
// The interval that ends a stopped recording joins the one before it when it
// is short or, with a scenario, holds none of its operations (its teardown).
#include <gtest/gtest.h>

#include "recording_analysis.hpp"

using namespace hotline;

TEST(RecordingTail, AShortTailJoins) {
    EXPECT_TRUE(tail_joins_last_interval(0.3, 1.0, std::nullopt));
    EXPECT_TRUE(tail_joins_last_interval(0.3, 1.0, 120));
}

TEST(RecordingTail, ATailOfHalfAnIntervalOrMoreStandsWithOperationsOrWithoutAScenario) {
    EXPECT_FALSE(tail_joins_last_interval(0.5, 1.0, std::nullopt));
    EXPECT_FALSE(tail_joins_last_interval(0.9, 1.0, 1));
    EXPECT_FALSE(tail_joins_last_interval(0.6, 1.0, std::nullopt));
}

// A scenario's teardown under TCG on a loaded host took longer than half an
// interval and made no connection: alone it left per-op metrics undefined.
TEST(RecordingTail, AScenariosTeardownWithNoOperationJoinsWhateverItsLength) {
    EXPECT_TRUE(tail_joins_last_interval(0.8, 1.0, 0));
    EXPECT_TRUE(tail_joins_last_interval(2.5, 1.0, 0));
}
