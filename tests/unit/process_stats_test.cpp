// SPDX-License-Identifier: Apache-2.0
// read_process_stats over a fixture procfs tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "hotline/kernel/process_stats.hpp"

using namespace hotline;

TEST(ProcessStats, ReadsAFixtureTree) {
    std::string root = testing::TempDir() + "/hotline_proc_fixture";
    std::string dir = root + "/42";
    ASSERT_EQ(system(("rm -rf " + root + " && mkdir -p " + dir + "/fd").c_str()), 0);
    for (int i = 0; i < 3; ++i) std::ofstream(dir + "/fd/" + std::to_string(i)) << "";
    // utime 300, stime 100 ticks; starttime 5000 ticks; vsize 8 MiB; rss 256 pages.
    std::ofstream(dir + "/stat") << "42 (hot line) S 1 42 42 0 -1 4194560 100 0 0 0 300 100 0 0 20 0 4 0 5000 "
                                    "8388608 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    std::ofstream(dir + "/limits") << "Limit                     Soft Limit           Hard Limit           Units\n"
                                      "Max open files            1024                 524288               files\n";
    std::ofstream(root + "/stat") << "cpu  1 2 3\nbtime 1700000000\n";
    auto ps = read_process_stats(root, "42");
    ASSERT_TRUE(ps.ok()) << ps.error().message();
    double tick = double(sysconf(_SC_CLK_TCK));
    EXPECT_DOUBLE_EQ(ps->cpu_seconds, 400 / tick);
    EXPECT_EQ(ps->virtual_bytes, 8388608u);
    EXPECT_EQ(ps->resident_bytes, 256u * std::uint64_t(sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(ps->open_fds, 3u);
    EXPECT_EQ(ps->max_fds, 1024u);
    EXPECT_DOUBLE_EQ(ps->start_time_seconds, 1700000000 + 5000 / tick);
    EXPECT_FALSE(read_process_stats(root, "43").ok());
}
