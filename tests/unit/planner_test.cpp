// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <map>

#include "hotline/probe/planner.hpp"

using namespace hotline;

namespace {

// Answers from a table: which (target, mechanism) pairs load, and why the rest fail.
class FakeAttacher : public Attacher {
public:
    std::map<std::string, FunctionFacts> facts;
    std::map<std::pair<std::string, Mechanism>, AttachOutcome> outcomes;
    std::vector<std::pair<std::string, Mechanism>> tried;
    // With lazy_kallsyms the kallsyms half of the facts is handed out only on request.
    bool lazy_kallsyms = false;
    bool loading = false;  // the table is still loading until someone waits for it
    std::vector<std::string> kallsyms_asked;

    FunctionFacts function_facts(const TargetDef& t) override {
        FunctionFacts f = facts[t.name];
        if (lazy_kallsyms) {
            f.in_kallsyms = f.has_range = false;
            f.kallsyms_known = false;
        }
        return f;
    }
    bool kallsyms_pending() override { return loading; }
    void kallsyms_facts(const TargetDef& t, FunctionFacts& f) override {
        loading = false;
        kallsyms_asked.push_back(t.name);
        f.in_kallsyms = facts[t.name].in_kallsyms;
        f.has_range = facts[t.name].has_range;
    }
    AttachOutcome attach(const TargetDef& t, Mechanism m) override {
        tried.push_back({t.name, m});
        auto it = outcomes.find({t.name, m});
        if (it != outcomes.end()) return it->second;
        AttachOutcome o;
        o.reason = "EPERM at load";
        return o;
    }
};

AttachOutcome ok(Fidelity f, std::string what) {
    AttachOutcome o;
    o.ok = true;
    o.fidelity = f;
    o.attach = std::move(what);
    return o;
}

PlanFacts locked_down_host() {
    PlanFacts f;
    f.btf = true;
    f.kprobes = false;
    f.lockdown = "confidentiality";
    return f;
}

FakeAttacher host_like() {
    FakeAttacher a;
    FunctionFacts present{true, true, true};
    a.facts["dst_release"] = present;
    a.facts["ipv4_dst_check"] = present;
    a.facts["queue_work_on"] = present;
    a.facts["tcp_prequeue"] = FunctionFacts{};
    a.outcomes[{"dst_release", Mechanism::kTracepoint}] = ok(Fidelity::kPartial, "skb free");
    a.outcomes[{"queue_work_on", Mechanism::kTracepoint}] = ok(Fidelity::kExact, "workqueue_queue_work");
    a.outcomes[{"ipv4_dst_check", Mechanism::kSampling}] = ok(Fidelity::kSampled, "cpu-clock");
    a.outcomes[{"dst_release", Mechanism::kSampling}] = ok(Fidelity::kSampled, "cpu-clock");
    return a;
}

// The four targets host_like() has facts for: the planner's cases, whatever
// else the registry holds.
std::vector<TargetDef> examples() {
    std::vector<TargetDef> out;
    for (const char* name : {"dst_release", "ipv4_dst_check", "tcp_prequeue", "queue_work_on"}) out.push_back(*find_target(name));
    return out;
}

}  // namespace

TEST(Planner, LockedDownHostFallsBackInOrderWithReasons) {
    FakeAttacher a = host_like();
    auto plan = make_plan(examples(), locked_down_host(), a, {});
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    const TargetPlan* d = plan->find("dst_release");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->mechanism, Mechanism::kTracepoint);
    EXPECT_EQ(d->fidelity, Fidelity::kPartial);
    ASSERT_EQ(d->rejected.size(), 2u);
    EXPECT_EQ(d->rejected[0].mechanism, Mechanism::kFentry);
    EXPECT_EQ(d->rejected[0].reason, "EPERM at load");
    EXPECT_EQ(d->rejected[1].mechanism, Mechanism::kKprobe);
    EXPECT_NE(d->rejected[1].reason.find("without kprobes"), std::string::npos);

    const TargetPlan* c = plan->find("ipv4_dst_check");
    EXPECT_EQ(c->mechanism, Mechanism::kSampling);
    EXPECT_EQ(c->fidelity, Fidelity::kSampled);
    ASSERT_EQ(c->rejected.size(), 3u);
    EXPECT_NE(c->rejected[2].reason.find("no tracepoint proxy"), std::string::npos);

    const TargetPlan* p = plan->find("tcp_prequeue");
    EXPECT_FALSE(p->observable());
    EXPECT_NE(p->unavailable_reason.find("removed in 4.14"), std::string::npos);

    EXPECT_EQ(plan->find("queue_work_on")->mechanism, Mechanism::kTracepoint);
    EXPECT_TRUE(plan->any_observable());
}

TEST(Planner, KprobePrecheckNeverTouchesTheKernel) {
    FakeAttacher a = host_like();
    auto plan = make_plan(examples(), locked_down_host(), a, {});
    ASSERT_TRUE(plan.ok());
    for (auto& [t, m] : a.tried) EXPECT_NE(m, Mechanism::kKprobe) << t;
    for (auto& [t, m] : a.tried) EXPECT_NE(t, "tcp_prequeue");
}

TEST(Planner, FirstWorkingMechanismWins) {
    FakeAttacher a = host_like();
    a.outcomes[{"dst_release", Mechanism::kFentry}] = ok(Fidelity::kExact, "fentry");
    PlanFacts f = locked_down_host();
    f.kprobes = true;
    auto plan = make_plan(examples(), f, a, {});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->find("dst_release")->mechanism, Mechanism::kFentry);
    EXPECT_TRUE(plan->find("dst_release")->rejected.empty());
    // kprobe was worth trying for the others and failed at the attacher
    EXPECT_EQ(plan->find("queue_work_on")->rejected[1].reason, "EPERM at load");
}

TEST(Planner, ForcedMechanismFailureIsAnErrorNotAFallback) {
    FakeAttacher a = host_like();
    PlanOptions o;
    o.forced = Mechanism::kFentry;
    auto plan = make_plan({*find_target("dst_release")}, locked_down_host(), a, o);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message().find("fentry for dst_release"), std::string::npos);
    EXPECT_NE(plan.error().message().find("EPERM"), std::string::npos);
    for (auto& [t, m] : a.tried) EXPECT_EQ(m, Mechanism::kFentry);
}

TEST(Planner, ForcedMechanismThatWorksIsUsed) {
    FakeAttacher a = host_like();
    PlanOptions o;
    o.forced = Mechanism::kSampling;
    auto plan = make_plan({*find_target("dst_release")}, locked_down_host(), a, o);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->targets[0].mechanism, Mechanism::kSampling);
}

TEST(Planner, ForcedOnAbsentFunctionNamesIt) {
    FakeAttacher a = host_like();
    PlanOptions o;
    o.forced = Mechanism::kTracepoint;
    auto plan = make_plan({*find_target("tcp_prequeue")}, locked_down_host(), a, o);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message().find("tcp_prequeue"), std::string::npos);
}

TEST(Planner, ForcedWithDefaultTargetsLeavesAbsentOnesUnavailable) {
    FakeAttacher a = host_like();
    PlanOptions o;
    o.forced = Mechanism::kSampling;
    o.absent_is_error = false;
    auto plan = make_plan({*find_target("dst_release"), *find_target("tcp_prequeue")}, locked_down_host(), a, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    EXPECT_FALSE(plan->find("tcp_prequeue")->observable());
    EXPECT_EQ(plan->find("dst_release")->mechanism, Mechanism::kSampling);
}

TEST(Planner, NoBtfExplainsFentry) {
    FakeAttacher a = host_like();
    PlanFacts f = locked_down_host();
    f.btf = false;
    auto plan = make_plan({*find_target("queue_work_on")}, f, a, {});
    ASSERT_TRUE(plan.ok());
    EXPECT_NE(plan->targets[0].rejected[0].reason.find("no BTF"), std::string::npos);
    EXPECT_NE(plan->targets[0].rejected[2].reason.find("BTF"), std::string::npos);
}

TEST(Planner, NothingWorksMeansUnavailable) {
    FakeAttacher a;
    a.facts["ipv4_dst_check"] = FunctionFacts{true, true, false};
    auto plan = make_plan({*find_target("ipv4_dst_check")}, locked_down_host(), a, {});
    ASSERT_TRUE(plan.ok());
    EXPECT_FALSE(plan->targets[0].observable());
    EXPECT_FALSE(plan->any_observable());
    EXPECT_EQ(plan->targets[0].rejected.size(), 4u);
    EXPECT_NE(plan->targets[0].rejected[3].reason.find("kptr_restrict"), std::string::npos);
}

// The live attacher loads /proc/kallsyms in the background: the planner must ask for
// those facts only where a decision depends on them, and decide the same way.
TEST(Planner, KallsymsFactsAreAskedOnlyWhereNeeded) {
    FakeAttacher eager = host_like();
    auto want = make_plan(examples(), locked_down_host(), eager, {});
    FakeAttacher a = host_like();
    a.lazy_kallsyms = true;
    auto plan = make_plan(examples(), locked_down_host(), a, {});
    ASSERT_TRUE(plan.ok() && want.ok());
    // BTF functions that attach by tracepoint never need kallsyms; sampling and an
    // absence check (tcp_prequeue is not in BTF) do.
    EXPECT_EQ(a.kallsyms_asked, (std::vector<std::string>{"ipv4_dst_check", "tcp_prequeue"}));
    ASSERT_EQ(plan->targets.size(), want->targets.size());
    for (std::size_t i = 0; i < want->targets.size(); ++i) {
        EXPECT_EQ(plan->targets[i].mechanism, want->targets[i].mechanism) << want->targets[i].target;
        EXPECT_EQ(plan->targets[i].rejected.size(), want->targets[i].rejected.size()) << want->targets[i].target;
        EXPECT_EQ(plan->targets[i].unavailable_reason, want->targets[i].unavailable_reason);
    }
    // With kprobes available the kprobe precheck needs kallsyms too.
    FakeAttacher k = host_like();
    k.lazy_kallsyms = true;
    PlanFacts f = locked_down_host();
    f.kprobes = true;
    auto p2 = make_plan(examples(), f, k, {});
    ASSERT_TRUE(p2.ok());
    EXPECT_EQ(k.kallsyms_asked.front(), "dst_release");
    const TargetPlan* d = p2->find("dst_release");
    ASSERT_GE(d->rejected.size(), 2u);
    EXPECT_EQ(d->rejected[1].mechanism, Mechanism::kKprobe);
    EXPECT_EQ(d->rejected[1].reason, "EPERM at load");  // attempted: it is in kallsyms
}

void expect_same_plan(const Plan& got, const Plan& want) {
    ASSERT_EQ(got.targets.size(), want.targets.size());
    for (std::size_t i = 0; i < want.targets.size(); ++i) {
        const TargetPlan& g = got.targets[i];
        const TargetPlan& w = want.targets[i];
        EXPECT_EQ(g.target, w.target);
        EXPECT_EQ(g.mechanism, w.mechanism) << w.target;
        EXPECT_EQ(g.attach, w.attach) << w.target;
        EXPECT_EQ(g.unavailable_reason, w.unavailable_reason) << w.target;
        ASSERT_EQ(g.rejected.size(), w.rejected.size()) << w.target;
        for (std::size_t r = 0; r < w.rejected.size(); ++r) {
            EXPECT_EQ(g.rejected[r].mechanism, w.rejected[r].mechanism) << w.target;
            EXPECT_EQ(g.rejected[r].reason, w.rejected[r].reason) << w.target;
        }
    }
}

// While kallsyms loads, targets that need it wait for a second pass; the plan (order,
// choices, reasons) is the one an up-front table gives.
TEST(Planner, TargetsNeedingKallsymsAreFinishedAfterTheOthers) {
    FakeAttacher eager = host_like();
    auto want = make_plan(examples(), locked_down_host(), eager, {});
    FakeAttacher a = host_like();
    a.lazy_kallsyms = true;
    a.loading = true;
    auto plan = make_plan(examples(), locked_down_host(), a, {});
    ASSERT_TRUE(plan.ok() && want.ok());
    expect_same_plan(*plan, *want);
    using M = Mechanism;
    std::vector<std::pair<std::string, Mechanism>> order = {
        {"dst_release", M::kFentry},   {"dst_release", M::kTracepoint},   {"ipv4_dst_check", M::kFentry},
        {"queue_work_on", M::kFentry}, {"queue_work_on", M::kTracepoint}, {"ipv4_dst_check", M::kSampling}};
    EXPECT_EQ(a.tried, order);
    EXPECT_EQ(a.kallsyms_asked, (std::vector<std::string>{"ipv4_dst_check", "tcp_prequeue"}));

    // A forced mechanism keeps strict target order (its first error is the first target's).
    FakeAttacher f = host_like();
    f.lazy_kallsyms = true;
    f.loading = true;
    PlanOptions po;
    po.forced = Mechanism::kTracepoint;
    std::vector<TargetDef> ts = {*find_target("dst_release"), *find_target("tcp_prequeue"),
                                 *find_target("queue_work_on")};
    auto fp = make_plan(ts, locked_down_host(), f, po);
    ASSERT_FALSE(fp.ok());
    EXPECT_NE(fp.error().message().find("tracepoint for tcp_prequeue"), std::string::npos);
    std::vector<std::pair<std::string, Mechanism>> forced_order = {{"dst_release", M::kTracepoint}};
    EXPECT_EQ(f.tried, forced_order);  // queue_work_on, after the error, is never tried
}

TEST(Catalog, MechanismNamesRoundTrip) {
    for (Mechanism m : kMechanismOrder) EXPECT_EQ(parse_mechanism(to_string(m)), m);
    EXPECT_FALSE(parse_mechanism("uprobe").has_value());
    std::string names;
    for (const auto& t : builtin_targets()) names += (names.empty() ? "" : ", ") + t.name;
    EXPECT_EQ(builtin_target_names(), names);
}

TEST(Catalog, ForcedMechanismOption) {
    auto none = parse_forced_mechanism("");
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value()) << "empty lets the planner choose";
    auto kp = parse_forced_mechanism("kprobe");
    ASSERT_TRUE(kp.ok());
    EXPECT_EQ(*kp, Mechanism::kKprobe);
    for (const char* bad : {"fenty", "unavailable", "auto", "KPROBE", " kprobe"}) {
        auto r = parse_forced_mechanism(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().message(),
                  fmt::format("unknown mechanism \"{}\"; use fentry, kprobe, tracepoint or sampling, "
                              "or leave --mechanism out to let the planner choose",
                              bad));
    }
}

TEST(Catalog, FuncSpecParsing) {
    auto a = parse_func_spec("tcp_v4_rcv");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->name, "tcp_v4_rcv");
    EXPECT_EQ(a->object, ObjectKind::kNone);
    EXPECT_TRUE(a->custom);
    auto b = parse_func_spec("dst_release:arg0");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->object, ObjectKind::kArg);
    EXPECT_EQ(b->object_arg, 0);
    auto c = parse_func_spec("sock_def_readable:arg4");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->object_arg, 4);
    for (const char* bad : {"", ":arg0", "f:arg5", "f:argx", "f:1", "bad name", "f;rm"}) {
        auto r = parse_func_spec(bad);
        EXPECT_FALSE(r.ok()) << bad;
        if (!r.ok()) {
            EXPECT_NE(r.error().message().find("--func"), std::string::npos);
        }
    }
}
