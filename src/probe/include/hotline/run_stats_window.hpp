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
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hotline/metrics.hpp"

namespace hotline {

struct RunStatsTiming {
    std::chrono::milliseconds period{1000};
    std::chrono::milliseconds on{100};  // at the start of each period
    std::chrono::milliseconds check{100};  // off, how often the run counts are checked
};

// Holds BPF_ENABLE_STATS for `on` of every `period` on a thread of its own.
class RunStatsWindow {
public:
    // `runs` sums the kernel's run counts of the programs being timed: runs
    // counted while the window is off mean something else (another tool's
    // descriptor, kernel.bpf_stats_enabled) keeps the statistics on, and each
    // `check` of off time in which that is seen counts as covered.
    RunStatsWindow(RunStatsTiming timing, std::function<std::uint64_t()> runs);
    ~RunStatsWindow();
    RunStatsWindow(const RunStatsWindow&) = delete;
    RunStatsWindow& operator=(const RunStatsWindow&) = delete;

    // CLOCK_MONOTONIC nanoseconds when the first window opened.
    std::uint64_t start_ns() const { return start_ns_; }
    // Nanoseconds since start_ns() during which runs were timed, up to now.
    std::uint64_t covered_ns() const;
    // errno of a refused BPF_ENABLE_STATS (then nothing is timed), else 0.
    int error() const;

private:
    void loop();
    bool wait(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds d);

    const RunStatsTiming timing_;
    const std::function<std::uint64_t()> runs_;
    const std::uint64_t start_ns_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::uint64_t covered_ns_ = 0;  // closed windows
    std::uint64_t open_since_ = 0;  // nonzero while a window is open
    int error_ = 0;
    std::thread thread_;
};

// Turns the kernel's cumulative counts of timed runs into estimates of every
// run: each stretch between two reads that saw timed time adds its timed runs
// and run time scaled by stretch / timed time.  A read inside a closed window
// changes nothing; its stretch joins the next one.
class RunCostScaler {
public:
    explicit RunCostScaler(std::uint64_t start_ns) : last_ns_(start_ns) {}
    // `cost`: the kernel's cumulative counts; replaced by the estimates, each
    // with the kernel's count in timed_runs.
    void scale(std::vector<ProgCost>& cost, std::uint64_t covered_ns, std::uint64_t now_ns);

private:
    struct Totals {
        std::uint64_t kernel_runs = 0, kernel_ns = 0;  // at the last stretch's end
        double runs = 0, ns = 0;                        // estimates
    };
    std::map<std::pair<std::string, std::string>, Totals> progs_;
    std::uint64_t last_ns_;
    std::uint64_t last_covered_ns_ = 0;
};

}  // namespace hotline
