// A session times its own programs for a window of each second and scales the
// timed runs to all of them; when something else keeps the kernel's run
// statistics on, it sees that and scales nothing.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "host_util.hpp"

using namespace hosttest;

namespace {

struct Timed {
    double runs = 0, timed = 0;  // of the busiest program
    double proxy_runs = 0;       // estimated runs of dst_release's proxy programs
    double proxy_events = 0;     // the events those programs counted themselves
    std::string text;
};

Timed record_churn() {
    Timed t;
    std::string f = temp_path("runstats.json");
    // The proxies' own programs: held to tracepoints (fentry, where it loads, has no events of its own).
    CmdResult r =
        run(hosttest::hotline() + " record -d 3 -t dst_release,queue_work_on -m tracepoint --workload churn -o " + f);
    EXPECT_EQ(r.rc, 0) << r.err;
    t.text = r.out + r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    for (auto& c : j["cost"]) {
        double runs = c["run_cnt"].get<double>();
        if (runs > t.runs) t.runs = runs, t.timed = c["timed_runs"].get<double>();
        if (c["target"] == "dst_release") t.proxy_runs += runs;
    }
    if (const auto* d = find_target(j["totals"]["targets"], "dst_release"))
        for (auto& e : (*d)["events"]) t.proxy_events += e.get<double>();
    return t;
}

}  // namespace

TEST(HostRunStats, OneRunInTenIsTimedAndTheRestEstimated) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    Timed t = record_churn();
    ASSERT_GT(t.runs, 10000) << "the churn should run the dst_release proxies often";
    // 100 ms of each second; a session of 3 s opens 3 or 4 windows.
    EXPECT_GE(t.timed / t.runs, 0.05);
    EXPECT_LE(t.timed / t.runs, 0.2);
    // The estimate against the programs' own exact event counts (steady churn).
    EXPECT_NEAR(t.proxy_runs / t.proxy_events, 1.0, 0.25) << t.proxy_runs << " estimated, " << t.proxy_events;
    EXPECT_NE(t.text.find("runs and CPU % scaled from the"), std::string::npos) << t.text;
}

TEST(HostRunStats, StatisticsKeptOnElsewhereAreSeenAndNothingIsScaled) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);  // as another tool holding them would
    ASSERT_GE(fd, 0) << "BPF_ENABLE_STATS refused";
    Timed t = record_churn();
    close(fd);
    ASSERT_GT(t.runs, 10000);
    // Not all: a 100 ms slice in which no program ran (the workload not yet
    // started on a loaded machine) cannot show that someone else's statistics
    // are on, since run counts move only while they are, and is scaled over
    // (a CI run: 94.4% timed, estimate +6%).  Windowing alone times ~10%.
    EXPECT_GE(t.timed / t.runs, 0.85) << t.timed << " timed of " << t.runs;
    EXPECT_NEAR(t.proxy_runs / t.proxy_events, 1.0, 0.15);
}
