// SPDX-License-Identifier: Apache-2.0
// closest_name: the suggestion behind every "did you mean" (subcommands,
// targets, fixes, scenarios).
#include <gtest/gtest.h>

#include "hotline/base/util.hpp"

using namespace hotline;

TEST(DidYouMean, SuggestsTheNameATypoMostLikelyMeant) {
    const char* commands = "probe, record, cost, scenario, serve, fixes, restore, validate, diff, help";
    EXPECT_EQ(closest_name("prob", commands), "probe");       // cut short
    EXPECT_EQ(closest_name("valdiate", commands), "validate");  // two letters swapped
    EXPECT_EQ(closest_name("recrod", commands), "record");
    EXPECT_EQ(closest_name("serv", commands), "serve");
    EXPECT_EQ(closest_name("dst_relase", "dst_release, ipv4_dst_check, tcp_prequeue, queue_work_on"), "dst_release");
    EXPECT_EQ(closest_name("shwo", "list, show, apply"), "show");
}

TEST(DidYouMean, SaysNothingWhenNothingIsClose) {
    const char* commands = "probe, record, cost, scenario, serve";
    EXPECT_EQ(closest_name("frobnicate", commands), "");
    EXPECT_EQ(closest_name("x", commands), "");
    EXPECT_EQ(closest_name("", commands), "");
    EXPECT_EQ(unknown_name_message("target", "zzz", "dst_release"), "unknown target \"zzz\"");
    EXPECT_EQ(unknown_name_message("fix", "numa-locl", "numa-local, early-demux-off"),
              "unknown fix \"numa-locl\"; did you mean \"numa-local\"?");
}
