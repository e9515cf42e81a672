// SPDX-License-Identifier: Apache-2.0
// The fix catalog: the built-in entries, applicability on fake kernels, change
// planning, and clear errors (file:line) for bad `--fixes DIR` entries.
#include <gtest/gtest.h>

#include <sstream>

#include "fix_test_util.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/validate/validation.hpp"
#include "hotline/report/fix_output.hpp"

using namespace hotline;
using hotline::test::FakeFacts;
using hotline::test::TempDir;

namespace {

FixCatalog builtin() {
    auto c = FixCatalog::builtin();
    if (!c) ADD_FAILURE() << c.error().message();
    return c ? std::move(*c) : FixCatalog();
}

const char* kGoodExtra = R"(
[[fix]]
name = "rps-off"
mode = "runtime"
summary = "turn RPS off on the scenario's veth"

  [[fix.change]]
  sysfs = "class/net/veth0/queues/rx-0/rps_cpus"
  value = "0"
  scope = "netns"

  [[fix.expect]]
  metric = "handoff.dst_release.cross_cpu_per_op"
  down = "20%"
)";

// Parses one bad file in a directory and returns the error message.
std::string dir_error(const std::string& content, const std::string& file = "bad.toml") {
    TempDir d;
    d.write(file, content);
    FixCatalog cat = builtin();
    auto st = cat.add_dir(d.path());
    if (st) return "no error";
    std::string m = st.error().message();
    // Make the message independent of the temp path.
    for (auto p = m.find(d.path()); p != std::string::npos; p = m.find(d.path()))
        m.replace(p, d.path().size(), "DIR");
    return m;
}

std::string wrap_fix(const std::string& body) {
    return "[[fix]]\nname = \"x\"\nmode = \"runtime\"\nsummary = \"s\"\n" + body;
}

const std::string kChange = "[[fix.change]]\nsysctl = \"net.ipv4.ip_early_demux\"\nvalue = \"0\"\nscope = \"netns\"\n";
const std::string kExpect = "[[fix.expect]]\nmetric = \"m.x\"\ndown = \"50%\"\n";

}  // namespace

TEST(FixCatalog, BuiltinHasTheInitialEntries) {
    FixCatalog cat = builtin();
    for (auto n : {"tcp-low-latency", "early-demux-off", "numa-local", "cpu-local", "prequeue-dst-drop",
                   "dst-refcnt-false-sharing", "random-mix-timer"})
        EXPECT_NE(cat.find(n), nullptr) << n;
    // At least these: a new entry needs no change here.
    EXPECT_GE(cat.fixes().size(), 7u);
    for (auto& f : cat.fixes()) {
        EXPECT_FALSE(f.summary.empty()) << f.name;
        EXPECT_TRUE(std::any_of(f.criteria.begin(), f.criteria.end(),
                                [](const Criterion& c) { return c.kind == CriterionKind::kExpect; }))
            << f.name;
        EXPECT_EQ(f.source.rfind("builtin:", 0), 0u) << f.source;
    }
    auto commits = [&](const char* n) {
        std::set<std::string> s;
        for (auto& r : cat.find(n)->references) s.insert(r.commit);
        return s;
    };
    EXPECT_TRUE(commits("prequeue-dst-drop").count("ca777eff51f7"));
    EXPECT_TRUE(commits("dst-refcnt-false-sharing").count("d288a162dd1c"));
    EXPECT_TRUE(commits("dst-refcnt-false-sharing").count("bc9d3a9f2afc"));
    EXPECT_TRUE(commits("random-mix-timer").count("748bc4dd9e66"));
    EXPECT_EQ(cat.find("prequeue-dst-drop")->mode, FixMode::kKernelPair);
    EXPECT_EQ(cat.find("early-demux-off")->mode, FixMode::kRuntime);
    for (auto& c : cat.find("early-demux-off")->changes) EXPECT_EQ(c.scope, Scope::kNetns);
}

TEST(FixApplicability, TcpLowLatencyNeedsPrequeue) {
    FixCatalog cat = builtin();
    const FixDef& f = *cat.find("tcp-low-latency");
    FakeFacts modern;  // 6.x: the knob may linger, prequeue is gone
    modern.knobs = {"net.ipv4.tcp_low_latency"};
    auto a = check_applicability(f, modern);
    EXPECT_FALSE(a.applicable);
    ASSERT_EQ(a.reasons.size(), 1u);
    EXPECT_NE(a.reasons[0].find("tcp_prequeue does not exist"), std::string::npos);
    EXPECT_NE(a.reasons[0].find("v4.14"), std::string::npos);

    FakeFacts gone;  // neither
    a = check_applicability(f, gone);
    EXPECT_EQ(a.reasons.size(), 2u);
    EXPECT_NE(a.reason_line().find("net.ipv4.tcp_low_latency does not exist"), std::string::npos);

    FakeFacts old;  // 3.10-4.13
    old.knobs = {"net.ipv4.tcp_low_latency"};
    old.functions = {"tcp_prequeue"};
    EXPECT_TRUE(check_applicability(f, old).applicable);
}

TEST(FixApplicability, EarlyDemuxNeedsItsKnobs) {
    FixCatalog cat = builtin();
    FakeFacts k;
    k.knobs = {"net.ipv4.ip_early_demux", "net.ipv4.tcp_early_demux"};
    EXPECT_TRUE(check_applicability(*cat.find("early-demux-off"), k).applicable);
    k.knobs.erase("net.ipv4.tcp_early_demux");
    auto a = check_applicability(*cat.find("early-demux-off"), k);
    EXPECT_FALSE(a.applicable);
    EXPECT_NE(a.reason_line().find("tcp_early_demux"), std::string::npos);
}

TEST(FixApplicability, NumaLocalNeedsTwoNodes) {
    FixCatalog cat = builtin();
    FakeFacts one;
    auto a = check_applicability(*cat.find("numa-local"), one);
    EXPECT_FALSE(a.applicable);
    EXPECT_NE(a.reason_line().find("one NUMA node"), std::string::npos);
    FakeFacts two;
    two.nodes = 2;
    EXPECT_TRUE(check_applicability(*cat.find("numa-local"), two).applicable);
}

TEST(FixApplicability, KernelPairsAreJudgedBetweenKernelsAndMarkTheirSide) {
    FixCatalog cat = builtin();
    const FixDef& f = *cat.find("dst-refcnt-false-sharing");
    FakeFacts k612;
    k612.fields = {"dst_entry.obsolete", "dst_entry.__rcuref"};
    auto a = check_applicability(f, k612);
    EXPECT_FALSE(a.applicable);
    EXPECT_NE(a.reason_line().find("hotline diff"), std::string::npos);
    ASSERT_TRUE(a.carries_fix.has_value());
    EXPECT_TRUE(*a.carries_fix);
    FakeFacts k61;
    k61.fields = {"dst_entry.obsolete", "dst_entry.__refcnt"};
    a = check_applicability(f, k61);
    ASSERT_TRUE(a.carries_fix.has_value());
    EXPECT_FALSE(*a.carries_fix);

    const FixDef& r = *cat.find("random-mix-timer");
    FakeFacts timer;
    timer.functions = {"mix_interrupt_randomness"};
    timer.fields = {"fast_pool.mix"};
    timer.field_types["fast_pool.mix"] = "timer_list";
    EXPECT_TRUE(*check_applicability(r, timer).carries_fix);
    timer.field_types["fast_pool.mix"] = "work_struct";
    EXPECT_FALSE(*check_applicability(r, timer).carries_fix);

    // prequeue-dst-drop has no BTF marker: the side cannot be told.
    EXPECT_FALSE(check_applicability(*cat.find("prequeue-dst-drop"), timer).carries_fix.has_value());
}

TEST(FixPlan, NetnsScopedKnobsGoToEachNamespaceOnly) {
    FixCatalog cat = builtin();
    const FixDef& f = *cat.find("early-demux-off");
    ApplyTarget t;
    t.netns = {NetnsRef{"hl-a", 0}, NetnsRef{"hl-b", 0}};
    auto p = plan_changes(f, t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_EQ(p->writes.size(), 4u);
    for (auto& w : p->writes) {
        ASSERT_TRUE(w.netns.has_value());
        EXPECT_EQ(w.scope, Scope::kNetns);
        EXPECT_EQ(w.value, "0");
        EXPECT_EQ(w.fix, "early-demux-off");
    }
    EXPECT_EQ(p->writes[0].netns->name, "hl-a");
    EXPECT_EQ(p->writes[1].netns->name, "hl-b");
}

TEST(FixPlan, NoNamespaceNeedsAllowGlobal) {
    FixCatalog cat = builtin();
    auto p = plan_changes(*cat.find("early-demux-off"), ApplyTarget{});
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message().find("--netns"), std::string::npos);
    EXPECT_NE(p.error().message().find("--allow-global"), std::string::npos);
    ApplyTarget g;
    g.allow_global = true;
    p = plan_changes(*cat.find("early-demux-off"), g);
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->writes[0].netns.has_value());
}

TEST(FixPlan, GlobalKnobsNeedAllowGlobal) {
    FixCatalog cat = builtin();
    ApplyTarget t;
    t.netns = {NetnsRef{"hl-a", 0}};
    auto p = plan_changes(*cat.find("tcp-low-latency"), t);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message().find("--allow-global"), std::string::npos);
    t.allow_global = true;
    p = plan_changes(*cat.find("tcp-low-latency"), t);
    ASSERT_TRUE(p);
    ASSERT_EQ(p->writes.size(), 1u);
    EXPECT_EQ(p->writes[0].scope, Scope::kGlobal);
    EXPECT_FALSE(p->writes[0].netns.has_value());
}

TEST(FixPlan, NumaLocalPlacesTheScenarioAndPinsIrqsWhereAny) {
    FixCatalog cat = builtin();
    const FixDef& f = *cat.find("numa-local");
    ApplyTarget t;
    t.node_cpus = {2, 3};
    auto p = plan_changes(f, t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_TRUE(p->placement);
    EXPECT_EQ(p->placement->cpus, (std::vector<int>{2, 3}));
    EXPECT_TRUE(p->writes.empty());
    ASSERT_EQ(p->notes.size(), 1u);
    EXPECT_NE(p->notes[0].find("no IRQs"), std::string::npos);
    t.irqs = {24, 25};
    p = plan_changes(f, t);
    ASSERT_FALSE(p);  // IRQ affinity is machine-wide
    EXPECT_NE(p.error().message().find("--allow-global"), std::string::npos);
    t.allow_global = true;
    p = plan_changes(f, t);
    ASSERT_TRUE(p);
    ASSERT_EQ(p->writes.size(), 2u);
    EXPECT_EQ(p->writes[0].kind, KnobKind::kIrqAffinity);
    EXPECT_EQ(p->writes[0].name, "24");
    EXPECT_EQ(p->writes[0].value, "2-3");
}

// Placement fixes: the handoffs they exist to remove are the first criterion and
// the baseline must show them; throughput and CPU per operation only guard.
TEST(FixCatalog, PlacementFixesJudgeContentionFirstAndNeedItInTheBaseline) {
    FixCatalog cat = builtin();
    for (auto n : {"numa-local", "cpu-local"}) {
        SCOPED_TRACE(n);
        const FixDef& f = *cat.find(n);
        ASSERT_FALSE(f.criteria.empty());
        const Criterion& first = f.criteria.front();
        EXPECT_EQ(first.kind, CriterionKind::kExpect);
        ASSERT_EQ(first.metrics.size(), 1u);
        EXPECT_EQ(first.metrics[0].rfind("handoff.", 0), 0u) << first.metrics[0];
        ASSERT_EQ(f.preconditions.size(), 1u);
        EXPECT_EQ(f.preconditions[0].metrics, first.metrics) << "the baseline must show what the fix removes";
        EXPECT_GT(f.preconditions[0].at_least, 0);
        EXPECT_FALSE(f.preconditions[0].why.empty());
        for (auto& c : f.criteria) {
            if (c.metrics[0].rfind("scenario.", 0) == 0) {
                EXPECT_NE(c.kind, CriterionKind::kExpect) << c.describe();
            }
        }
    }
    const FixDef& local = *cat.find("cpu-local");
    EXPECT_NE(local.summary.find("analogue of numa-local"), std::string::npos);
    EXPECT_EQ(local.scenarios, std::vector<std::string>{"tcp-crr"});
    EXPECT_EQ(local.criteria.front().metrics[0], "handoff.dst_release.cross_cpu_per_op");
    EXPECT_NEAR(local.criteria.front().threshold(), 0.05, 1e-12) << "the fix arm keeps at most 5% of the handoffs";
}

TEST(FixPlan, CpuLocalKeepsTheScenarioCpusAndGivesEachItsOwnRoutes) {
    FixCatalog cat = builtin();
    ApplyTarget t;
    t.node_cpus = {0, 1};
    auto p = plan_changes(*cat.find("cpu-local"), t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_TRUE(p->placement);
    EXPECT_TRUE(p->placement->cpus.empty()) << "every CPU stays busy";
    EXPECT_TRUE(p->placement->per_cpu_routes);
    EXPECT_TRUE(p->writes.empty());
    auto numa = plan_changes(*cat.find("numa-local"), t);
    ASSERT_TRUE(numa);
    EXPECT_FALSE(numa->placement->per_cpu_routes);
}

TEST(FixCatalogDir, PreconditionsAreParsedAndChecked) {
    TempDir d;
    d.write("p.toml", wrap_fix(kChange + "[[fix.precondition]]\nmetric = [\"h.a\", \"h.b\"]\nat_least = 0.25\n"
                               "why = \"nothing to remove\"\n" + kExpect));
    FixCatalog cat = builtin();
    ASSERT_TRUE(cat.add_dir(d.path()));
    const FixDef& f = *cat.find("x");
    ASSERT_EQ(f.preconditions.size(), 1u);
    EXPECT_EQ(f.preconditions[0].metrics, (std::vector<std::string>{"h.a", "h.b"}));
    EXPECT_DOUBLE_EQ(f.preconditions[0].at_least, 0.25);
    EXPECT_EQ(f.preconditions[0].describe(), "h.a (or h.b) >= 0.25 in the baseline");
    auto pre = [](const std::string& body) { return dir_error(wrap_fix(kChange + "[[fix.precondition]]\n" + body + kExpect)); };
    EXPECT_NE(pre("metric = \"h.a\"\nwhy = \"w\"\n").find("needs \"at_least\""), std::string::npos);
    EXPECT_NE(pre("metric = \"h.a\"\nat_least = \"10%\"\nwhy = \"w\"\n").find("must be a number"), std::string::npos);
    EXPECT_NE(pre("metric = \"h.a\"\nat_least = 0\nwhy = \"w\"\n").find("must be above 0"), std::string::npos);
    EXPECT_NE(pre("metric = \"h.a\"\nat_least = 1\n").find("needs \"why\""), std::string::npos);
    EXPECT_NE(pre("metric = \"h.a\"\nat_least = 1\nwhy = \"w\"\nfloor = 2\n").find("unknown"), std::string::npos);
    std::string pair = "[[fix]]\nname = \"x\"\nmode = \"kernel-pair\"\nsummary = \"s\"\n"
                       "[[fix.precondition]]\nmetric = \"h.a\"\nat_least = 1\nwhy = \"w\"\n" + kExpect;
    EXPECT_NE(dir_error(pair).find("only runtime fixes"), std::string::npos) << dir_error(pair);
    std::string bad = wrap_fix("[[fix.change]]\ncpu_placement = \"everywhere\"\nscope = \"netns\"\n" + kExpect);
    EXPECT_NE(dir_error(bad).find("\"one-node\", \"cpu-local\" or \"cpu-set\""), std::string::npos) << dir_error(bad);
}

TEST(FixCatalogDir, AddsGoodEntriesAndIgnoresOtherFiles) {
    TempDir d;
    d.write("10-rps.toml", kGoodExtra);
    d.write("README.md", "not a fix");
    FixCatalog cat = builtin();
    auto st = cat.add_dir(d.path());
    ASSERT_TRUE(st) << st.error().message();
    const FixDef* f = cat.find("rps-off");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->changes[0].kind, ChangeKind::kSysfs);
    EXPECT_EQ(f->source, d.path() + "/10-rps.toml:2");
    EXPECT_EQ(cat.fixes().size(), builtin().fixes().size() + 1);
}

TEST(FixCatalogDir, MissingDirectoryIsAnError) {
    FixCatalog cat = builtin();
    auto st = cat.add_dir("/nonexistent-hotline-fixes");
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message().find("--fixes /nonexistent-hotline-fixes: not a directory"), std::string::npos);
}

TEST(FixCatalogDir, SyntaxErrorNamesFileAndLine) {
    std::string m = dir_error("[[fix]]\nname = \"x\"\nsummary = \"unterminated\n");
    EXPECT_NE(m.find("DIR/bad.toml:3:"), std::string::npos) << m;
}

TEST(FixCatalogDir, UnknownKeyNamesItsLine) {
    std::string m = dir_error(wrap_fix(kChange + "bogus = 1\n" + kExpect));
    EXPECT_NE(m.find("DIR/bad.toml:9: unknown key \"bogus\" in [[fix.change]]"), std::string::npos) << m;
    EXPECT_NE(m.find("known keys:"), std::string::npos);
}

TEST(FixCatalogDir, MissingNameAndMissingExpectation) {
    EXPECT_NE(dir_error("[[fix]]\nmode = \"runtime\"\nsummary = \"s\"\n").find("DIR/bad.toml:1: [[fix]] needs \"name\""),
              std::string::npos);
    std::string m = dir_error(wrap_fix(kChange));
    EXPECT_NE(m.find("DIR/bad.toml:1: fix \"x\" has no [[fix.expect]]"), std::string::npos) << m;
}

TEST(FixCatalogDir, ReportsEveryErrorInFileOrder) {
    std::string m = dir_error(wrap_fix(kChange + "bogus = 1\n" + "[[fix.expect]]\nmetric = \"m.x\"\ndown = 50\n") +
                              "[[fix]]\nname = \"Bad Name\"\nmode = \"runtime\"\nsummary = \"s\"\n");
    auto first = m.find("DIR/bad.toml:9: unknown key \"bogus\" in [[fix.change]]");
    auto second = m.find("DIR/bad.toml:12: \"down\" in [[fix.expect]] must be a percentage string");
    auto third = m.find("DIR/bad.toml:14: bad fix name");
    EXPECT_NE(first, std::string::npos) << m;
    EXPECT_NE(second, std::string::npos) << m;
    EXPECT_NE(third, std::string::npos) << m;
    EXPECT_LT(first, second) << m;
    EXPECT_LT(second, third) << m;
}

TEST(FixCatalogDir, BadScopeAndBadPercentage) {
    std::string m = dir_error(wrap_fix("[[fix.change]]\nsysctl = \"net.ipv4.ip_early_demux\"\nvalue = \"0\"\nscope = \"host\"\n" + kExpect));
    EXPECT_NE(m.find("DIR/bad.toml:8: \"scope\" must be \"netns\" or \"global\""), std::string::npos) << m;
    m = dir_error(wrap_fix(kChange + "[[fix.expect]]\nmetric = \"m.x\"\ndown = 50\n"));
    EXPECT_NE(m.find("DIR/bad.toml:11: \"down\" in [[fix.expect]] must be a percentage string"), std::string::npos) << m;
    m = dir_error(wrap_fix(kChange + "[[fix.expect]]\nmetric = \"m.x\"\ndown = \"150%\"\n"));
    EXPECT_NE(m.find("more than 100%"), std::string::npos) << m;
}

TEST(FixCatalogDir, HostileKnobNamesAreRefusedWithTheirLine) {
    for (std::string knob : {"../../etc/passwd", "/proc/sys/net/ipv4/ip_early_demux", "net.ipv4.*", "", "net..ipv4"}) {
        std::string m = dir_error(wrap_fix("[[fix.change]]\nsysctl = \"" + knob + "\"\nvalue = \"0\"\nscope = \"netns\"\n" + kExpect));
        EXPECT_NE(m.find("DIR/bad.toml:6: refused sysctl name"), std::string::npos) << knob << ": " << m;
    }
    std::string m = dir_error(wrap_fix("[[fix.change]]\nsysfs = \"class/../../etc\"\nvalue = \"0\"\nscope = \"global\"\n" + kExpect));
    EXPECT_NE(m.find("refused sysfs name"), std::string::npos) << m;
    m = dir_error(wrap_fix("[[fix.check]]\nknob = \"net/../kernel\"\n" + kChange + kExpect));
    EXPECT_NE(m.find("DIR/bad.toml:6: refused sysctl name"), std::string::npos) << m;
}

TEST(FixCatalogDir, DuplicatesAreRefused) {
    std::string dup = wrap_fix(kChange + kExpect);
    dup.replace(dup.find("\"x\""), 3, "\"early-demux-off\"");
    std::string m = dir_error(dup);
    EXPECT_NE(m.find("fix \"early-demux-off\" already exists (defined at builtin:"), std::string::npos) << m;
    m = dir_error(wrap_fix(kChange + kExpect) + wrap_fix(kChange + kExpect));
    EXPECT_NE(m.find("defined twice"), std::string::npos) << m;
}

TEST(FixCatalogDir, ModeRulesAreEnforced) {
    std::string m = dir_error(wrap_fix(kExpect));
    EXPECT_NE(m.find("runtime fix without any [[fix.change]]"), std::string::npos) << m;
    std::string pair = "[[fix]]\nname = \"x\"\nmode = \"kernel-pair\"\nsummary = \"s\"\n" + kChange + kExpect;
    EXPECT_NE(dir_error(pair).find("cannot have [[fix.change]]"), std::string::npos);
    std::string m2 = dir_error("[[fix]]\nname = \"Bad Name\"\nmode = \"runtime\"\nsummary = \"s\"\n");
    EXPECT_NE(m2.find("DIR/bad.toml:2: bad fix name"), std::string::npos) << m2;
    EXPECT_NE(dir_error("[fixes]\nx = 1\n").find("unknown top-level key \"fixes\""), std::string::npos);
}

TEST(FixRender, ShowAndListMentionApplicability) {
    FixCatalog cat = builtin();
    FakeFacts modern;
    modern.knobs = {"net.ipv4.tcp_low_latency", "net.ipv4.ip_early_demux", "net.ipv4.tcp_early_demux"};
    std::ostringstream list;
    render_fix_list_text(list, cat, &modern);
    EXPECT_NE(list.str().find("early-demux-off"), std::string::npos);
    EXPECT_NE(list.str().find("applies"), std::string::npos);
    const FixDef& f = *cat.find("tcp-low-latency");
    auto a = check_applicability(f, modern);
    std::ostringstream show;
    render_fix_text(show, f, &a);
    EXPECT_NE(show.str().find("NOT APPLICABLE: tcp_prequeue does not exist"), std::string::npos) << show.str();
    EXPECT_NE(show.str().find("093162553c33"), std::string::npos);
    auto j = to_json(f);
    EXPECT_EQ(j["name"], "tcp-low-latency");
    EXPECT_EQ(j["criteria"].size(), 4u);
    EXPECT_EQ(to_json(a)["applicable"], false);
}

TEST(FixDiff, DstFalseSharingPassesOnTheLayoutAndReportsTheRest) {
    // The `hotline diff` path: 6.1 recording vs 6.12 recording, built-in criteria.
    FixCatalog cat = builtin();
    const FixDef& f = *cat.find("dst-refcnt-false-sharing");
    LineLayout v61;
    v61.type = "dst_entry";
    v61.flagged = {"lwtstate", "rt_genid", "__use", "lastuse"};
    LineLayout v612 = v61;
    v612.flagged = {"__use", "lastuse"};
    std::vector<Trial> trials;
    for (int i = 0; i < 3; ++i) {
        Trial a{Arm::kBaseline, {{"latency.dst_release.mean_ns", 120.0 + i}}, "6.1.json"};
        Trial b{Arm::kCandidate, {{"latency.dst_release.mean_ns", 118.0 - i}}, "6.12.json"};
        add_layout_metrics(a.metrics, v61);
        add_layout_metrics(b.metrics, v612);
        trials.push_back(a);
        trials.push_back(b);
    }
    ValidateOptions o;
    o.min_each = 3;
    auto r = evaluate(f.name, f.criteria, trials, o);
    EXPECT_EQ(r.overall, Verdict::kPass) << r.reason;
    ASSERT_EQ(r.criteria[0].criterion.kind, CriterionKind::kExpect);
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kPass);
    for (std::size_t i = 1; i < r.criteria.size(); ++i) EXPECT_EQ(r.criteria[i].verdict, Verdict::kInfo);
    // The per-call latency is reported beside it, whatever it shows.
    EXPECT_TRUE(r.criteria[1].ratio.has_value());
}

// `hotline ab` boots what a kernel-pair entry names, or says which versions a
// side needs when no kernel of it is in reach.
TEST(FixCatalog, KernelPairsNameTheirKernelsOrTheVersionsTheyNeed) {
    FixCatalog cat = builtin();
    for (auto& f : cat.fixes()) {
        if (f.mode != FixMode::kKernelPair) continue;
        EXPECT_FALSE(f.kernels.baseline.empty() && f.kernels.baseline_range.empty()) << f.name;
        EXPECT_FALSE(f.kernels.fixed.empty() && f.kernels.fixed_range.empty()) << f.name;
    }
    const FixDef* dst = cat.find("dst-refcnt-false-sharing");
    ASSERT_NE(dst, nullptr);
    EXPECT_EQ(dst->kernels.baseline, "debian:6.1");
    EXPECT_EQ(dst->kernels.fixed, "debian:6.12");
    const FixDef* mix = cat.find("random-mix-timer");
    ASSERT_NE(mix, nullptr);
    EXPECT_EQ(mix->kernels.baseline, "");
    EXPECT_EQ(mix->kernels.baseline_range, "5.18-6.0");
}

TEST(FixCatalogDir, KernelsOnlyGoWithKernelPairs) {
    std::string m = dir_error(wrap_fix("baseline_kernel = \"debian:6.1\"\n" + kChange + kExpect));
    EXPECT_NE(m.find("only go with kernel-pair fixes"), std::string::npos) << m;
}
