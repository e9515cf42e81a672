// SPDX-License-Identifier: Apache-2.0
// The agent as users run it: attach time, first report, CPU and RSS.
#include "overhead.hpp"

namespace overhead {

// --- agent ------------------------------------------------------------------------------------

std::uint64_t proc_cpu_ns(pid_t pid) {
    std::uint64_t total = 0;
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
        std::ifstream f(e.path() / "schedstat");
        std::uint64_t ns = 0;
        if (f >> ns) total += ns;
    }
    return total;
}

long status_kb(pid_t pid, const char* key) {
    std::ifstream f(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key) + 1);
    return 0;
}


struct AgentRun {
    double attach_s = 0, first_report_s = 0, cpu_pct = 0, rss_mb = 0, peak_rss_mb = 0;
};

// `hotline record` as users run it, under a dst-refcount load in this process.
Result<AgentRun> run_agent(const std::string& bin, double secs) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return make_error("pipe", errno);
    SpawnOptions so;
    so.die_with_parent = true;
    so.stdout_fd = out[1];
    so.stderr_fd = err[1];
    double t0 = monotonic_seconds();
    auto c = ChildProcess::spawn({bin, "record", "--duration", fmt::format("{}", secs), "--interval", "1s"}, so);
    close(out[1]);
    close(err[1]);
    if (!c) {
        close(out[0]);
        close(err[0]);
        return c.error();
    }
    AgentRun a;
    std::string obuf, ebuf;
    std::uint64_t cpu0 = 0;
    double tcpu0 = 0, tcpu1 = 0;
    std::uint64_t cpu1 = 0;
    double next_sample = 0;
    bool open_o = true, open_e = true;
    while (open_o || open_e) {
        pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        poll(p, 2, 100);
        char buf[4096];
        for (int i = 0; i < 2; ++i) {
            if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n <= 0) {
                (i ? open_e : open_o) = false;
                continue;
            }
            (i ? ebuf : obuf).append(buf, std::size_t(n));
        }
        double now = monotonic_seconds();
        // Attached: the plan lines are printed right after the session opened.
        if (a.attach_s == 0 && ebuf.find('\n') != std::string::npos) {
            a.attach_s = now - t0;
            cpu0 = proc_cpu_ns(c->pid());
            tcpu0 = now;
            next_sample = now + 1;
        }
        if (a.first_report_s == 0 && obuf.find("interval 1") != std::string::npos) a.first_report_s = now - t0;
        if (a.attach_s > 0 && now >= next_sample && now < tcpu0 + secs - 0.5) {
            // The last full sample before the summary and JSON writing at the end.
            cpu1 = proc_cpu_ns(c->pid());
            tcpu1 = now;
            a.rss_mb = double(status_kb(c->pid(), "VmRSS:")) / 1024;
            a.peak_rss_mb = std::max(a.peak_rss_mb, double(status_kb(c->pid(), "VmHWM:")) / 1024);
            next_sample = now + 1;
        }
    }
    close(out[0]);
    close(err[0]);
    int st = c->wait();
    if (st != 0) return make_error(fmt::format("hotline record exited with status {}: {}", st, ebuf), ECHILD);
    if (tcpu1 > tcpu0) a.cpu_pct = double(cpu1 - cpu0) / 1e9 / (tcpu1 - tcpu0) * 100;
    return a;
}

// The share of the machine's CPU time spent busy over the next `secs`
// (/proc/stat): whether "idle" held, which the bench cannot make so.
double busy_share_pct(double secs) {
    auto read = [] {
        std::ifstream f("/proc/stat");
        std::string cpu;
        std::uint64_t v[8] = {}, total = 0;
        f >> cpu;
        for (auto& x : v) f >> x, total += x;
        return std::pair{total - v[3] - v[4], total};  // not idle, not iowait
    };
    auto [b0, t0] = read();
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    auto [b1, t1] = read();
    return t1 > t0 ? 100.0 * double(b1 - b0) / double(t1 - t0) : 0;
}

// One line of the agent table: a figure of each run, its unit and its goal (0: none).
struct AgentLine {
    const char* name;
    double AgentRun::*f;
    double budget;
    const char* unit;
};

json agent_table(const std::vector<AgentRun>& runs, std::initializer_list<AgentLine> lines) {
    json ja;
    for (auto& l : lines) {
        std::vector<double> v;
        for (auto& x : runs) v.push_back(x.*l.f);
        Spread s = spread(v);
        bool miss = l.budget > 0 && s.n && s.median > l.budget;
        fmt::print("{:<40} {:>26} {:<14}{}{}\n", l.name, fmt_spread(s, 3), l.unit,
                   l.budget > 0 ? fmt::format(" target <= {}", l.budget) : "", miss ? "  MISSED" : "");
        if (l.budget > 0)
            check(fmt::format("agent {}", l.name), s.median, l.budget);
        else if (!(s.median > 0))
            failed(fmt::format("agent {}: measured {}", l.name, s.median));
        ja[l.name] = {{"value", to_json(s)}, {"unit", l.unit}};
        if (l.budget > 0) ja[l.name]["target"] = l.budget;
    }
    return ja;
}

// Start-up as the goal names it (a short record with no workload; the busy share
// before says whether the machine was otherwise idle), then the agent's steady
// cost under the dst-refcount load it profiles, where its start-up is reported
// too but measures the CPU share it gets against that load.
json agent_section(const std::string& bin, int n, double rec_s) {
    std::vector<AgentRun> idle, loaded;
    double busy = busy_share_pct(1);
    for (int r = 0; r < n; ++r) {
        auto i = run_agent(bin, 2);
        if (!i) return failed("agent, idle: " + i.error().message()), json::object();
        idle.push_back(*i);
    }
    for (int r = 0; r < n; ++r) {
        ScenarioOptions so;
        so.name = "dst-refcount";
        so.duration_s = rec_s + 5;
        auto load = Scenario::start(so);
        if (!load) return failed("agent: " + load.error().message()), json::object();
        auto a = run_agent(bin, rec_s);
        (void)(*load)->stop();
        if (!a) return failed("agent: " + a.error().message()), json::object();
        loaded.push_back(*a);
    }
    fmt::print("\n== agent start-up: `hotline record --interval 1s` with no workload, {} runs (machine {:.1f}% busy in the "
               "second before)\n",
               n, busy);
    json ja = agent_table(idle, {{kAttachIdle, &AgentRun::attach_s, 0.2, "s"},
                                 {kFirstReportIdle, &AgentRun::first_report_s, 1.2, "s"}});
    ja["busy_pct_before"] = busy;
    fmt::print("\n== agent: `hotline record --interval 1s` for {:.0f} s under dst-refcount, {} runs\n", rec_s, n);
    ja.update(agent_table(loaded, {{"attach under load", &AgentRun::attach_s, 0, "s"},
                                   {"first report under load", &AgentRun::first_report_s, 0, "s"},
                                   {"CPU, 1 s intervals", &AgentRun::cpu_pct, 0.5, "% of one core"},
                                   {"RSS, steady", &AgentRun::rss_mb, 32, "MB"},
                                   {"RSS, peak", &AgentRun::peak_rss_mb, 32, "MB"}}));
    return ja;
}

std::string default_hotline(const char* argv0) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto p = self.parent_path().parent_path().parent_path() / "hotline";  // build/tests/bench -> build
        if (std::filesystem::exists(p)) return p.string();
    }
    (void)argv0;
    return "hotline";
}

}  // namespace overhead
