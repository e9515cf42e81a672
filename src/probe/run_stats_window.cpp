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

void StatsSchedule::join(int id, std::uint64_t clock_ns) {
    Period p;
    p.end = p.seen = clock_ns;
    roll(p, clock_ns);
    periods_[id] = p;
}

// To the period `clock_ns` falls in, with its own random point.
void StatsSchedule::roll(Period& p, std::uint64_t clock_ns) {
    const auto period = std::uint64_t(std::chrono::nanoseconds(timing_.period).count());
    if (clock_ns < p.end) return;
    const std::uint64_t start = p.end + (clock_ns - p.end) / period * period;
    p.end = start + period;
    p.due = start + std::uint64_t(std::chrono::nanoseconds(timing_.offset(rng_)).count());
    p.timed = false;
}

std::chrono::nanoseconds StatsSchedule::wait(const Clocks& now) {
    std::chrono::nanoseconds wait = timing_.check;
    for (auto& [id, p] : periods_) {
        auto c = now.find(id);
        if (c == now.end()) continue;
        roll(p, c->second);
        // A due member whose clock stands still is detached: the window waits
        // for it to attach again, not opening on nothing to time.
        const bool moved = c->second > p.seen;
        p.seen = c->second;
        const std::uint64_t until = p.timed ? p.end : p.due;
        if (c->second < until) wait = std::min(wait, std::chrono::nanoseconds(until - c->second));
        else if (!p.timed && moved) return std::chrono::nanoseconds(0);
    }
    return wait;
}

void StatsSchedule::timed(const Clocks& opened, const Clocks& closed) {
    for (auto& [id, p] : periods_) {
        auto o = opened.find(id), c = closed.find(id);
        if (o == opened.end() || c == closed.end() || c->second <= o->second) continue;
        roll(p, o->second);
        p.timed = true;
    }
}

std::unique_ptr<RunStatsWindow::Member> RunStatsWindow::join(std::function<std::uint64_t()> runs,
                                                             AttachedClock attached) {
    std::lock_guard<std::mutex> g(g_window_mu);
    auto w = g_window.lock();
    if (!w) {
        w = std::make_shared<RunStatsWindow>();
        g_window = w;
    }
    const int id = w->add(std::move(runs), std::move(attached));
    return std::unique_ptr<Member>(new Member(w, id));
}

int RunStatsWindow::add(std::function<std::uint64_t()> runs, AttachedClock attached) {
    if (!attached) attached = monotonic_ns;
    std::lock_guard<std::mutex> g(mu_);
    const int id = next_id_++;
    Entry& e = members_[id];
    e.runs = std::move(runs);
    e.attached = std::move(attached);
    // Joining an open window: covered from now, never runs without time.
    e.opened_at = e.attached();
    schedule_.join(id, e.opened_at);
    ++members_gen_;
    return id;
}

void RunStatsWindow::remove(int id) {
    std::lock_guard<std::mutex> g(mu_);
    members_.erase(id);
    schedule_.leave(id);
    ++members_gen_;
}

RunStatsWindow::Member::~Member() {
    window_->remove(id_);
    // The last member's reset joins the thread: under g_window_mu, so a session
    // opened meanwhile starts a new window rather than finding a closing one.
    std::lock_guard<std::mutex> g(g_window_mu);
    window_.reset();
}

RunStatsWindow::RunStatsWindow() : schedule_(timing_, std::random_device{}()), canary_(RunStatsCanary::load()) {
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

std::uint64_t RunStatsWindow::runs() const {
    std::uint64_t sum = 0;
    for (auto& [id, e] : members_) sum += e.runs();
    return sum;
}

StatsSchedule::Clocks RunStatsWindow::clocks() const {
    StatsSchedule::Clocks c;
    for (auto& [id, e] : members_) c[id] = e.attached();
    return c;
}

RunStatsWindow::Member::Reading RunStatsWindow::read_still(int id, const std::function<void()>& read_counts) const {
    std::lock_guard<std::mutex> g(mu_);
    read_counts();
    auto it = members_.find(id);
    if (it == members_.end()) return {0, 0};
    const Entry& e = it->second;
    const std::uint64_t now = e.attached();
    return {e.covered_ns + (open_ ? now - std::min(now, e.opened_at) : 0), now};
}

// true when told to stop.
bool RunStatsWindow::wait(std::unique_lock<std::mutex>& lk, std::chrono::nanoseconds d) {
    return cv_.wait_for(lk, d, [this] { return stop_; });
}

// Off until the schedule says a member is due.  true when told to stop.
bool RunStatsWindow::watch_until_due(std::unique_lock<std::mutex>& lk) {
    for (auto d = schedule_.wait(clocks()); d.count() > 0; d = schedule_.wait(clocks()))
        if (watch_slice(lk, d)) return true;
    return false;
}

// Off for `d`: a slice timed by someone else's statistics covers each member's
// attached time in it.  true when told to stop.
bool RunStatsWindow::watch_slice(std::unique_lock<std::mutex>& lk, std::chrono::nanoseconds d) {
    const auto from = clocks();
    bool covered;
    if (canary_) {
        const bool on_at_start = canary_->counted();
        if (wait(lk, d)) return true;
        covered = on_at_start && canary_->counted();
    } else {
        // A run that began before the descriptor closed is still counted after
        // it: at most one per CPU.
        const std::uint64_t in_flight = std::uint64_t(std::max(libbpf_num_possible_cpus(), 1));
        const std::uint64_t gen = members_gen_, seen = runs();
        if (wait(lk, d)) return true;
        // A session that joined or left moved the sum: no judgement then.
        covered = members_gen_ == gen && runs() > seen + in_flight;
    }
    if (!covered) return false;
    for (auto& [id, e] : members_) {
        const std::uint64_t now = e.attached();
        if (auto f = from.find(id); f != from.end()) e.covered_ns += now - std::min(now, f->second);
    }
    return false;
}

// The statistics on for `on` through `fd`, which is closed.  The covered time
// runs from before the descriptor was opened to after it is closed: a thread
// preempted at either end counts time without runs, never runs without time.
// true when told to stop.
bool RunStatsWindow::hold_stats(std::unique_lock<std::mutex>& lk, int fd) {
    const bool stopping = wait(lk, timing_.on);
    close(fd);
    const auto closed = clocks();
    StatsSchedule::Clocks opened;
    for (auto& [id, e] : members_) {
        opened[id] = e.opened_at;
        e.covered_ns += closed.at(id) - std::min(closed.at(id), e.opened_at);
    }
    open_ = false;
    schedule_.timed(opened, closed);
    return stopping;
}

void RunStatsWindow::loop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
        if (watch_until_due(lk)) return;
        for (auto& [id, e] : members_) e.opened_at = e.attached();
        int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
        if (fd < 0) {
            // Without CAP_SYS_ADMIN only kernel.bpf_stats_enabled can time runs:
            // watch for it a whole period, and count the period as the members'.
            const auto opened = clocks();
            for (auto left = std::chrono::nanoseconds(timing_.period); left.count() > 0; left -= timing_.check)
                if (watch_slice(lk, std::min(left, std::chrono::nanoseconds(timing_.check)))) return;
            schedule_.timed(opened, clocks());
            continue;
        }
        open_ = true;
        if (hold_stats(lk, fd)) return;
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
