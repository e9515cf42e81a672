// SPDX-License-Identifier: Apache-2.0
#include "hotline/probe/run_stats_window.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

namespace {
std::mutex g_window_mu;
std::weak_ptr<RunStatsWindow> g_window;
}  // namespace

std::unique_ptr<RunStatsWindow::Member> RunStatsWindow::join(std::function<std::uint64_t()> runs) {
    std::lock_guard<std::mutex> g(g_window_mu);
    auto w = g_window.lock();
    if (!w) {
        w = std::make_shared<RunStatsWindow>();
        g_window = w;
    }
    std::lock_guard<std::mutex> m(w->members_mu_);
    int id = w->next_id_++;
    w->members_.emplace(id, std::move(runs));
    ++w->members_gen_;
    return std::unique_ptr<Member>(new Member(w, id));
}

RunStatsWindow::Member::~Member() {
    {
        std::lock_guard<std::mutex> m(window_->members_mu_);
        window_->members_.erase(id_);
        ++window_->members_gen_;
    }
    // The last member's reset joins the thread: under g_window_mu, so a session
    // opened meanwhile starts a new window rather than finding a closing one.
    std::lock_guard<std::mutex> g(g_window_mu);
    window_.reset();
}

RunStatsWindow::RunStatsWindow() : offsets_(std::random_device{}()) {
    // ShutdownSignals blocks SIGINT and SIGTERM only once sessions are open.
    thread_ = thread_with_signals_blocked([this] { loop(); });
}

RunStatsWindow::~RunStatsWindow() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

RunStatsWindow::Seen RunStatsWindow::runs() const {
    std::lock_guard<std::mutex> m(members_mu_);
    Seen s{0, members_gen_};
    for (auto& [id, f] : members_) s.runs += f();
    return s;
}

std::uint64_t RunStatsWindow::covered_ns() const {
    std::lock_guard<std::mutex> g(mu_);
    return covered_ns_ + (open_since_ ? monotonic_ns() - open_since_ : 0);
}

RunStatsWindow::Member::Reading RunStatsWindow::read_still(const std::function<void()>& read_counts) const {
    std::lock_guard<std::mutex> g(mu_);
    read_counts();
    const std::uint64_t now = monotonic_ns();
    return {covered_ns_ + (open_since_ ? now - open_since_ : 0), now};
}

// true when told to stop.
bool RunStatsWindow::wait(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds d) {
    return cv_.wait_for(lk, d, [this] { return stop_; });
}

// Off for `off`, in slices: a slice whose runs were counted anyway was timed by
// someone else's statistics.  true when told to stop.
bool RunStatsWindow::watch_off(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds off) {
    // A run that began before the descriptor closed is still counted after it:
    // at most one per CPU.
    const std::uint64_t in_flight = std::uint64_t(std::max(libbpf_num_possible_cpus(), 1));
    Seen seen = runs();
    for (auto left = off; left.count() > 0; left -= timing_.check) {
        const std::uint64_t from = monotonic_ns();
        if (wait(lk, std::min(left, timing_.check))) return true;
        const Seen now_seen = runs();
        // A session that joined or left moved the sum: no judgement then.
        if (now_seen.gen == seen.gen && now_seen.runs > seen.runs + in_flight) covered_ns_ += monotonic_ns() - from;
        seen = now_seen;
    }
    return false;
}

// The statistics on for `on` through `fd`, which is closed.  The covered time
// runs from before the descriptor was opened to after it is closed: a thread
// preempted at either end counts time without runs, never runs without time.
// true when told to stop.
bool RunStatsWindow::hold_stats(std::unique_lock<std::mutex>& lk, int fd, std::uint64_t opened_ns) {
    open_since_ = opened_ns;
    bool stopping = wait(lk, timing_.on);
    close(fd);
    covered_ns_ += monotonic_ns() - open_since_;
    open_since_ = 0;
    return stopping;
}

void RunStatsWindow::loop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
        const auto before = timing_.offset(offsets_);
        if (watch_off(lk, before)) return;
        const std::uint64_t opening = monotonic_ns();
        int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
        if (fd < 0) {
            // Without CAP_SYS_ADMIN only kernel.bpf_stats_enabled can time runs:
            // watch for it the whole period.
            if (watch_off(lk, timing_.period - before)) return;
            continue;
        }
        if (hold_stats(lk, fd, opening) || watch_off(lk, timing_.period - timing_.on - before)) return;
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
