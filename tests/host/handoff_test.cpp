// SPDX-License-Identifier: Apache-2.0
// Privileged tests of handoff tracking: a pty's flush_to_ldisc work item queued
// alternately from CPU 0 and CPU 1 is handed between them on every write.
// Whether those CPUs share a node, and the kernel's BTF, come from
// tests/lib/machine_facts.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

#include "host_util.hpp"
#include "machine_facts.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/workload/workload.hpp"

using namespace hosttest;
using hostfacts::MachineFacts;

namespace {

// Every pty's flush work item is a flush_to_ldisc work_struct: the machine's
// own terminals (a CI runner's, a guest's console) list theirs beside the
// test's.  Hot objects carry no address, so the test's item is told by its
// scale: `ldisc` is the one with the most handoffs, `ldisc_objects` all of them.
struct PtyRun {
    nlohmann::json rec;
    const nlohmann::json* ldisc = nullptr;
    int ldisc_objects = 0;
};

PtyRun run_pty(int writes, const std::string& mode) {
    PtyRun r;
    std::string f = temp_path("pty-" + mode + ".json");
    CmdResult c = run(hosttest::hotline() + " record -q -t queue_work_on --handoff-share 100 --top 50 -o " + f + " -- " + PTY_PINGPONG_BIN + " " +
                      std::to_string(writes) + " " + mode);
    EXPECT_EQ(c.rc, 0) << c.err;
    r.rec = load_json(f);
    unlink(f.c_str());
    for (auto& o : r.rec["hot_objects"]) {
        if (o["detail"] != "flush_to_ldisc") continue;
        ++r.ldisc_objects;
        if (!r.ldisc || o["handoffs"].get<std::uint64_t>() > (*r.ldisc)["handoffs"].get<std::uint64_t>()) r.ldisc = &o;
    }
    return r;
}

}  // namespace

TEST(HandoffHost, AlternatingWriterHandsTheWorkItemEveryTime) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_FAIL() << "needs 2 CPUs";
    const int writes = 2000;
    PtyRun r = run_pty(writes, "alt");
    ASSERT_NE(r.ldisc, nullptr) << "flush_to_ldisc work item not among the hot objects";
    std::uint64_t h = (*r.ldisc)["handoffs"];
    // One handoff per write after the first; a write may find the work still
    // pending (not queued again) — allow 5% of those, and no more than one extra
    // handoff per write.
    EXPECT_GE(h, std::uint64_t(writes * 0.95) - 1);
    EXPECT_LE(h, std::uint64_t(writes));
    EXPECT_EQ((*r.ldisc)["type"], "work_struct");
    // Every handoff of the work item is between CPU 0 and CPU 1: all of them
    // cross nodes or none does.
    const MachineFacts& mf = MachineFacts::get();
    const bool apart = mf.node_of(0) != mf.node_of(1);
    EXPECT_EQ((*r.ldisc)["cross_node"], apart ? h : 0) << mf.why({"nodes"}) << "\nhotline: " << r.ldisc->dump();
    const auto* q = find_target(r.rec["totals"]["targets"], "queue_work_on");
    ASSERT_TRUE(q);
    EXPECT_GE((*q)["handoffs"]["handoffs_total"].get<std::uint64_t>(), h);
    if (mf.nodes_with_cpus() == 1) {
        EXPECT_EQ((*q)["handoffs"]["cross_node_total"], 0) << mf.why({"nodes"}) << "\nhotline: " << (*q)["handoffs"];
    } else {
        EXPECT_GE((*q)["handoffs"]["cross_node_total"].get<std::uint64_t>(), apart ? h : 0)
            << mf.why({"nodes"}) << "\nhotline: " << (*q)["handoffs"];
    }
    // The recording names objects by id only, never by address.
    EXPECT_EQ(r.rec.dump().find("0xffff"), std::string::npos);
}

TEST(HandoffHost, PinnedWriterHandsNothing) {
    PtyRun r = run_pty(2000, "pinned");
    // "No handoffs" means something only when the work item was seen: the
    // workqueue attribution counts it queued once per write (~2000; 5% may find
    // it still pending).  Hot objects list only objects with handoffs, so an
    // absent flush_to_ldisc object then means 0.
    const auto& wq = r.rec["totals"]["workqueue"];
    ASSERT_TRUE(wq.is_object()) << "no workqueue attribution in the recording";
    EXPECT_GE(wq["work_functions"].value("flush_to_ldisc", 0), 1900) << wq["work_functions"].dump(1);
    // The test's own item has no handoff (a hot object lists only objects with
    // some), but another pty's may: none may have a share of the writes that only
    // a handoff counted where there was none would give (one per write, or one
    // every few), which the machine's terminals never come near in 2,000 writes.
    std::uint64_t h = r.ldisc ? (*r.ldisc)["handoffs"].get<std::uint64_t>() : 0;
    EXPECT_LE(h, 2000u / 20) << "writer pinned to CPU 0: the work item stays on CPU 0 ("
                             << r.ldisc_objects << " flush_to_ldisc objects with handoffs listed)";
}

TEST(HandoffHost, CountOnlyModeTracksNothing) {
    std::string f = temp_path("noh.json");
    CmdResult c = run(hosttest::hotline() + " record -q -t queue_work_on --no-handoffs -o " + f + " -- " + PTY_PINGPONG_BIN +
                      " 200 alt");
    ASSERT_EQ(c.rc, 0) << c.err;
    auto j = load_json(f);
    unlink(f.c_str());
    const auto* q = find_target(j["totals"]["targets"], "queue_work_on");
    ASSERT_TRUE(q);
    EXPECT_FALSE(q->contains("handoffs"));
    EXPECT_TRUE(j["hot_objects"].empty());
}

TEST(HandoffHost, WorkqueueAttributionNamesTheWorkFunction) {
    std::string f = temp_path("wq.json");
    CmdResult c = run(hosttest::hotline() + " record -q -t queue_work_on -o " + f + " -- " + PTY_PINGPONG_BIN + " 500 alt");
    ASSERT_EQ(c.rc, 0) << c.err;
    auto j = load_json(f);
    unlink(f.c_str());
    auto& w = j["totals"]["workqueue"];
    ASSERT_TRUE(w.is_object());
    EXPECT_GE(w["work_functions"].value("flush_to_ldisc", 0), 475);
    EXPECT_GE(w["queue_to_execute"]["count"].get<std::uint64_t>(), 475u);
    EXPECT_EQ(w["irqs"].size(), std::size_t(sysconf(_SC_NPROCESSORS_CONF)));
    // How the kernel mixes interrupt randomness, as its BTF says.
    const MachineFacts& mf = MachineFacts::get();
    const std::string mix = mf.fast_pool_mix();
    const std::string said = mix == "timer_list"    ? "runs from a per-CPU timer"
                             : mix == "work_struct" ? "is queued with queue_work_on"
                                                    : "is not in this kernel";
    EXPECT_NE(j["analysis"]["random_mix"].get<std::string>().find(said), std::string::npos)
        << mf.why({"fast_pool_mix"}) << "\nhotline: " << j["analysis"]["random_mix"];
    bool dst = false, work = false;
    for (auto& l : j["analysis"]["layouts"]) {
        dst |= l["type"] == "dst_entry";
        work |= l["type"] == "work_struct";
    }
    EXPECT_TRUE(work);
    EXPECT_FALSE(dst) << "only queue_work_on was watched";
}

// The layout hotline reports for dst_entry is the kernel's BTF: the refcount
// field and its offset, and which watched fields sit on other cache lines.
TEST(HandoffHost, LiveDstLayoutIsTheKernels) {
    const MachineFacts& mf = MachineFacts::get();
    const hostfacts::DstLayout& want = mf.dst();
    CmdResult c = run(hosttest::hotline() + " probe --json -t dst_release");
    ASSERT_EQ(c.rc, 0) << c.err;
    auto j = nlohmann::json::parse(c.out);
    ASSERT_EQ(j["layouts"].size(), 1u);
    auto& l = j["layouts"][0];
    const std::string why = mf.why({"dst_entry"}) + "\nhotline: " + l.dump();
    EXPECT_EQ(l["anchor"], want.refcount) << why;
    EXPECT_EQ(l["anchor_offset"], want.refcount_offset) << why;
    std::vector<std::string> other = l["other_lines"];
    auto elsewhere = [&](const std::string& f) { return std::find(other.begin(), other.end(), f) != other.end(); };
    const int line = want.refcount_offset / 64;
    EXPECT_EQ(elsewhere("rt_genid"), want.rt_genid_offset / 64 != line) << why;
    EXPECT_EQ(elsewhere("lwtstate"), want.lwtstate_offset / 64 != line) << why;
}

// `serve` reads one session from concurrent scrape threads: reads must not race
// on the session's shared state (object ids, the owner-table mappings).
TEST(HandoffHost, ConcurrentReadsOfOneSessionAgree) {
    auto topo = hotline::read_topology();
    ASSERT_TRUE(topo) << topo.error().message();
    hotline::SessionOptions so;
    so.targets = {"queue_work_on"};
    so.latency = false;
    so.workq = false;
    auto s = hotline::Session::open(so, hotline::probe_kernel(), *topo);
    ASSERT_TRUE(s) << s.error().message();
    // A work item moving CPU on every write: a hot object with handoffs in every read.
    hotline::PtyOptions po;
    po.cpus = topo->cpus;
    po.writes_per_cpu = 1;
    po.pause_us = 0;
    auto w = hotline::PtyWorkload::start(po);
    ASSERT_TRUE(w) << w.error().message();
    constexpr int kThreads = 8, kReads = 500;
    std::vector<int> failed(kThreads, 0);
    std::vector<std::map<std::uint64_t, std::string>> ids(kThreads);  // id -> work function
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; ++i)
        ts.emplace_back([&, i] {
            for (int r = 0; r < kReads; ++r) {
                auto snap = (*s)->read();
                if (!snap) {
                    ++failed[std::size_t(i)];
                    continue;
                }
                for (auto& o : snap->objects) ids[std::size_t(i)][o.id] = o.detail;
            }
        });
    for (auto& t : ts) t.join();
    (*w)->stop();
    EXPECT_EQ((*w)->error(), "");
    std::map<std::uint64_t, std::string> all;
    for (int i = 0; i < kThreads; ++i) {
        EXPECT_EQ(failed[std::size_t(i)], 0) << "thread " << i;
        for (auto& [id, fn] : ids[std::size_t(i)]) {
            auto [it, fresh] = all.emplace(id, fn);
            // One id never stands for two work items seen with different functions.
            if (!fresh && !fn.empty() && !it->second.empty()) {
                EXPECT_EQ(it->second, fn) << "id " << id;
            }
        }
    }
    bool ldisc = false;
    for (auto& [id, fn] : all) ldisc |= fn == "flush_to_ldisc";
    EXPECT_TRUE(ldisc) << "the pty's flush_to_ldisc work item was never among the hot objects";
}
