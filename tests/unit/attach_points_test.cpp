// SPDX-License-Identifier: Apache-2.0
// Typed attach points read from BTF, and discover's slots chosen from them, on
// a BTF built here: a tracepoint's hidden __data is not an argument, pointers
// reach their struct through typedefs and const, scalars are not objects.
#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <memory>

#include "hotline/kernel/attach_points.hpp"
#include "hotline/model/discover_abi.h"
#include "hotline/probe/discovery.hpp"

namespace hotline {
namespace {

struct BtfDeleter {
    void operator()(struct btf* b) const { btf__free(b); }
};

// btf_trace_sched_waking(void *, struct task_struct *)
// btf_trace_sched_switch(void *, bool, struct task_struct *, const task_t *, unsigned int)
// btf_trace_plain(void *, int); tcp_v4_rcv(struct sk_buff *); tcp_tw(int, struct sock *)
std::unique_ptr<struct btf, BtfDeleter> sample_btf() {
    std::unique_ptr<struct btf, BtfDeleter> b(btf__new_empty());
    struct btf* p = b.get();
    int integer = btf__add_int(p, "int", 4, BTF_INT_SIGNED);
    int task = btf__add_struct(p, "task_struct", 64);
    int skb = btf__add_struct(p, "sk_buff", 64);
    int sock = btf__add_struct(p, "sock", 64);
    int voidp = btf__add_ptr(p, 0);
    int taskp = btf__add_ptr(p, task);
    int task_t = btf__add_typedef(p, "task_t", task);
    int const_task = btf__add_const(p, task_t);
    int const_taskp = btf__add_ptr(p, const_task);
    auto trace = [&](const char* name, std::vector<int> params) {
        int proto = btf__add_func_proto(p, 0);
        btf__add_func_param(p, "__data", voidp);
        for (int t : params) btf__add_func_param(p, "x", t);
        btf__add_typedef(p, name, btf__add_ptr(p, proto));
    };
    auto func = [&](const char* name, std::vector<int> params) {
        int proto = btf__add_func_proto(p, integer);
        for (int t : params) btf__add_func_param(p, "x", t);
        btf__add_func(p, name, BTF_FUNC_GLOBAL, proto);
    };
    trace("btf_trace_sched_waking", {taskp});
    trace("btf_trace_sched_switch", {integer, taskp, const_taskp, integer});
    trace("btf_trace_plain", {integer});
    func("tcp_v4_rcv", {btf__add_ptr(p, skb)});
    func("tcp_tw", {integer, btf__add_ptr(p, sock)});
    return b;
}

TEST(AttachPoints, TracepointArgumentsCountAfterTheHiddenData) {
    auto b = sample_btf();
    auto tps = typed_attach_points(b.get(), AttachKind::kTracepoint, {});
    ASSERT_EQ(tps.size(), 2u);
    EXPECT_EQ(tps[0].name, "sched_waking");
    ASSERT_EQ(tps[0].args.size(), 1u);
    EXPECT_EQ(tps[0].args[0].index, 0);
    EXPECT_EQ(tps[0].args[0].type, "task_struct");
    EXPECT_EQ(tps[1].name, "sched_switch");
    ASSERT_EQ(tps[1].args.size(), 2u);
    EXPECT_EQ(tps[1].args[0].index, 1);
    EXPECT_EQ(tps[1].args[1].index, 2);
    EXPECT_EQ(tps[1].args[1].type, "task_struct") << "through a const typedef";
}

TEST(AttachPoints, FunctionsByGlob) {
    auto b = sample_btf();
    auto fns = typed_attach_points(b.get(), AttachKind::kFunction, {"tcp_*"});
    ASSERT_EQ(fns.size(), 2u);
    EXPECT_EQ(fns[0].args[0].type, "sk_buff");
    EXPECT_EQ(fns[1].args[0].index, 1);
    EXPECT_TRUE(typed_attach_points(b.get(), AttachKind::kFunction, {"udp_*"}).empty());
    EXPECT_TRUE(typed_attach_points(b.get(), AttachKind::kTracepoint, {"tcp_*"}).empty());
}

TEST(AttachPoints, AGlobWithAnArgumentKeepsOnlyThatArgument) {
    auto b = sample_btf();
    auto next = typed_attach_points(b.get(), AttachKind::kTracepoint, {"sched_switch:2"});
    ASSERT_EQ(next.size(), 1u);
    ASSERT_EQ(next[0].args.size(), 1u);
    EXPECT_EQ(next[0].args[0].index, 2);
    // An index with no struct behind it drops the attach point; a bare name keeps all.
    EXPECT_TRUE(typed_attach_points(b.get(), AttachKind::kTracepoint, {"sched_switch:0"}).empty());
    auto both = typed_attach_points(b.get(), AttachKind::kTracepoint, {"sched_switch:2", "sched_*"});
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[1].args.size(), 2u);
    auto fn = typed_attach_points(b.get(), AttachKind::kFunction, {"tcp_*:1"});
    ASSERT_EQ(fn.size(), 1u);
    EXPECT_EQ(fn[0].name, "tcp_tw");
    // An index past any int keeps nothing, and says so by matching nothing.
    EXPECT_TRUE(typed_attach_points(b.get(), AttachKind::kTracepoint, {"sched_switch:99999999999"}).empty());
}

TEST(DiscoverSets, NamedSetsExpandAndAnUnknownOneIsRefused) {
    auto none = expand_tracepoint_sets({});
    ASSERT_TRUE(none);
    EXPECT_EQ(*none, kDefaultDiscoverTracepoints);
    auto both = expand_tracepoint_sets({"@default", "@busy", "napi_*"});
    ASSERT_TRUE(both);
    EXPECT_EQ(both->size(), kDefaultDiscoverTracepoints.size() + kBusyTracepoints.size() + 1);
    EXPECT_EQ(both->back(), "napi_*");
    auto bad = expand_tracepoint_sets({"@packets"});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("@packets"), std::string::npos) << bad.error().message();
}

TEST(DiscoverSlots, TypesFilterAndTheCapIsCounted) {
    auto b = sample_btf();
    auto tps = typed_attach_points(b.get(), AttachKind::kTracepoint, {});
    std::vector<DiscoverRefusal> refused;
    std::size_t over = 0;
    auto all = discover_slots(tps, {}, 64, &refused, &over);
    EXPECT_EQ(all.size(), 3u);
    EXPECT_EQ(over, 0u);
    auto two = discover_slots(tps, {}, 2, &refused, &over);
    EXPECT_EQ(two.size(), 2u);
    EXPECT_EQ(over, 1u);
    auto none = discover_slots(tps, {"sock"}, 64, &refused, &over);
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(all[1].label(), "tracepoint sched_switch arg 1");
}

TEST(DiscoverSlots, ArgumentsBeyondTheTemplateAreRefusedByName) {
    TypedAttachPoint p{AttachKind::kFunction, "f", {{HL_DISC_ARGS, "sock"}, {0, "sk_buff"}}};
    std::vector<DiscoverRefusal> refused;
    std::size_t over = 0;
    auto slots = discover_slots({p}, {}, 64, &refused, &over);
    ASSERT_EQ(slots.size(), 1u);
    EXPECT_EQ(slots[0].type, "sk_buff");
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_NE(refused[0].reason.find("sock"), std::string::npos);
}

}  // namespace
}  // namespace hotline
