// SPDX-License-Identifier: Apache-2.0
// The per-call latency hotline reports (latency.<target>.mean_ns) against
// waits whose length is known from outside hotline: tests/host/helpers/
// timed_waits.cpp makes semtimedop(2) calls that time out, each timed around the
// call, so per call timeout <= time in the kernel <= time measured around it.
// hotline times the kernel function holding the wait (__do_semtimedop) from its
// entry to its exit; the mean of those times must lie between the timeout and
// the mean measured around the calls.  Both bounds are exact.
//
// Latency needs an exit probe (fexit or kretprobe).  Where the kernel admits
// neither (tests/lib/machine_facts.hpp), the same recording must claim no
// latency at all; the VM tier, where fentry loads, has the timed case too
// (tests/vm/guest/tests/latency-oracle.sh).
#include <gtest/gtest.h>

#include "host_util.hpp"

using namespace hosttest;

namespace {

constexpr int kWaits = 10;
constexpr long kTimeoutUs = 20000;

// The function holding a semtimedop wait: __do_semtimedop where the kernel splits it
// out of do_semtimedop, else do_semtimedop itself.
std::string wait_function() {
    std::string ks = slurp("/proc/kallsyms");
    return ks.find(" __do_semtimedop\n") != std::string::npos ? "__do_semtimedop" : "do_semtimedop";
}

}  // namespace

TEST(LatencyOracleHost, MeanNsLiesBetweenTheTimeoutAndTheTimeAroundEachCall) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const auto& mf = hostfacts::MachineFacts::get();
    // fentry comes first in hotline's order: it times only with fexit; else a
    // kprobe times with its kretprobe.
    const bool timed = mf.fentry_loads() ? mf.fexit_loads() : mf.kprobe_attaches();
    const std::string facts = mf.why({"fentry", "fexit", "kprobe"});
    const std::string function = wait_function();
    std::string rec = temp_path("latency.json"), waits = temp_path("waits.json");
    CmdResult r = run(hosttest::hotline() + " record -q --no-workq --no-handoffs --func " + function + " -o " + rec +
                      " -- " + TIMED_WAITS_BIN + " " + std::to_string(kWaits) + " " + std::to_string(kTimeoutUs) +
                      " 0 " + waits);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(rec), w = load_json(waits);
    unlink(rec.c_str());
    unlink(waits.c_str());
    const auto* plan = find_target(j["plan"], function);
    const auto* t = find_target(j["totals"]["targets"], function);
    ASSERT_TRUE(plan && t) << j["plan"].dump(1);
    EXPECT_EQ((*plan)["latency"], timed) << facts << "\nhotline planned: " << plan->dump();
    const auto& metrics = j["analysis"]["diagnosis"]["metrics"];
    const std::string metric = "latency." + function + ".mean_ns";
    if (!timed) {
        EXPECT_FALSE(t->contains("latency")) << facts << "\nhotline: " << t->dump();
        EXPECT_FALSE(metrics.contains(metric)) << facts << "\nhotline: " << metrics.dump();
        return;
    }
    ASSERT_TRUE(t->contains("latency")) << facts << "\nhotline: " << t->dump();
    const auto& lat = (*t)["latency"];
    // Every timed call is one of the waits: a call from anything else on the
    // machine would mix a time of its own into the mean.
    ASSERT_EQ(lat["count"], kWaits) << "calls of " << function << " timed: " << lat.dump();
    double mean = lat["sum_ns"].get<double>() / kWaits;
    double timeout = w["timeout_ns"].get<double>(), around = w["outside_sum_ns"].get<double>() / kWaits;
    EXPECT_GE(mean, timeout) << "a wait ends before its timeout? around each call: " << around << " ns";
    EXPECT_LE(mean, around) << "longer in the kernel than around the call? timeout " << timeout << " ns";
    ASSERT_TRUE(metrics.contains(metric)) << metrics.dump();
    EXPECT_DOUBLE_EQ(metrics[metric].get<double>(), mean) << "the reported mean is the counters' own";
}
