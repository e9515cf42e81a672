// SPDX-License-Identifier: Apache-2.0
// What `hotline serve` exposes: text and OpenMetrics accepted by promtool, the
// plan, counters driven by our own workload, per-target mechanisms in one
// exposition, the handoff matrix, and serving on the IPv6 loopback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "machine_facts.hpp"
#include "serve_util.hpp"

using namespace servetest;

TEST(ServeHost, ExpositionPassesPromtoolAndNegotiatesOpenMetrics) {
    if (!have("promtool")) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
    Daemon d("[metrics]\nper_cpu = true\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    stat_refresh(5);
    std::string text = get(d.port(), "/metrics");
    ASSERT_EQ(status_of(text), 200) << text;
    EXPECT_EQ(header_of(text, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    std::string path = d.dir() + "/metrics.txt";
    std::ofstream(path) << body_of(text);
    CmdResult r = hosttest::run("promtool check metrics < " + path);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_EQ(r.out + r.err, "") << "promtool lint findings";
    EXPECT_NE(body_of(text).find("cpu=\"0\""), std::string::npos) << "per_cpu = true gives cpu labels";

    std::string om = get(d.port(), "/metrics", "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n");
    ASSERT_EQ(status_of(om), 200);
    EXPECT_EQ(header_of(om, "Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
    std::string omb = body_of(om);
    ASSERT_GE(omb.size(), 6u);
    EXPECT_EQ(omb.substr(omb.size() - 6), "# EOF\n");
    EXPECT_NE(omb.find("# TYPE hotline_calls counter"), std::string::npos);

    std::string head = raw(d.port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(head), 200);
    EXPECT_EQ(body_of(head), "");

    std::string plan = get(d.port(), "/plan");
    ASSERT_EQ(status_of(plan), 200);
    auto j = nlohmann::json::parse(body_of(plan), nullptr, false);
    ASSERT_TRUE(j.is_array()) << body_of(plan);
    EXPECT_EQ(j.size(), 4u);  // every built-in target, attached or not
    EXPECT_EQ(body_of(get(d.port(), "/healthz")), "ok\n");
    EXPECT_EQ(status_of(get(d.port(), "/nope")), 404);
}

TEST(ServeHost, CountersFollowOurOwnWorkloadAndNeverReset) {
    Daemon d(kQueueWorkConfig);
    ASSERT_TRUE(d.up()) << d.why_not_up();
    std::string m0 = body_of(get(d.port(), "/metrics"));
    ASSERT_NE(m0.find("hotline_probe_attached{target=\"queue_work_on\",mechanism=\""), std::string::npos) << m0;
    ASSERT_EQ(m0.find("hotline_probe_attached{target=\"queue_work_on\",mechanism=\"unavailable\"}"), std::string::npos)
        << "queue_work_on must be watched on this machine\n" << m0;
    auto calls = [&](const std::string& m) {
        double s = 0;
        std::istringstream is(m);
        for (std::string line; std::getline(is, line);)
            if (line.rfind("hotline_calls_total{target=\"queue_work_on\"", 0) == 0)
                s += std::stod(line.substr(line.rfind(' ') + 1));
        return s;
    };
    const int kRefreshes = 50;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double before = calls(m0);
    stat_refresh(kRefreshes);
    double after = calls(body_of(get(d.port(), "/metrics")));
    // Each refresh queues one work item per online CPU; other kernel work only adds.
    EXPECT_GE(after - before, double(kRefreshes * cpus)) << before << " -> " << after;
    double later = calls(body_of(get(d.port(), "/metrics")));
    EXPECT_GE(later, after) << "counters are cumulative";
}

// Targets with pinned mechanisms run in their own sessions; one exposition covers
// them all, and a pinned mechanism that cannot attach leaves only its target out.
TEST(ServeHost, PerTargetMechanismsShareOneExposition) {
    Daemon d("[[target]]\nname = \"queue_work_on\"\nmechanism = \"tracepoint\"\n"
             "[[target]]\nname = \"dst_release\"\n"
             "[[target]]\nname = \"ipv4_dst_check\"\nmechanism = \"sampling\"\n"
             "[[target]]\nname = \"tcp_prequeue\"\nmechanism = \"fentry\"\n"
             "[probe]\nduty_cycle = 100\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    stat_refresh(10);
    std::string m = body_of(get(d.port(), "/metrics"));
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"queue_work_on\",mechanism=\"tracepoint\"}"), 1) << m;
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"ipv4_dst_check\",mechanism=\"sampling\"}"), 1) << m;
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"tcp_prequeue\",mechanism=\"unavailable\"}"), 0) << m;
    EXPECT_NE(m.find("hotline_probe_attached{target=\"dst_release\",mechanism=\""), std::string::npos);
    // Per node, each node of the machine (tests/lib/machine_facts.hpp) a series.
    const auto& mf = hostfacts::MachineFacts::get();
    double calls = 0;
    for (auto& [node, cpus] : mf.nodes()) {
        calls += sample(m, fmt::format("hotline_calls_total{{target=\"queue_work_on\",node=\"{}\","
                                       "mechanism=\"tracepoint\"}}",
                                       node));
        EXPECT_FALSE(std::isnan(sample(m, fmt::format("hotline_samples_total{{node=\"{}\"}}", node))))
            << "the sampling session reports; " << mf.why({"nodes"}) << "\n" << m;
    }
    EXPECT_GE(calls, 10) << mf.why({"nodes"}) << "\n" << m;
    // Configuration order in the plan, and the refusal reason for the pinned target.
    auto plan = nlohmann::json::parse(body_of(get(d.port(), "/plan")), nullptr, false);
    ASSERT_TRUE(plan.is_array());
    ASSERT_EQ(plan.size(), 4u);
    EXPECT_EQ(plan[0]["target"], "queue_work_on");
    EXPECT_EQ(plan[3]["target"], "tcp_prequeue");
    EXPECT_EQ(plan[3]["observable"], false);
    EXPECT_NE(d.log().find("tcp_prequeue"), std::string::npos);
}

// The pty workload hands one work item between CPU 0 and CPU 1 on every write
// (tests/host/helpers/pty_pingpong.cpp); the daemon's matrix must show it.
TEST(ServeHost, HandoffMatrixFollowsAnAlternatingWriter) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_FAIL() << "needs 2 CPUs";
    Daemon d("targets = [\"queue_work_on\"]\n[probe]\nduty_cycle = 100\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    // The matrix cells between the writer's CPUs' nodes (machine_facts.hpp).
    const auto& mf = hostfacts::MachineFacts::get();
    const int n0 = mf.node_of(0), n1 = mf.node_of(1);
    std::set<std::string> cells;
    for (auto [from, to] : {std::pair{n0, n1}, std::pair{n1, n0}})
        cells.insert(fmt::format("hotline_handoffs_total{{target=\"queue_work_on\",from_node=\"{}\",to_node=\"{}\"}}",
                                 from, to));
    auto in_cells = [&](const std::string& m) {
        double v = 0;
        for (auto& c : cells) v += sample(m, c);
        return v;
    };
    const std::string tracked = "hotline_handoff_tracked_hits_total{target=\"queue_work_on\"}";
    const std::string cross = "hotline_cross_node_handoffs_total{target=\"queue_work_on\"}";
    std::string m0 = body_of(get(d.port(), "/metrics"));
    ASSERT_FALSE(std::isnan(in_cells(m0))) << mf.why({"nodes"}) << "\n" << m0;
    const int writes = 2000;
    CmdResult w = hosttest::run(fmt::format("{} {} alt", PTY_PINGPONG_BIN, writes));
    ASSERT_EQ(w.rc, 0) << w.out << w.err;
    std::string m1 = body_of(get(d.port(), "/metrics"));
    double handoffs = in_cells(m1) - in_cells(m0);
    // One handoff per write after the first; a write may find the work still pending
    // (not queued again): allow 5% of those.  Other kernel work only adds.
    EXPECT_GE(handoffs, writes * 0.95 - 1) << m1;
    EXPECT_GE(sample(m1, tracked) - sample(m0, tracked), handoffs);
    if (n0 != n1) {
        EXPECT_GE(sample(m1, cross) - sample(m0, cross), handoffs) << mf.why({"nodes"}) << "\n" << m1;
    } else if (mf.nodes_with_cpus() == 1) {
        EXPECT_EQ(sample(m1, cross), 0) << mf.why({"nodes"}) << "\n" << m1;
    }

    Daemon off("targets = [\"queue_work_on\"]\n[probe]\nhandoffs = false\n");
    ASSERT_TRUE(off.up()) << off.why_not_up();
    std::string m = body_of(get(off.port(), "/metrics"));
    EXPECT_EQ(m.find("hotline_handoffs_total"), std::string::npos) << "count-only mode exports no matrix";
}

// The default attaches the programs a share of the time (probe.duty_cycle) of
// each period (probe.duty_period, here shortened to 1 s): over four whole
// periods the attached seconds grow by that share.
TEST(ServeHost, TheDefaultIsAttachedItsShareOfTheTime) {
    Daemon d("targets = [\"queue_work_on\"]\n[probe]\nduty_period = \"1s\"\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    const std::string attached = "hotline_probe_attached_seconds_total";
    std::string m0 = body_of(get(d.port(), "/metrics"));
    EXPECT_EQ(sample(m0, "hotline_probe_duty_period_seconds"), 1) << m0;
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(4));
    std::string m1 = body_of(get(d.port(), "/metrics"));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double share = sample(m1, "hotline_probe_duty_cycle_ratio");
    EXPECT_GT(share, 0) << m1;
    EXPECT_LT(share, 1) << "the default keeps the programs attached throughout\n" << m1;
    EXPECT_NEAR(sample(m1, attached) - sample(m0, attached), share * secs, 0.15) << "over " << secs << " s\n" << m1;
}

// `--listen [::1]:0`: the exporter binds the IPv6 loopback, says so with the
// address in brackets, and serves the exposition there.
TEST(ServeHost, ServesOnTheIpv6Loopback) {
    Daemon d(kQueueWorkConfig, {}, {}, "[::1]:0");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    EXPECT_NE(d.log().find("listening on http://[::1]:" + std::to_string(d.port()) + "/metrics"), std::string::npos)
        << d.log();
    httplib::Client c("::1", d.port());
    auto r = c.Get("/metrics");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("hotline_probe_attached{target=\"queue_work_on\""), std::string::npos) << r->body;
}
