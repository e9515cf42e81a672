// SPDX-License-Identifier: Apache-2.0
// `hotline diff` on synthetic recordings: the layout fact decides kernel-pair
// dst-refcnt-false-sharing, measured metrics are reported beside it, and a
// recording without the per-interval metrics is refused with what to do.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <limits>

#include "hotline/report/output.hpp"
#include "hotline/session/recording.hpp"
#include "hotline/validate/validator.hpp"

using namespace hotline;

namespace {

nlohmann::json recording(double read_fields, bool carries, double ops_per_s, int intervals) {
    nlohmann::json per = nlohmann::json::array();
    for (int i = 0; i < intervals; ++i)
        per.push_back({{"scenario.ops_per_s", ops_per_s + i}, {"latency.dst_release.mean_ns", 40.0 + i}});
    return {{"schema", "hotline.recording"},
            {"version", 1},
            {"kernel", {{"release", carries ? "6.12" : "6.1"}}},
            {"analysis",
             {{"interval_metrics", per},
              {"diff",
               {{"layout_metrics", {{"layout.dst_entry.read_fields_on_refcnt_line", read_fields}}},
                {"fixes", {{"dst-refcnt-false-sharing", {{"carries_fix", carries}}}}}}}}}};
}

const FixDef& fix(const FixCatalog& cat, const char* name) {
    const FixDef* f = cat.find(name);
    EXPECT_NE(f, nullptr);
    return *f;
}

}  // namespace

TEST(Diff, LayoutFactDecidesAndMeasurementsAreReported) {
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    auto r = diff_recordings(fix(*cat, "dst-refcnt-false-sharing"), recording(2, false, 1000, 4),
                             recording(0, true, 1100, 5), "6.1.json", "6.12.json");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->mode, "diff");
    EXPECT_EQ(r->overall, Verdict::kPass) << r->reason;
    EXPECT_EQ(r->baseline_trials, 4);
    EXPECT_EQ(r->candidate_trials, 5);
    bool layout = false, ops = false;
    for (auto& c : r->criteria) {
        if (c.metric == "layout.dst_entry.read_fields_on_refcnt_line") {
            layout = true;
            EXPECT_EQ(c.verdict, Verdict::kPass) << c.reason;
        }
        if (c.metric == "scenario.ops_per_s") {
            ops = true;
            EXPECT_EQ(c.verdict, Verdict::kInfo);
            EXPECT_GT(c.median_candidate, c.median_baseline);
        }
    }
    EXPECT_TRUE(layout);
    EXPECT_TRUE(ops);
    EXPECT_TRUE(r->notes.empty());  // the recordings are the right way round
    EXPECT_EQ(r->context["candidate"]["carries_fix"], true);
}

TEST(Diff, SameLayoutOnBothSidesDoesNotPass) {
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    auto r = diff_recordings(fix(*cat, "dst-refcnt-false-sharing"), recording(2, false, 1000, 3),
                             recording(2, false, 1000, 3), "a.json", "b.json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->overall, Verdict::kFail) << r->reason;
    ASSERT_FALSE(r->notes.empty());  // neither carries the fix: said so
    EXPECT_NE(r->notes.front().find("wrong way round"), std::string::npos);
}

TEST(Diff, SwappedRecordingsFailAndAreFlagged) {
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    auto r = diff_recordings(fix(*cat, "dst-refcnt-false-sharing"), recording(0, true, 1000, 3),
                             recording(2, false, 1000, 3), "6.12.json", "6.1.json");
    ASSERT_TRUE(r);
    // The fixed layout as baseline: the candidate reads more on the refcount line.
    EXPECT_EQ(r->overall, Verdict::kFail) << r->reason;
    bool layout = false;
    for (auto& c : r->criteria)
        if (c.metric == "layout.dst_entry.read_fields_on_refcnt_line") {
            layout = true;
            EXPECT_EQ(c.verdict, Verdict::kFail) << c.reason;
        }
    EXPECT_TRUE(layout);
    ASSERT_EQ(r->notes.size(), 1u);
    EXPECT_NE(r->notes.front().find("wrong way round"), std::string::npos) << r->notes.front();
    EXPECT_NE(r->notes.front().find("baseline carries the fix: true"), std::string::npos) << r->notes.front();
}

TEST(Diff, RecordingWithoutIntervalMetricsIsRefusedWithAHint) {
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    nlohmann::json old = {{"schema", "hotline.recording"}, {"version", 1}, {"analysis", {{"layouts", nlohmann::json::array()}}}};
    auto r = diff_recordings(fix(*cat, "dst-refcnt-false-sharing"), old, recording(0, true, 1, 2), "old.json", "new.json");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("old.json"), std::string::npos);
    EXPECT_NE(r.error().message().find("interval_metrics"), std::string::npos);
}

TEST(Diff, ScenarioNumbersPerScenario) {
    ScenarioResult crr;
    crr.scenario = "tcp-crr";
    crr.connections = 500;
    crr.seconds = 2;
    crr.cpu.threads_measured = true;
    crr.cpu.sender_pct = 50;
    crr.cpu.receiver_pct = 25;
    auto n = scenario_numbers(crr);
    EXPECT_DOUBLE_EQ(n.ops, 500);
    EXPECT_DOUBLE_EQ(n.cpu_seconds, 1.5);
    ScenarioResult dst;
    dst.scenario = "dst-refcount";
    dst.messages = 9000;
    dst.seconds = 3;
    dst.cpu.cpus = {0, 1};
    dst.cpu.busy_pct = 50;
    n = scenario_numbers(dst);
    EXPECT_DOUBLE_EQ(n.ops, 9000);
    EXPECT_DOUBLE_EQ(n.cpu_seconds, 3);
}

namespace {

Result<VerdictReport> diff_against_good(const nlohmann::json& hostile) {
    static auto cat = FixCatalog::builtin();
    return diff_recordings(fix(*cat, "dst-refcnt-false-sharing"), hostile, recording(0, true, 1, 2), "bad.json",
                           "good.json");
}

}  // namespace

TEST(Diff, WrongTypedFieldsAreErrorsNotCrashes) {
    std::vector<std::pair<std::string, nlohmann::json>> cases = {
        {"/analysis/interval_metrics/0/scenario.ops_per_s", "fast"},
        {"/analysis/interval_metrics/0", nlohmann::json::array({1, 2})},
        {"/analysis/interval_metrics/1", 7},
        {"/analysis/diff/layout_metrics", "none"},
        {"/analysis/diff", 3},
        {"/analysis/diff/fixes", nlohmann::json::array()},
        {"/kernel", nlohmann::json::array()},
        {"/schema", 5},
        {"/version", "1"},
    };
    for (auto& [ptr, value] : cases) {
        nlohmann::json doc = recording(2, false, 1000, 3);
        doc[nlohmann::json::json_pointer(ptr)] = value;
        Result<VerdictReport> r = make_error("not run");
        EXPECT_NO_THROW(r = diff_against_good(doc)) << ptr;
        if (ptr.rfind("/analysis/diff/fixes", 0) == 0 || ptr == "/kernel") continue;  // informational parts
        EXPECT_FALSE(r) << ptr;
        if (!r) {
            EXPECT_NE(r.error().message().find("bad.json"), std::string::npos) << r.error().message();
        }
    }
}

TEST(Diff, TheSchemaAndVersionAreChecked) {
    nlohmann::json other = recording(2, false, 1000, 3);
    other["schema"] = "something.else";
    auto r = diff_against_good(other);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("schema"), std::string::npos) << r.error().message();
    nlohmann::json future = recording(2, false, 1000, 3);
    future["version"] = 99;
    r = diff_against_good(future);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("version"), std::string::npos) << r.error().message();
}

TEST(Diff, NegativeOrNonFiniteMetricsAreRefused) {
    for (double v : {-5.0, std::numeric_limits<double>::infinity()}) {
        nlohmann::json doc = recording(2, false, 1000, 3);
        doc["analysis"]["interval_metrics"][1]["calls.dst_release.per_op"] = v;
        auto r = diff_against_good(doc);
        ASSERT_FALSE(r) << v;
        EXPECT_NE(r.error().message().find("calls.dst_release.per_op"), std::string::npos) << r.error().message();
    }
}

TEST(Diff, MoreIntervalsThanTheLimitAreRefusedWithTheLimitNamed) {
    nlohmann::json doc = recording(2, false, 1000, int(kMaxRecordingIntervals) + 1);
    auto r = diff_against_good(doc);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find(std::to_string(kMaxRecordingIntervals)), std::string::npos)
        << r.error().message();
}

// Not in the AddressSanitizer build: its shadow memory and quarantine do not fit
// a data-segment cap, so the cap would measure ASan, not the estimate.
#ifndef HOTLINE_SANITIZED
TEST(Diff, ManyIntervalsNeedNoQuadraticMemory) {
    // 5000 intervals a side: the pairwise estimate must not hold 25 million pairs
    // (200 MB).  The child's data segment is capped well below that.
    auto base = recording(2, false, 1000, 5000), cand = recording(0, true, 1100, 5000);
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    pid_t pid = fork();
    if (pid == 0) {
        rlimit lim{96u << 20, 96u << 20};
        setrlimit(RLIMIT_DATA, &lim);
        try {
            auto r = diff_recordings(fix(*cat, "dst-refcnt-false-sharing"), base, cand, "a.json", "b.json");
            _exit(r && r->overall == Verdict::kPass ? 0 : 1);
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
