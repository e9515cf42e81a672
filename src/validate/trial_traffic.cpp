// SPDX-License-Identifier: Apache-2.0
// The two kinds of trial traffic behind the validator loop.
#include "trial_traffic.hpp"

#include <fmt/format.h>

#include "hotline/base/util.hpp"
#include "hotline/session/recording.hpp"

namespace hotline {

namespace {

class ScenarioTraffic : public TrialTraffic {
public:
    ScenarioTraffic(std::unique_ptr<Scenario> s, bool per_cpu_routes) : s_(std::move(s)), per_cpu_routes_(per_cpu_routes) {}
    ~ScenarioTraffic() override { stop(); }
    std::string name() const override { return s_ ? s_->options().name : ""; }
    std::string where() const override {
        return fmt::format("scenario {} (CPUs {})", name(), format_cpulist(s_->options().cpus));
    }
    std::vector<NetnsRef> namespaces() const override {
        const Network& net = s_->network();
        std::vector<NetnsRef> out{NetnsRef{net.client().name(), 0}};
        if (net.server().name() != net.client().name()) out.push_back(NetnsRef{net.server().name(), 0});
        return out;
    }
    std::optional<std::string> refuses(const Placement& p) const override {
        if (p.per_cpu_routes && !per_cpu_routes_)
            return fmt::format("it gives each CPU's flows their own routes, which the {} scenario cannot; use "
                               "--scenario tcp-crr",
                               name());
        return std::nullopt;
    }
    bool repeats_failed_trials() const override { return true; }
    Status begin(const Placement* p, double length_s) override {
        return s_->begin_run(p ? p->cpus : std::vector<int>{}, p && p->per_cpu_routes, length_s);
    }
    bool done() override { return s_->done(); }
    std::optional<std::uint64_t> ops_so_far() const override { return s_->ops_so_far(); }
    Result<ScenarioNumbers> end() override {
        auto r = s_->end_run();
        if (!r) return r.error();
        return scenario_numbers(*r);
    }
    nlohmann::json params() const override {
        const ScenarioOptions& o = s_->options();
        return {{"name", o.name}, {"cpus", o.cpus}, {"loopback", o.loopback}};
    }
    void stop() override {
        if (!s_) return;
        (void)s_->stop();
        s_.reset();
    }

private:
    std::unique_ptr<Scenario> s_;
    bool per_cpu_routes_;
};

class HostTraffic : public TrialTraffic {
public:
    explicit HostTraffic(std::unique_ptr<LiveTraffic> t) : t_(std::move(t)) {}
    std::string name() const override { return "live"; }
    std::string where() const override {
        const LiveOptions& o = t_->options();
        if (o.command.empty()) return fmt::format("this host's own traffic, operations: {}", t_->ops_source());
        return fmt::format("this host, running `{}` (operations: {})", shell_words(o.command), t_->ops_source());
    }
    std::vector<NetnsRef> namespaces() const override { return {}; }
    std::optional<std::string> refuses(const Placement& p) const override {
        if (p.per_cpu_routes)
            return std::string("it gives each CPU's flows their own address pair inside hotline's scenario, which "
                               "cannot be done to a command's flows; validate it with --scenario tcp-crr");
        if (!p.cpus.empty() && t_->options().command.empty())
            return std::string("it moves the workload's threads, and an observed host has no command to move; give "
                               "the command after --");
        return std::nullopt;
    }
    bool repeats_failed_trials() const override { return false; }
    Status begin(const Placement* p, double length_s) override {
        if (!p) return t_->begin({}, length_s);
        return t_->begin(p->cpus, length_s, p->mem_nodes);
    }
    bool done() override { return t_->done(); }
    std::optional<std::uint64_t> ops_so_far() const override { return std::nullopt; }
    Result<ScenarioNumbers> end() override {
        auto r = t_->end();
        if (!r) return r.error();
        ScenarioNumbers n;
        n.ops = r->ops;
        n.seconds = r->seconds;
        n.cpu_seconds = r->cpu_seconds;
        n.extra = r->extra;
        return n;
    }
    nlohmann::json params() const override { return t_->params(); }
    void stop() override {}

private:
    std::unique_ptr<LiveTraffic> t_;
};

}  // namespace

std::unique_ptr<TrialTraffic> scenario_traffic(std::unique_ptr<Scenario> s, bool per_cpu_routes_possible) {
    return std::make_unique<ScenarioTraffic>(std::move(s), per_cpu_routes_possible);
}

std::unique_ptr<TrialTraffic> live_traffic(std::unique_ptr<LiveTraffic> t) {
    return std::make_unique<HostTraffic>(std::move(t));
}

}  // namespace hotline
