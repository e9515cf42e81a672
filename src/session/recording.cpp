// SPDX-License-Identifier: Apache-2.0
// The record engine: the session, what drives the events (a scenario, the
// churn or a command), the intervals read so far and why the run stopped.
#include "hotline/session/recording.hpp"

#include <signal.h>

#include <algorithm>
#include <fmt/format.h>

#include "hotline/base/util.hpp"
#include "hotline/workload/workload.hpp"
#include "discover_analysis.hpp"
#include "hotline/kernel/btf_layout.hpp"
#include "recording_analysis.hpp"

namespace hotline {

namespace {

class RecordingImpl final : public Recording {
public:
    RecordingImpl(TracingSetup s, std::vector<int> wl_cpus, std::unique_ptr<Session> session, const KernelInfo& k,
                  const Topology& topo)
        : s_(std::move(s)), wl_cpus_(std::move(wl_cpus)), session_(std::move(session)),
          rec_(k, topo, session_->plan()) {}
    Status open_discovery(const Topology& topo);

    const Plan& plan() const override { return session_->plan(); }
    const SessionInfo& info() const override { return session_->info(); }
    RecordingWriter& writer() override { return rec_; }
    Status run(ShutdownSignals& signals, const RecordingHooks& hooks) override;
    Interval whole() const override { return delta(start_, prev_); }
    const std::string& stop_reason() const override { return stop_reason_; }
    int exit_status() const override { return exit_status_; }
    void detach() override {
        discovery_.reset();
        session_.reset();
    }

private:
    template <class... Args>
    void say(fmt::format_string<Args...> f, Args&&... args) {
        if (hooks_.log) *hooks_.log << "hotline: " << fmt::format(f, std::forward<Args>(args)...) << "\n";
    }
    Status prepare_scenario();
    Status start();
    Status loop(ShutdownSignals& signals);
    Status finish();
    void emit(const Snapshot& now);
    double wait_seconds() const;
    void handle_signal(int sig);
    void check_ends();

    const TracingSetup s_;
    const std::vector<int> wl_cpus_;
    std::unique_ptr<Session> session_;
    std::unique_ptr<Discovery> discovery_;
    std::map<std::string, nlohmann::json> layouts_;  // of the discovered types
    RecordingWriter rec_;
    RecordingHooks hooks_;
    std::unique_ptr<Scenario> scen_;
    std::unique_ptr<ChurnWorkload> churn_;
    std::optional<ChildProcess> child_;
    Snapshot start_, prev_;
    Snapshot last_start_;  // where the last emitted interval began
    double next_ = 0;
    bool stop_ = false;
    std::string stop_reason_ = "duration reached";
    int exit_status_ = -1;
    RecordedRun run_;
    std::uint64_t ops_prev_ = 0;
};

// A built-in scenario's network (and any server) is built before the first
// snapshot: its setup, seconds under emulation, is then neither recorded as
// traffic nor taken from the traffic's time.  A command starts with the
// network, so with one the whole scenario starts after the first snapshot.
Status RecordingImpl::prepare_scenario() {
    if (!s_.scenario || !s_.scenario->command.empty()) return ok_status();
    auto sc = Scenario::prepare(*s_.scenario);
    if (!sc) return sc.error();
    scen_ = std::move(*sc);
    return ok_status();
}

Status RecordingImpl::start() {
    auto first = session_->read();
    if (!first) return first.error();
    start_ = prev_ = *first;
    next_ = start_.t + s_.interval;
    if (s_.scenario) {
        if (scen_) {
            if (auto st = scen_->begin_run(); !st) return st;
        } else {
            auto sc = Scenario::start(*s_.scenario);
            if (!sc) return sc.error();
            scen_ = std::move(*sc);
        }
        say("scenario {} on CPUs {}", s_.scenario->name, format_cpulist(scen_->options().cpus));
    }
    if (s_.workload == "churn" || s_.workload == "churn-split") {
        ChurnOptions co;
        co.cpus = wl_cpus_;
        co.split = s_.workload == "churn-split";
        auto w = ChurnWorkload::start(co);
        if (!w) return w.error();
        churn_ = std::move(*w);
        say("{} workload on CPUs {}", s_.workload, format_cpulist(wl_cpus_));
    }
    if (!s_.command.empty() && !scen_) {
        auto c = ChildProcess::spawn(s_.command);
        if (!c) return c.error();
        child_.emplace(std::move(*c));
    }
    return ok_status();
}

void RecordingImpl::emit(const Snapshot& now) {
    std::optional<std::uint64_t> ops;
    if (auto so_far = scen_ ? scen_->ops_so_far() : std::nullopt) {
        ops = *so_far - std::min(*so_far, ops_prev_);
        ops_prev_ = *so_far;
    }
    if (stop_ && !run_.intervals.empty() && tail_joins_last_interval(now.t - prev_.t, s_.interval, ops)) {
        Interval joined = delta(last_start_, now);
        rec_.replace_last_interval(joined);
        run_.intervals.back() = joined;
        if (ops && !run_.interval_ops.empty()) run_.interval_ops.back() += *ops;
        prev_ = now;
        return;
    }
    if (ops) run_.interval_ops.push_back(*ops);
    Interval iv = delta(prev_, now);
    rec_.add_interval(iv);
    run_.intervals.push_back(iv);
    if (hooks_.on_interval) hooks_.on_interval(iv);
    last_start_ = prev_;
    prev_ = now;
}

double RecordingImpl::wait_seconds() const {
    double now = monotonic_seconds();
    double until = next_;
    if (s_.duration > 0 && !scen_) until = std::min(until, start_.t + s_.duration);
    if (scen_) until = std::min(until, now + 0.1);  // notice the scenario's end promptly
    return std::max(0.0, until - now);
}

void RecordingImpl::handle_signal(int sig) {
    if (!is_shutdown_signal(sig)) return;  // SIGCHLD only wakes the loop
    stop_ = true;
    stop_reason_ = fmt::format("stopped by {}", signal_name(sig));
    if (child_) child_->signal(sig == SIGINT ? SIGINT : SIGTERM);
}

void RecordingImpl::check_ends() {
    if (child_ && child_->poll(&exit_status_)) {
        stop_ = true;
        stop_reason_ = fmt::format("command exited with status {}", exit_status_);
        child_.reset();
    }
    if (scen_ && scen_->done()) {
        stop_ = true;
        stop_reason_ = "scenario finished";
    }
}

Status RecordingImpl::loop(ShutdownSignals& signals) {
    while (!stop_) {
        handle_signal(signals.wait(wait_seconds()));
        check_ends();
        double now = monotonic_seconds();
        // A scenario was given the duration as its traffic time and ends itself.
        if (s_.duration > 0 && !scen_ && now >= start_.t + s_.duration) stop_ = true;
        if (now < next_ && !stop_) continue;
        // The churn ends before the last snapshot: every call its connections
        // make is then counted, and workload.connections covers the counted
        // window exactly (stopping after it left the last connections, a few
        // percent under emulation, uncounted but in the connection count).
        if (stop_ && churn_) churn_->stop();
        auto snap = session_->read();
        if (!snap) return snap.error();
        // The last snapshot is always kept, however soon after the one before
        // it: the events between them are the command's last ones.
        if (stop_ || snap->t - prev_.t > 1e-3) emit(*snap);
        while (next_ <= now) next_ += s_.interval;
        // Without --duration the run could outgrow what `diff` reads back.
        if (!stop_ && run_.intervals.size() >= kMaxRecordingIntervals) {
            stop_ = true;
            stop_reason_ = fmt::format("the limit of {} intervals was reached", kMaxRecordingIntervals);
        }
    }
    return ok_status();
}

Status RecordingImpl::finish() {
    if (churn_) {
        churn_->stop();
        if (!churn_->error().empty()) say("workload: {}", churn_->error());
        say("churn workload made {} connections", churn_->connections());
        rec_.set("workload", {{"name", s_.workload}, {"cpus", wl_cpus_}, {"connections", churn_->connections()}});
        run_.whole_ops.ops = double(churn_->connections());
        run_.whole_ops.seconds = whole().seconds();
    }
    if (child_) {
        child_->signal(SIGTERM);
        exit_status_ = child_->wait();
    }
    if (scen_) {
        auto res = scen_->stop();
        if (!res) return res.error();
        if (hooks_.log) render_scenario_text(*hooks_.log, *res);
        rec_.set("scenario", to_json(*res));
        if (res->command_status) exit_status_ = *res->command_status;
        run_.numbers = run_.whole_ops = scenario_numbers(*res);
    }
    run_.nominal_interval_s = s_.interval;
    run_.whole = whole();
    add_recording_analysis(rec_, *session_, run_);
    if (discovery_) {
        auto r = discovery_->read();
        if (!r) return r.error();
        rec_.set("discover", discover_analysis(*discovery_, *r, layouts_, run_.whole.seconds(), kDiscoverListed));
    }
    rec_.finish(run_.whole, exit_status_, s_.command);
    return ok_status();
}

Status RecordingImpl::run(ShutdownSignals& signals, const RecordingHooks& hooks) {
    hooks_ = hooks;
    Status st = prepare_scenario();
    if (st) st = start();
    if (st) st = loop(signals);
    if (st) st = finish();
    return st;
}

// A struct's fields by cache line: {"type", "lines": [{"line", "fields",
// "written_by_every_user"}]}, the last naming refcounts, atomics and locks.
nlohmann::json lines_json(const std::string& type, const std::vector<FieldPos>& fields) {
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& f : fields) {
        std::uint32_t line = f.offset / kCacheLine;
        if (lines.empty() || lines.back()["line"] != line)
            lines.push_back({{"line", line}, {"fields", nlohmann::json::array()},
                             {"written_by_every_user", nlohmann::json::array()}});
        std::string name = f.path.substr(std::min(f.path.size(), type.size() + 1));
        lines.back()["fields"].push_back(name);
        if (written_by_every_user(f.type)) lines.back()["written_by_every_user"].push_back(name + " (" + f.type + ")");
    }
    return {{"type", type}, {"lines", lines}};
}

// The typed attach points, after the targets' session: its attach time is the
// targets' alone.  The layouts of every type a slot passes are read now, while
// BTF is loaded.
Status RecordingImpl::open_discovery(const Topology& topo) {
    if (!s_.discover) return ok_status();
    auto btf = KernelBtf::load();
    if (!btf) return btf.error();
    auto d = Discovery::open(*s_.discover, *btf, topo);
    if (!d) return d.error();
    discovery_ = std::move(*d);
    for (const auto& slot : discovery_->slots())
        if (!layouts_.count(slot.type))
            if (auto fields = flatten_struct(btf->raw(), slot.type)) layouts_[slot.type] = lines_json(slot.type, *fields);
    return ok_status();
}

}  // namespace

Result<std::unique_ptr<Recording>> Recording::open(TracingSetup setup, std::vector<int> workload_cpus,
                                                   const KernelInfo& kernel, const Topology& topo) {
    auto session = Session::open(setup.session, kernel, topo);
    if (!session) return session.error();
    auto r = std::make_unique<RecordingImpl>(std::move(setup), std::move(workload_cpus), std::move(*session), kernel,
                                             topo);
    if (auto st = r->open_discovery(topo); !st) return st.error();
    const SessionInfo& info = r->info();
    nlohmann::json layouts = nlohmann::json::array();
    for (auto& l : info.layouts) layouts.push_back(to_json(l));
    r->writer().set("analysis", {{"layouts", layouts}, {"notes", info.notes}, {"random_mix", info.random_mix},
                                 {"workqueue_programs", info.workq}});
    return std::unique_ptr<Recording>(std::move(r));
}

}  // namespace hotline
