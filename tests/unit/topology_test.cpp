// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "hotline/kernel/kernel.hpp"
#include "hotline/model/metrics.hpp"

using namespace hotline;

TEST(CpuList, ParsesRangesAndSingles) {
    auto r = parse_cpulist("0-3,8,10-11\n");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
    EXPECT_EQ(format_cpulist(*r), "0-3,8,10-11");
}

TEST(CpuList, EmptyIsEmpty) {
    auto r = parse_cpulist("\n");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

TEST(CpuList, RejectsGarbage) {
    EXPECT_FALSE(parse_cpulist("0-").ok());
    EXPECT_FALSE(parse_cpulist("3-1").ok());
    EXPECT_FALSE(parse_cpulist("a").ok());
    EXPECT_FALSE(parse_cpulist("1,,x").ok());
    auto r = parse_cpulist("0-x");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("0-x"), std::string::npos);
}

TEST(CpuList, OverlappingRangesListEachCpuOnce) {
    EXPECT_EQ(*parse_cpulist("5,1-3,2-6,0"), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(*parse_cpulist("4-4,4,0-1,1-2"), (std::vector<int>{0, 1, 2, 4}));
}

// Found by fuzz_cpulist: every CPU of every range was listed before duplicates
// were removed, so a 64 KiB list repeating 0-65535 took 2.4 GB.  The child's
// data segment is capped far below that (not under ASan, whose shadow memory
// does not fit the cap).
#ifndef HOTLINE_SANITIZED
TEST(CpuList, RepeatedRangesCostTheirLengthNotTheirCount) {
    std::string list;
    for (int i = 0; i < 9000; ++i) list += "0-65535,";
    list += "7,3-4,65535";
    pid_t pid = fork();
    if (pid == 0) {
        rlimit lim{64u << 20, 64u << 20};
        setrlimit(RLIMIT_DATA, &lim);
        try {
            auto r = parse_cpulist(list);
            _exit(r && r->size() == 65536 && r->front() == 0 && r->back() == 65535 ? 0 : 1);
        } catch (const std::bad_alloc&) {
            _exit(2);
        }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
}
#endif

TEST(Topology, TwoNodesFromFixture) {
    auto t = read_topology(std::string(HOTLINE_FIXTURES) + "/sys2node");
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->cpus, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(t->nodes, (std::vector<int>{0, 1}));
    EXPECT_TRUE(t->from_sysfs_nodes);
    EXPECT_EQ(t->node_of(0), 0);
    EXPECT_EQ(t->node_of(1), 0);
    EXPECT_EQ(t->node_of(2), 1);
    EXPECT_EQ(t->node_of(3), 1);
    EXPECT_EQ(t->cpus_of(1), (std::vector<int>{2, 3}));
}

TEST(Topology, NoNodeDirectoriesMeansOneNode) {
    auto t = read_topology(std::string(HOTLINE_FIXTURES) + "/sysflat");
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->nodes, (std::vector<int>{0}));
    EXPECT_FALSE(t->from_sysfs_nodes);
    EXPECT_EQ(t->cpus_of(0), (std::vector<int>{0, 1}));
}

TEST(Topology, MissingSysfsIsAnError) {
    auto t = read_topology("/nonexistent-hotline-root");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message().find("possible"), std::string::npos);
}

TEST(NodeFold, SumsPerNodeAndKeepsEmptyNodes) {
    auto t = read_topology(std::string(HOTLINE_FIXTURES) + "/sys2node");
    ASSERT_TRUE(t.ok());
    auto f = fold_by_node({5, 7, 0, 11}, *t);
    EXPECT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0], 12u);
    EXPECT_EQ(f[1], 11u);
    auto z = fold_by_node({1, 0, 0, 0}, *t);
    EXPECT_EQ(z[1], 0u);
}
