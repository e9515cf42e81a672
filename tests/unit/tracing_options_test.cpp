// SPDX-License-Identifier: Apache-2.0
// The one check of a tracing session's options: every option a user writes is
// refused with a message naming it, and accepted values reach the session and
// the recording loop.
#include <gtest/gtest.h>

#include "hotline/session/tracing.hpp"

using namespace hotline;

namespace {

// The check's message, or "" when the options pass.
std::string refusal(const TracingOptions& o) {
    auto s = check_tracing_options(o);
    return s ? std::string() : s.error().message();
}

TEST(TracingOptions, DefaultsPass) {
    auto s = check_tracing_options(TracingOptions{});
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(s->duration, 0);
    EXPECT_EQ(s->interval, 1);
    EXPECT_FALSE(s->session.forced);
    EXPECT_EQ(s->session.sample_freq, SessionOptions{}.sample_freq);
    EXPECT_EQ(s->session.owner_capacity, SessionOptions{}.owner_capacity);
    EXPECT_FALSE(s->scenario);
}

TEST(TracingOptions, EachBadOptionIsNamed) {
    struct Case {
        const char* what;
        void (*set)(TracingOptions&);
        const char* says;
    };
    const Case cases[] = {
        {"zero duration", [](TracingOptions& o) { o.duration = "0"; }, "--duration must be positive"},
        {"short interval", [](TracingOptions& o) { o.interval = "10ms"; }, "--interval must be at least 50ms"},
        {"too many intervals", [](TracingOptions& o) { o.duration = "1000s"; o.interval = "50ms"; },
         "gives more than 10000 intervals"},
        {"mechanism", [](TracingOptions& o) { o.mechanism = "nosuch"; }, "unknown mechanism \"nosuch\""},
        {"target", [](TracingOptions& o) { o.targets = {"dst_relase"}; }, "dst_relase"},
        {"handoff sample", [](TracingOptions& o) { o.handoff_sample = 0; }, "--handoff-sample must be 1 or more"},
        {"owner map", [](TracingOptions& o) { o.owner_capacity = 8; }, "bad owner map size 8"},
        {"sample frequency", [](TracingOptions& o) { o.sample_freq = 0; }, "bad sampling frequency 0 Hz"},
        {"workload", [](TracingOptions& o) { o.workload = "storm"; }, "unknown workload \"storm\""},
        {"duty cycle none", [](TracingOptions& o) { o.discover = DiscoverOptions{}; o.discover->duty_percent = 0; },
         "--duty-cycle 0: a percent from 1 to 100"},
        {"duty cycle over", [](TracingOptions& o) { o.discover = DiscoverOptions{}; o.discover->duty_percent = 101; },
         "--duty-cycle 101: a percent from 1 to 100"},
        {"workload and command", [](TracingOptions& o) { o.workload = "churn"; o.command = {"true"}; },
         "--workload and a command are exclusive"},
        {"workload and scenario",
         [](TracingOptions& o) {
             o.workload = "churn";
             o.scenario = ScenarioOptions{};
             o.scenario->name = "tcp-crr";
         },
         "--workload and --scenario are exclusive"},
    };
    for (const Case& c : cases) {
        TracingOptions o;
        c.set(o);
        EXPECT_NE(refusal(o).find(c.says), std::string::npos) << c.what << ": " << refusal(o);
    }
}

TEST(TracingOptions, AcceptedValuesReachTheSession) {
    TracingOptions o;
    o.targets = {"dst_release"};
    o.mechanism = "tracepoint";
    o.latency = false;
    o.handoffs = false;
    o.handoff_sample = 4;
    o.owner_capacity = 64;
    o.sample_freq = 199;
    o.workq = false;
    auto s = check_tracing_options(o);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(s->session.targets, o.targets);
    EXPECT_EQ(s->session.forced, Mechanism::kTracepoint);
    EXPECT_FALSE(s->session.latency);
    EXPECT_FALSE(s->session.handoffs);
    EXPECT_EQ(s->session.handoff_sample, 4);
    EXPECT_EQ(s->session.owner_capacity, 64u);
    EXPECT_EQ(s->session.sample_freq, 199);
    EXPECT_FALSE(s->session.workq);
}

// The scenario gets the recording's duration as its traffic time and the
// command, and is resolved against this process's CPUs.
TEST(TracingOptions, ScenarioTakesDurationAndCommand) {
    TracingOptions o;
    o.duration = "3s";
    o.command = {"true"};
    o.scenario = ScenarioOptions{};
    o.scenario->name = "tcp-crr";
    auto s = check_tracing_options(o);
    ASSERT_TRUE(s) << s.error().message();
    ASSERT_TRUE(s->scenario);
    EXPECT_EQ(s->scenario->duration_s, 3);
    EXPECT_EQ(s->scenario->command, o.command);
    EXPECT_FALSE(s->scenario->cpus.empty());
}

TEST(TracingOptions, WorkloadCpusMustExist) {
    Topology topo;
    topo.cpus = {0, 1};
    topo.cpu_node = {{0, 0}, {1, 0}};
    TracingOptions o;
    EXPECT_EQ(*check_workload_cpus(o, topo), topo.cpus);
    o.workload_cpus = "1";
    EXPECT_EQ(*check_workload_cpus(o, topo), std::vector<int>{1});
    o.workload_cpus = "5";
    auto bad = check_workload_cpus(o, topo);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("--workload-cpus: CPU 5 does not exist"), std::string::npos);
}

}  // namespace
