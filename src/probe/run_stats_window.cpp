#include "hotline/run_stats_window.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "hotline/util.hpp"

namespace hotline {

RunStatsWindow::RunStatsWindow(RunStatsTiming timing, std::function<std::uint64_t()> runs)
    : timing_(timing), runs_(std::move(runs)), start_ns_(monotonic_ns()) {
    thread_ = std::thread([this] { loop(); });
}

RunStatsWindow::~RunStatsWindow() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

std::uint64_t RunStatsWindow::covered_ns() const {
    std::lock_guard<std::mutex> g(mu_);
    return covered_ns_ + (open_since_ ? monotonic_ns() - open_since_ : 0);
}

int RunStatsWindow::error() const {
    std::lock_guard<std::mutex> g(mu_);
    return error_;
}

// true when told to stop.
bool RunStatsWindow::wait(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds d) {
    return cv_.wait_for(lk, d, [this] { return stop_; });
}

void RunStatsWindow::loop() {
    // A run that began before the descriptor closed is still counted after it:
    // at most one per CPU.
    const std::uint64_t in_flight = std::uint64_t(std::max(libbpf_num_possible_cpus(), 1));
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
        int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
        if (fd < 0) {
            error_ = errno;
            return;
        }
        open_since_ = monotonic_ns();
        bool stopping = wait(lk, timing_.on);
        close(fd);
        covered_ns_ += monotonic_ns() - open_since_;
        open_since_ = 0;
        if (stopping) return;
        // Off, in slices: a slice whose runs were counted anyway was timed by
        // someone else's statistics.
        std::uint64_t runs = runs_();
        for (auto left = timing_.period - timing_.on; left.count() > 0; left -= timing_.check) {
            const std::uint64_t from = monotonic_ns();
            if (wait(lk, std::min(left, timing_.check))) return;
            const std::uint64_t now_runs = runs_();
            if (now_runs > runs + in_flight) covered_ns_ += monotonic_ns() - from;
            runs = now_runs;
        }
    }
}

void RunCostScaler::scale(std::vector<ProgCost>& cost, std::uint64_t covered_ns, std::uint64_t now_ns) {
    const bool stretch_ends = covered_ns > last_covered_ns_ && now_ns > last_ns_;
    // Timed time cannot exceed the stretch; the clamp only guards rounding.
    const double factor = stretch_ends ? std::max(1.0, double(now_ns - last_ns_) / double(covered_ns - last_covered_ns_))
                                       : 1.0;
    for (auto& c : cost) {
        Totals& t = progs_[{c.target, c.program}];
        if (stretch_ends) {
            t.runs += double(c.run_cnt - std::min(c.run_cnt, t.kernel_runs)) * factor;
            t.ns += double(c.run_time_ns - std::min(c.run_time_ns, t.kernel_ns)) * factor;
            t.kernel_runs = c.run_cnt;
            t.kernel_ns = c.run_time_ns;
        }
        c.timed_runs = c.run_cnt;
        c.run_cnt = std::uint64_t(std::llround(t.runs));
        c.run_time_ns = std::uint64_t(std::llround(t.ns));
    }
    if (stretch_ends) {
        last_ns_ = now_ns;
        last_covered_ns_ = covered_ns;
    }
}

}  // namespace hotline
