// SPDX-License-Identifier: Apache-2.0
// The target registry: every entry complete, and every BPF program an entry names
// present in the built objects.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "files.hpp"
#include "golden_util.hpp"

#include "hotline/model/abi.h"
#include "hotline/model/mechanism.hpp"
#include "hotline/probe/proxy_programs.hpp"
#include "hotline/targets/targets.hpp"

namespace hotline {
namespace {

TEST(TargetsRegistry, EveryEntryIsComplete) {
    std::set<std::string> names;
    for (auto& t : builtin_targets()) {
        SCOPED_TRACE(t.name);
        EXPECT_FALSE(t.name.empty());
        EXPECT_TRUE(names.insert(t.name).second) << "duplicate name";
        EXPECT_FALSE(t.role.empty()) << "no role";
        EXPECT_FALSE(t.custom);
        if (t.object != ObjectKind::kNone) {
            EXPECT_FALSE(t.object_type.empty()) << "an object kind without its type";
            EXPECT_GE(t.object_arg, 0) << "an object kind without its argument";
            EXPECT_LE(t.object_arg, 4);
        }
        EXPECT_LE(t.remote_cpu_arg, 4);
        if (t.finding) {
            EXPECT_FALSE(t.finding->btf_struct.empty());
            EXPECT_FALSE(t.finding->btf_member.empty());
            EXPECT_FALSE(t.finding->symbol.empty());
            EXPECT_NE(t.finding->describe, nullptr);
        }
    }
}

TEST(TargetsRegistry, EveryProxyNamesItsProgramsAndSlot) {
    std::set<std::uint32_t> slots;
    for (auto& t : builtin_targets()) {
        if (!t.proxy) continue;
        SCOPED_TRACE(t.name);
        EXPECT_FALSE(t.proxy->description.empty()) << "a proxy without its description";
        EXPECT_NE(t.proxy->fidelity, Fidelity::kNone);
        EXPECT_NE(t.proxy->fidelity, Fidelity::kSampled);
        EXPECT_FALSE(t.proxy->programs.empty()) << "a proxy without its programs";
        for (auto& p : t.proxy->programs) {
            EXPECT_FALSE(p.tracepoint.empty());
            EXPECT_FALSE(p.count.empty());
            EXPECT_FALSE(p.track.empty());
            EXPECT_FALSE(p.empty.empty());
            EXPECT_FALSE(p.sees.empty()) << p.tracepoint << ": what its counts stand for";
            EXPECT_NE(p.fidelity, Fidelity::kNone) << p.tracepoint;
            EXPECT_NE(p.fidelity, Fidelity::kSampled) << p.tracepoint;
            // Fidelity values go from exact to none: the whole is no better than a part.
            EXPECT_GE(int(t.proxy->fidelity), int(p.fidelity)) << p.tracepoint;
            EXPECT_EQ(find_proxy_program(p.count), &p);
            EXPECT_EQ(find_proxy_program(p.track), &p);
            // The workqueue attribution's queue side in the proxy: both or neither, and
            // only where the target attributes work.
            EXPECT_EQ(p.count_wq.empty(), p.track_wq.empty()) << p.tracepoint;
            if (!p.track_wq.empty()) {
                EXPECT_TRUE(t.workqueue_attribution) << p.track_wq;
                EXPECT_EQ(find_proxy_program(p.count_wq), &p);
                EXPECT_EQ(find_proxy_program(p.track_wq), &p);
            }
        }
        EXPECT_LT(t.proxy->hits_slot, std::uint32_t(HL_FIRST_SLOT)) << "slots from HL_FIRST_SLOT on are for direct probes";
        EXPECT_TRUE(slots.insert(t.proxy->hits_slot).second) << "two proxies count into one slot";
        EXPECT_EQ(missing_proxy_programs(t), std::vector<std::string>{});
    }
}

TEST(TargetsRegistry, DstReleaseSeesSocketHeldRoutesWhereFentryIsRefused) {
    const TargetDef* t = find_target("dst_release");
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->proxy);
    const ProxyProgram* p = find_proxy_program("hl_tp_tcp_destroy_sock_track");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->tracepoint, "tcp_destroy_sock");
    EXPECT_EQ(p->fidelity, Fidelity::kPartial);
    // The socket-route programs belong to dst_release's proxy: one owner table.
    bool in_dst_release = false;
    for (auto& q : t->proxy->programs) in_dst_release |= &q == p;
    EXPECT_TRUE(in_dst_release);
}

TEST(TargetsRegistry, QueueWorkOnsProxyCanDoTheQueueSideOfTheAttribution) {
    const TargetDef* t = find_target("queue_work_on");
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->proxy);
    ASSERT_EQ(t->proxy->programs.size(), 1u);
    EXPECT_EQ(t->proxy->programs[0].track_wq, "hl_tp_queue_work_track_wq");
    EXPECT_EQ(find_proxy_program(""), nullptr) << "an empty name is no program";
}

TEST(TargetsRegistry, FindsTargetsAndProxyPrograms) {
    for (auto& t : builtin_targets()) EXPECT_EQ(find_target(t.name), &t);
    EXPECT_EQ(find_target("no_such_function"), nullptr);
    EXPECT_EQ(find_proxy_program("hl_fentry"), nullptr);
}

// docs/usage.md's rows of the tracepoint mechanism, one per proxy tracepoint, as
// the registry says: what it attaches, what it sees, at which fidelity.
std::vector<std::string> usage_doc_proxy_rows() {
    std::vector<std::string> rows;
    for (auto& t : builtin_targets()) {
        if (!t.proxy) continue;
        for (auto& p : t.proxy->programs)
            rows.push_back(fmt::format("| {:<10} | `{}` → `tp_btf/{}`: {} | {} |", rows.empty() ? "tracepoint" : "",
                                       t.name, p.tracepoint, p.sees, to_string(p.fidelity)));
    }
    return rows;
}

std::string usage_doc_path() { return std::string(HOTLINE_FIXTURES) + "/../../docs/usage.md"; }

// The document's lines with the tracepoint rows (from the first "| tracepoint"
// row through the last row before "| sampling") replaced by `rows`.
std::vector<std::string> with_proxy_rows(const std::vector<std::string>& lines, const std::vector<std::string>& rows,
                                         bool* found) {
    std::vector<std::string> out;
    std::size_t i = 0;
    for (; i < lines.size() && !lines[i].starts_with("| tracepoint "); ++i) out.push_back(lines[i]);
    *found = i < lines.size();
    while (i < lines.size() && !lines[i].starts_with("| sampling ")) ++i;
    out.insert(out.end(), rows.begin(), rows.end());
    for (; i < lines.size(); ++i) out.push_back(lines[i]);
    return out;
}

TEST(TargetsRegistry, UsageDocListsEveryProxyTracepoint) {
    auto text = testlib::read_file(usage_doc_path());
    ASSERT_TRUE(text) << usage_doc_path();
    auto lines = golden::split_lines(*text);
    bool found = false;
    auto expected = with_proxy_rows(lines, usage_doc_proxy_rows(), &found);
    ASSERT_TRUE(found) << "docs/usage.md has no \"| tracepoint\" row in its mechanism table";
    if (expected == lines) return;
    std::string joined;
    for (std::size_t i = 0; i < expected.size(); ++i) joined += expected[i] + (i + 1 < expected.size() ? "\n" : "");
    if (golden::update_requested()) {
        std::ofstream(usage_doc_path(), std::ios::binary | std::ios::trunc) << joined;
        ADD_FAILURE() << "HOTLINE_UPDATE_GOLDEN=1: rewrote docs/usage.md's tracepoint rows; review the diff";
        return;
    }
    ADD_FAILURE() << "docs/usage.md's tracepoint rows differ from the target registry; "
                  << golden::first_difference(*text, joined) << "\n  (regenerate with HOTLINE_UPDATE_GOLDEN=1)";
}

}  // namespace
}  // namespace hotline
