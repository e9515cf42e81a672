// SPDX-License-Identifier: Apache-2.0
// A session times its own programs for a window of each second and scales the
// timed runs to all of them; when something else keeps the kernel's run
// statistics on, it sees that (RunStatsCanary) and scales nothing.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "host_util.hpp"
#include "hotline/probe/prog_stats.hpp"

using namespace hosttest;

namespace {

struct Timed {
    double runs = 0, timed = 0;  // of the busiest program
    // dst_release's proxy programs over the intervals the workload filled
    // (neither the first nor the last): their estimated runs, and the events
    // they counted themselves, exactly.
    double proxy_runs = 0, proxy_events = 0;
    std::string text;
};

// The intervals' sums of dst_release's estimated runs and exact events, the
// first and the last left out: the workload starts and ends inside them, and a
// one-in-ten sample of a second the workload only partly filled is the
// estimate's noise, not its error.
void add_steady_intervals(const nlohmann::json& intervals, Timed& t) {
    for (std::size_t i = 1; i + 1 < intervals.size(); ++i) {
        for (auto& c : intervals[i]["cost"])
            if (c["target"] == "dst_release") t.proxy_runs += c["run_cnt"].get<double>();
        if (const auto* d = find_target(intervals[i]["targets"], "dst_release")) t.proxy_events += sum((*d)["events"]);
    }
}

// A recording of loopback connections paced by the clock (steady on a busy
// machine, unlike a workload running as fast as the CPUs let it).  1,500 a
// second, a fifth of one CPU: at 3,000 a CI run with the fuzz targets and a
// guest beside it could not keep the pace, the rate followed the contention
// within each second, and the 100 ms samples read 40% over the exact count.
Timed record_paced_churn(int per_second = 1500) {
    Timed t;
    std::string f = temp_path("runstats.json");
    // The proxies' own programs: held to tracepoints (fentry, where it loads, has no events of its own).
    // The session ends with the command.
    CmdResult r = run(hosttest::hotline() + " record -d 60 -t dst_release,queue_work_on -m tracepoint -o " + f +
                      " -- python3 " HOST_HELPERS "/paced_churn.py " + std::to_string(per_second) + " 6");
    EXPECT_EQ(r.rc, 0) << r.err;
    t.text = r.out + r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    for (auto& c : j["cost"]) {
        double runs = c["run_cnt"].get<double>();
        if (runs > t.runs) t.runs = runs, t.timed = c["timed_runs"].get<double>();
    }
    add_steady_intervals(j["intervals"], t);
    return t;
}

}  // namespace

TEST(HostRunStats, OneRunInTenIsTimedAndTheRestEstimated) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    Timed t = record_paced_churn();
    ASSERT_GT(t.runs, 10000) << "the churn should run the dst_release proxies often";
    // 100 ms of each second; a session of 6 s opens 6 or 7 windows.
    EXPECT_GE(t.timed / t.runs, 0.05);
    EXPECT_LE(t.timed / t.runs, 0.2);
    // The estimate against the programs' own exact event counts, where the workload was steady.
    ASSERT_GT(t.proxy_events, 0) << "no interval the workload filled: " << t.text;
    EXPECT_NEAR(t.proxy_runs / t.proxy_events, 1.0, 0.25) << t.proxy_runs << " estimated, " << t.proxy_events;
    EXPECT_NE(t.text.find("runs and CPU % scaled from the"), std::string::npos) << t.text;
}

TEST(HostRunStats, StatisticsKeptOnElsewhereAreSeenAndNothingIsScaled) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);  // as another tool holding them would
    ASSERT_GE(fd, 0) << "BPF_ENABLE_STATS refused";
    Timed t = record_paced_churn();
    close(fd);
    ASSERT_GT(t.runs, 10000);
    // Every run was timed, so the estimate is the kernel's count: the canary
    // shows the statistics on in every slice the window is off.  Windowing
    // alone times ~10%.  Not exactly all: a slice still running at a read is
    // credited to the next stretch (up to 100 ms of a 1-s interval).
    EXPECT_GE(t.timed / t.runs, 0.9) << t.timed << " timed of " << t.runs;
    EXPECT_NEAR(t.proxy_runs / t.proxy_events, 1.0, 0.1) << t.proxy_runs << " estimated, " << t.proxy_events;
}

// The canary's run is counted while a descriptor holds the statistics on.
// (Whether it is not otherwise depends on every other tool on the machine.)
TEST(HostRunStats, TheCanaryCountsWhileTheStatisticsAreOn) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    auto canary = hotline::RunStatsCanary::load();
    ASSERT_TRUE(canary) << "the kernel refused the canary's socket filter or its test run";
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    ASSERT_GE(fd, 0) << "BPF_ENABLE_STATS refused";
    const bool counted = canary->counted();
    close(fd);
    EXPECT_TRUE(counted);
}

// Two connections a second: most 100 ms slices see no run at all, so only the
// canary can tell that the statistics were on in them; scaled over, the runs
// would read several times what the kernel counted.
TEST(HostRunStats, StatisticsKeptOnElsewhereAreSeenWhereNothingRuns) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    ASSERT_GE(fd, 0) << "BPF_ENABLE_STATS refused";
    Timed t = record_paced_churn(2);
    close(fd);
    ASSERT_GT(t.timed, 10) << "the churn should run the dst_release proxies: " << t.text;
    // Scaled over, 0.43 (2026-12-07); a CI run with the canary, 0.95 (the
    // slices running at reads, as above, over few runs).
    EXPECT_GE(t.timed / t.runs, 0.9) << t.timed << " timed of " << t.runs;
}
