// SPDX-License-Identifier: Apache-2.0
// Handoff tracking in windows (SessionOptions::track_percent, record's
// --handoff-share) beside a session tracking throughout, on one pty's flush
// work item: a touch before a window off and one after it are no handoff, and
// the windows' handoffs, scaled, stand for the whole time's.
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <sched.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "session_pair.hpp"

using namespace hotline;
using Clock = std::chrono::steady_clock;

namespace {

// One pty whose bytes the test writes from a CPU of its choosing: each write
// queues the pty's flush work item on the writing CPU.
class Pty {
public:
    Pty() {
        termios raw{};
        cfmakeraw(&raw);
        EXPECT_EQ(openpty(&master_, &slave_, nullptr, &raw, nullptr), 0);
    }
    ~Pty() {
        close(master_);
        close(slave_);
    }
    // Writes one byte at a time from `cpu` until `until`, each read back.
    void write_from(int cpu, Clock::time_point until) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
        while (Clock::now() < until) {
            char c = 'x';
            ASSERT_EQ(write(master_, &c, 1), 1);
            pollfd p{slave_, POLLIN, 0};
            ASSERT_EQ(poll(&p, 1, 1000), 1) << "no byte back within 1 s";
            ASSERT_EQ(read(slave_, &c, 1), 1);
            std::this_thread::sleep_for(std::chrono::microseconds(300));
        }
    }

private:
    int master_ = -1, slave_ = -1;
};

// The handoffs of the pty's flush work item(s) in a snapshot's objects (an
// object is listed once handed over).
std::uint64_t flush_handoffs(const Snapshot& s) {
    std::uint64_t n = 0;
    for (const auto& o : s.objects)
        if (o.detail == "flush_to_ldisc") n += o.handoffs;
    return n;
}

std::uint64_t windowed_calls(const Snapshot& s) {
    const TargetCounters* t = s.find("queue_work_on");
    return t && t->has_handoffs ? t->handoffs.total(t->handoffs.windowed) : 0;
}

SessionOptions queue_work_tracking() {
    SessionOptions o;
    o.targets = {"queue_work_on"};
    o.latency = false;
    return o;
}

void restore_affinity(const Topology& topo) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : topo.cpus) CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace

// Windows of 0.5 s every 2 s from the session's opening: the item is touched on
// CPU A in the first window, moved to CPU B while tracking is off, and touched
// on B in the second window.  Tracked throughout that is one handoff; in
// windows, B's first touch opens the item's owner for the new window.
TEST(TrackWindowsHost, ATouchBeforeAWindowOffIsNoHandoffAfterIt) {
    Topology topo;
    ASSERT_NO_FATAL_FAILURE(hosttest::require_two_cpus(topo));
    const int a = topo.cpus[0], b = topo.cpus[1];
    SessionOptions windowed = queue_work_tracking();
    windowed.track_percent = 25;
    auto full = Session::open(queue_work_tracking(), probe_kernel(), topo);
    ASSERT_TRUE(full) << full.error().message();
    auto part = Session::open(windowed, probe_kernel(), topo);
    ASSERT_TRUE(part) << part.error().message();
    const auto t0 = Clock::now();
    using ms = std::chrono::milliseconds;
    Pty pty;
    pty.write_from(a, t0 + ms(300));  // first window: [0, 0.5 s)
    std::this_thread::sleep_for(t0 + ms(900) - Clock::now());
    pty.write_from(b, t0 + ms(1600));  // off: [0.5, 2 s)
    std::this_thread::sleep_for(t0 + ms(2100) - Clock::now());
    pty.write_from(b, t0 + ms(2400));  // second window: [2, 2.5 s)
    restore_affinity(topo);
    ASSERT_LT(Clock::now() - t0, ms(2500)) << "the machine was too slow to keep to the windows";
    auto fs = (*full)->read(), ps = (*part)->read();
    ASSERT_TRUE(fs && ps);
    ASSERT_GE(flush_handoffs(*fs), 1u) << "tracked throughout, the item's move from CPU " << a << " to " << b;
    ASSERT_GT(windowed_calls(*ps), 1000u) << "the windows saw too few of the writes";
    EXPECT_EQ(flush_handoffs(*ps), 0u) << "a touch before a window off paired with one after it";
}

// The writer on every CPU in turn for three periods: the windows see about
// their share of the calls, and their handoffs per call, scaled, are the whole
// time's.
TEST(TrackWindowsHost, TheWindowsHandoffsScaledAreTheWholeTimes) {
    Topology topo;
    ASSERT_NO_FATAL_FAILURE(hosttest::require_two_cpus(topo));
    SessionOptions windowed = queue_work_tracking();
    windowed.track_percent = 25;
    hosttest::SessionPair run;
    ASSERT_NO_FATAL_FAILURE(hosttest::run_session_pair(queue_work_tracking(), windowed, topo, 3, run));
    const Interval fi = delta(run.full0, run.full1), pi = delta(run.part0, run.part1);
    EXPECT_EQ(pi.d.track_percent, 25);
    EXPECT_EQ(fi.d.track_percent, 100);
    EXPECT_NEAR(pi.tracking_seconds() / pi.seconds(), 0.25, 0.05);
    const TargetCounters* ft = fi.d.find("queue_work_on");
    const TargetCounters* pt = pi.d.find("queue_work_on");
    ASSERT_TRUE(ft && pt && ft->has_handoffs && pt->has_handoffs);
    ASSERT_GT(ft->total_calls(), 3000u) << "the pty writer queued too little work";
    const double windowed_share = double(pt->handoffs.total(pt->handoffs.windowed)) / double(pt->total_calls());
    EXPECT_NEAR(windowed_share, 0.25, 0.1) << "the windows' share of the calls";
    EXPECT_DOUBLE_EQ(fi.handoff_scale(*ft), 1.0);
    const double hf = double(flush_handoffs(run.full1) - flush_handoffs(run.full0)) / double(ft->total_calls());
    const double hp = double(flush_handoffs(run.part1) - flush_handoffs(run.part0)) * pi.handoff_scale(*pt) /
                      double(pt->total_calls());
    ASSERT_GT(hf, 0.1) << "the writer did not hand its work item over";
    EXPECT_NEAR(hp / hf, 1.0, 0.15) << "handoffs per call: windows scaled " << hp << ", throughout " << hf;
}
