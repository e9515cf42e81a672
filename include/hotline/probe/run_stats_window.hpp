// SPDX-License-Identifier: Apache-2.0
// A session's own cost, timed for a window of each period.  The kernel times a
// BPF program run only while BPF_ENABLE_STATS is held, and then every run pays
// two clock reads outside the program's own run time (docs/overhead.md prices
// them); timing one period in ten cuts that price tenfold.  The runs and run
// time of the whole session are then the timed ones scaled by the share of the
// time the statistics were on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hotline/model/metrics.hpp"
#include "hotline/probe/prog_stats.hpp"

namespace hotline {

struct RunStatsTiming {
    std::chrono::milliseconds period{1000};
    // At a random offset in each period: a window fixed at the period's start
    // would always time the first session's start-up, when the programs run
    // unlike the rest of the session.
    std::chrono::milliseconds on{100};
    std::chrono::milliseconds check{100};  // off, how often the run counts are checked

    // Where `on` starts in a period: uniform over [0, period - on].
    std::chrono::milliseconds offset(std::minstd_rand& rng) const {
        std::uniform_int_distribution<std::int64_t> d(0, (period - on).count());
        return std::chrono::milliseconds(d(rng));
    }
};

// A member's attached time: the nanoseconds its programs have been attached
// for, up to now (AttachWindows::watched_ns).  Unset: attached throughout, the
// monotonic clock.
using AttachedClock = std::function<std::uint64_t()>;

// When the window opens.  Each member is timed at a random point of every
// `period` of its own attached time: a member attached for part of each period
// (a duty cycle) would otherwise be timed only where its windows and the timing
// window happened to meet, and a session of a period or two perhaps never.  A
// window opened for one member times every member attached then, and a member
// timed in its current period is not due again until its next.
class StatsSchedule {
public:
    using Clocks = std::map<int, std::uint64_t>;  // attached time by member
    StatsSchedule(RunStatsTiming timing, std::uint32_t seed) : timing_(timing), rng_(seed) {}
    void join(int id, std::uint64_t clock_ns);
    void leave(int id) { periods_.erase(id); }
    // Zero when the window is to open now; else how long to wait before asking
    // again (an attached clock runs no faster than real time), at most `check`.
    std::chrono::nanoseconds wait(const Clocks& now);
    // A window was open from `opened` to `closed`: a member whose attached
    // time moved meanwhile was timed in the period it opened in.
    void timed(const Clocks& opened, const Clocks& closed);

private:
    struct Period {
        std::uint64_t end = 0, due = 0;
        std::uint64_t seen = 0;  // the clock at the last wait()
        bool timed = false;
    };
    void roll(Period& p, std::uint64_t clock_ns);
    const RunStatsTiming timing_;
    std::minstd_rand rng_;
    std::map<int, Period> periods_;
};

// Holds BPF_ENABLE_STATS for `on` of every `period` (StatsSchedule) on a thread
// of its own, one window per process: the sessions of a process (serve's, one
// per mechanism; a recording's targets and its discovery) join it, and it
// closes with the last of them.
class RunStatsWindow {
public:
    // A session's part in the window.  While the window is off, something else
    // (another tool's descriptor, kernel.bpf_stats_enabled) may keep the
    // statistics on: each `check` of off time at whose start and end the
    // canary (RunStatsCanary) was counted counts as covered.  Where the canary
    // does not load, `runs` (the kernel's run counts of the session's
    // programs) moving while the window is off says so instead, which a slice
    // with no event cannot show.  Covered time is the member's attached time.
    class Member {
    public:
        ~Member();
        Member(const Member&) = delete;
        Member& operator=(const Member&) = delete;
        // Runs `read_counts` with the window held still (it neither opens nor
        // closes meanwhile) and returns, at the end of the read, the member's
        // attached time during which runs were timed since it joined, and its
        // attached time: the runs read and the time covered describe one span
        // however late the window's thread or the reader is scheduled.
        struct Reading {
            std::uint64_t covered_ns, now_ns;
        };
        Reading read_still(const std::function<void()>& read_counts) const {
            return window_->read_still(id_, read_counts);
        }

    private:
        friend class RunStatsWindow;
        Member(std::shared_ptr<RunStatsWindow> w, int id) : window_(std::move(w)), id_(id) {}
        std::shared_ptr<RunStatsWindow> window_;
        int id_;
    };

    static std::unique_ptr<Member> join(std::function<std::uint64_t()> runs, AttachedClock attached = {});

    RunStatsWindow();
    ~RunStatsWindow();
    RunStatsWindow(const RunStatsWindow&) = delete;
    RunStatsWindow& operator=(const RunStatsWindow&) = delete;

private:
    struct Entry {
        std::function<std::uint64_t()> runs;
        AttachedClock attached;
        std::uint64_t covered_ns = 0;  // closed windows and covered off slices
        std::uint64_t opened_at = 0;   // attached time when the open window opened
    };
    int add(std::function<std::uint64_t()> runs, AttachedClock attached);
    void remove(int id);
    void loop();
    bool wait(std::unique_lock<std::mutex>& lk, std::chrono::nanoseconds d);
    bool watch_until_due(std::unique_lock<std::mutex>& lk);
    bool watch_slice(std::unique_lock<std::mutex>& lk, std::chrono::nanoseconds d);
    bool hold_stats(std::unique_lock<std::mutex>& lk, int fd);
    StatsSchedule::Clocks clocks() const;
    std::uint64_t runs() const;
    Member::Reading read_still(int id, const std::function<void()>& read_counts) const;

    const RunStatsTiming timing_{};
    mutable std::mutex mu_;  // everything below
    std::condition_variable cv_;
    std::map<int, Entry> members_;
    int next_id_ = 0;
    std::uint64_t members_gen_ = 0;  // bumped on every join and leave
    bool open_ = false;
    bool stop_ = false;
    StatsSchedule schedule_;
    std::optional<RunStatsCanary> canary_;  // used on the window's thread only
    std::thread thread_;
};

// Turns the kernel's cumulative counts of timed runs into estimates of every
// run: each stretch between two reads that saw timed time adds its timed runs
// and run time scaled by stretch / timed time.  A read inside a closed window
// changes nothing; its stretch joins the next one.
class RunCostScaler {
public:
    // From now on (`now_ns`), with the window's covered time at that moment;
    // both in the member's attached time.
    RunCostScaler(std::uint64_t now_ns, std::uint64_t covered_ns) : last_ns_(now_ns), last_covered_ns_(covered_ns) {}
    explicit RunCostScaler(RunStatsWindow::Member::Reading at) : RunCostScaler(at.now_ns, at.covered_ns) {}
    explicit RunCostScaler(const RunStatsWindow::Member& window) : RunCostScaler(window.read_still([] {})) {}
    // `cost`: the kernel's cumulative counts; replaced by the estimates, each
    // with the kernel's count in timed_runs.
    void scale(std::vector<ProgCost>& cost, std::uint64_t covered_ns, std::uint64_t now_ns);
    // `read_counts` fills `cost` with the window held still; then the scaling.
    void read_scaled(const RunStatsWindow::Member& window, std::vector<ProgCost>& cost,
                     const std::function<void()>& read_counts) {
        const auto at = window.read_still(read_counts);
        scale(cost, at.covered_ns, at.now_ns);
    }

private:
    struct Totals {
        std::uint64_t kernel_runs = 0, kernel_ns = 0;  // at the last stretch's end
        double runs = 0, ns = 0;                        // estimates
    };
    std::map<std::pair<std::string, std::string>, Totals> progs_;
    std::uint64_t last_ns_;
    std::uint64_t last_covered_ns_;
};

}  // namespace hotline
