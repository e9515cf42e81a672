// Privileged tests of handoff tracking: a pty's flush_to_ldisc work item queued
// alternately from CPU 0 and CPU 1 is handed between them on every write.
#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

#include "host_util.hpp"
#include "hotline/kernel.hpp"
#include "hotline/session.hpp"
#include "hotline/workload.hpp"

using namespace hosttest;

namespace {

struct PtyRun {
    nlohmann::json rec;
    const nlohmann::json* ldisc = nullptr;  // the flush_to_ldisc hot object, if listed
};

PtyRun run_pty(int writes, const std::string& mode) {
    PtyRun r;
    std::string f = temp_path("pty-" + mode + ".json");
    CmdResult c = run(hosttest::hotline() + " record -q -t queue_work_on --top 50 -o " + f + " -- " + PTY_PINGPONG_BIN + " " +
                      std::to_string(writes) + " " + mode);
    EXPECT_EQ(c.rc, 0) << c.err;
    r.rec = load_json(f);
    unlink(f.c_str());
    for (auto& o : r.rec["hot_objects"])
        if (o["detail"] == "flush_to_ldisc") r.ldisc = &o;
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
    EXPECT_EQ((*r.ldisc)["cross_node"], 0) << "one NUMA node: no cross-node handoffs";
    const auto* q = find_target(r.rec["totals"]["targets"], "queue_work_on");
    ASSERT_TRUE(q);
    EXPECT_GE((*q)["handoffs"]["handoffs_total"].get<std::uint64_t>(), h);
    EXPECT_EQ((*q)["handoffs"]["cross_node_total"], 0);
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
    std::uint64_t h = r.ldisc ? (*r.ldisc)["handoffs"].get<std::uint64_t>() : 0;
    EXPECT_LE(h, 2u) << "writer pinned to CPU 0: the work item stays on CPU 0";
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
    EXPECT_NE(j["analysis"]["random_mix"].get<std::string>().find("timer"), std::string::npos)
        << "6.18 mixes fast pools from a timer";
    bool dst = false, work = false;
    for (auto& l : j["analysis"]["layouts"]) {
        dst |= l["type"] == "dst_entry";
        work |= l["type"] == "work_struct";
    }
    EXPECT_TRUE(work);
    EXPECT_FALSE(dst) << "only queue_work_on was watched";
}

TEST(HandoffHost, LiveDstLayoutIsTheFixedOne) {
    CmdResult c = run(hosttest::hotline() + " probe --json -t dst_release");
    ASSERT_EQ(c.rc, 0) << c.err;
    auto j = nlohmann::json::parse(c.out);
    ASSERT_EQ(j["layouts"].size(), 1u);
    auto& l = j["layouts"][0];
    EXPECT_EQ(l["anchor"], "__rcuref");  // 6.18: after d288a162dd1c + bc9d3a9f2afc
    EXPECT_EQ(l["anchor_offset"], 64);
    std::vector<std::string> other = l["other_lines"];
    EXPECT_NE(std::find(other.begin(), other.end(), "rt_genid"), other.end());
    EXPECT_NE(std::find(other.begin(), other.end(), "lwtstate"), other.end());
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
