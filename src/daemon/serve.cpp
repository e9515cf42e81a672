// SPDX-License-Identifier: Apache-2.0
// `hotline serve`: attaches the configured targets once, keeps them attached, and
// serves /metrics, /healthz and /plan until SIGTERM, then detaches everything.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "http_server.hpp"
#include "negotiation.hpp"
#include "hotline/diagnose/diagnose.hpp"
#include "hotline/model/exit_codes.hpp"
#include "hotline/base/log.hpp"
#include "hotline/report/output.hpp"
#include "hotline/report/prometheus.hpp"
#include "hotline/daemon/serve.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"
#include "serve_config.hpp"

namespace hotline::daemon {

namespace {

template <class... Args>
void say(fmt::format_string<Args...> f, Args&&... args) {
    log_at(LogLevel::kInfo, f, std::forward<Args>(args)...);
}

template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
    log_at(LogLevel::kWarn, f, std::forward<Args>(args)...);
}

// Before exiting: the error as a log line (the one way serve reports one).
int log_fail(const Error& e, int exit_code) {
    log_line(LogLevel::kError, e.message());
    return exit_code;
}

// The systemd readiness protocol: one datagram to $NOTIFY_SOCKET (see sd_notify(3)).
void notify_systemd(const std::string& msg) {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (!path || !*path) return;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::size_t len = std::strlen(path);
    if (len >= sizeof sa.sun_path || (path[0] != '/' && path[0] != '@')) return;
    std::memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0';  // abstract namespace
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    sendto(fd, msg.data(), msg.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&sa),
           socklen_t(offsetof(sockaddr_un, sun_path) + len));
    close(fd);
}

// Targets sharing a mechanism choice share one Session.
struct Attachment {
    std::vector<std::unique_ptr<Session>> sessions;
    Plan plan;  // every configured target, in configuration order
};

Result<Attachment> attach_targets(const ServeConfig& cfg, const KernelInfo& k, const Topology& topo) {
    std::vector<std::pair<std::optional<Mechanism>, std::vector<std::string>>> groups;
    if (cfg.targets.empty()) groups.push_back({std::nullopt, {}});
    for (const auto& t : cfg.targets) {
        auto g = std::find_if(groups.begin(), groups.end(), [&](auto& x) { return x.first == t.mechanism; });
        if (g == groups.end()) g = groups.insert(groups.end(), {t.mechanism, {}});
        g->second.push_back(t.name);
    }
    Attachment out;
    std::vector<TargetPlan> planned;
    for (const auto& [mech, names] : groups) {
        TracingOptions to = cfg.probe;
        to.targets = names;
        to.mechanism = mech ? std::string(to_string(*mech)) : "";
        auto so = check_tracing_options(to);
        auto s = so ? Session::open(so->session, k, topo) : Result<std::unique_ptr<Session>>(so.error());
        if (!s) {
            std::string why = s.error().message();
            if (cfg.strict)
                return make_error(fmt::format("cannot attach {} (mechanism {}): {}",
                                              names.empty() ? std::string("the built-in targets") : fmt::format("{}", fmt::join(names, ", ")),
                                              mech ? std::string(to_string(*mech)) : "auto", why),
                                  0, "fix the configuration, or drop --strict to serve what attaches");
            say("warning: cannot attach {}: {}", fmt::join(names, ", "), why);
            for (const auto& n : names) {
                TargetPlan tp;
                tp.target = n;
                tp.unavailable_reason = why;
                planned.push_back(std::move(tp));
            }
            continue;
        }
        for (const auto& tp : (*s)->plan().targets) planned.push_back(tp);
        out.sessions.push_back(std::move(*s));
    }
    if (cfg.targets.empty()) {
        out.plan.targets = std::move(planned);
    } else {
        for (const auto& t : cfg.targets)
            for (auto& tp : planned)
                if (tp.target == t.name) out.plan.targets.push_back(tp);
    }
    return out;
}

// One cumulative snapshot over every session.  When two sessions both sample
// (a forced "sampling" group and an auto group that fell back to it), both run at
// the same frequency on the same CPUs, so either one's totals are the denominator.
Snapshot read_all(const Attachment& a, std::atomic<std::uint64_t>& read_errors) {
    Snapshot out;
    out.t = monotonic_seconds();
    for (const auto& s : a.sessions) {
        auto r = s->read();
        if (!r) {
            if (read_errors++ < 10) say("reading counters failed: {}", r.error().message());
            continue;
        }
        merge_session(out, std::move(*r));
    }
    return out;
}

// The file, then the command line over it.  Every problem is reported before
// anything touches the kernel.
Result<ServeConfig> load_config(const ServeArgs& a) {
    ServeConfig cfg;
    if (!a.config.empty()) {
        auto c = load_serve_config(a.config);
        if (!c) return c.error();
        cfg = std::move(*c);
    }
    if (!a.listen.empty()) {
        auto l = parse_listen_address(a.listen);
        if (!l) return make_error("--listen: " + l.error().message(), EINVAL);
        cfg.listen = *l;
    }
    if (!a.web_config.empty())
        if (auto st = apply_web_config(a.web_config, cfg); !st) return make_error("--web.config.file: " + st.error().message(), EINVAL);
    cfg.strict = cfg.strict || a.strict;
    return cfg;
}

// Says which targets attached; returns the ones that did not.
std::vector<std::string> report_plan(const Plan& plan) {
    std::vector<std::string> missing;
    for (const auto& tp : plan.targets) {
        if (tp.observable()) {
            say("{}: {} ({})", tp.target, to_string(tp.mechanism), tp.attach);
        } else {
            say("{}: not attached: {}", tp.target, tp.unavailable_reason);
            missing.push_back(tp.target);
        }
    }
    return missing;
}

// Whether the sessions can time their programs: BPF_ENABLE_STATS (CAP_SYS_ADMIN)
// or the sysctl; says which is missing.  The sessions hold the statistics for a
// window of each second themselves (RunStatsWindow).
bool run_stats_available() {
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    bool on = fd >= 0;
    if (on) close(fd);
    if (!on) {
        std::ifstream sysctl("/proc/sys/kernel/bpf_stats_enabled");
        int enabled = 0;
        on = (sysctl >> enabled) && enabled == 1;
    }
    if (!on)
        say("BPF run statistics are off (needs CAP_SYS_ADMIN or kernel.bpf_stats_enabled=1): "
            "hotline_probe_run_seconds_total and hotline_probe_runs_total stay 0");
    return on;
}

// The rules judged on each scrape's window.  BTF is read once for the fixes'
// applicability and the layouts, then released.
std::optional<LiveDiagnosis> open_diagnosis(const KernelInfo& k, const Topology& topo, const Attachment& att) {
    std::optional<KernelBtf> btf;
    if (auto b = KernelBtf::load(); b) btf.emplace(std::move(*b));
    LiveKernelFacts facts(KnobRoots{}, btf ? &*btf : nullptr, nullptr, int(topo.nodes.size()));
    std::vector<LineLayout> layouts;
    for (const auto& s : att.sessions)
        for (const auto& l : s->info().layouts) layouts.push_back(l);
    auto d = LiveDiagnosis::open(facts, att.plan, std::move(layouts), k.release);
    if (!d) {
        say("hotline_finding is not exported: {}", d.error().message());
        return std::nullopt;
    }
    return std::move(*d);
}

// Findings over the window since the previous judgement; a scrape sooner than
// min_window after it reuses it (a rate over a few milliseconds says nothing).
class FindingWindow {
public:
    // min_window: a whole period of the attach windows (probe.duty_period), one
    // in which the programs were attached.
    FindingWindow(std::optional<LiveDiagnosis> d, std::chrono::milliseconds min_window)
        : diag_(std::move(d)), min_window_s_(std::chrono::duration<double>(min_window).count()) {}
    std::vector<Finding> judge(const Snapshot& now) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!diag_) return {};
        if (!started_) prev_ = now, started_ = true;
        if (now.t - prev_.t >= min_window_s_) {
            last_ = diag_->judge(delta(prev_, now)).findings;
            prev_ = now;
        }
        return last_;
    }

private:
    std::mutex mu_;
    std::optional<LiveDiagnosis> diag_;
    const double min_window_s_;
    bool started_ = false;
    Snapshot prev_;
    std::vector<Finding> last_;
};

// What /metrics renders from besides the counters.
struct Exporter {
    Exporter(const Attachment& a, const PromOptions& o, std::optional<LiveDiagnosis> d,
             std::chrono::milliseconds duty_period)
        : att(a), opts(o), findings(std::move(d), duty_period) {}
    const Attachment& att;
    ExporterInfo info;
    PromOptions opts;
    HttpRejections rejections;
    std::atomic<std::uint64_t> read_errors{0}, series_dropped{0};
    FindingWindow findings;

    std::pair<std::string, std::string> metrics(const std::string& accept) {
        PromOptions o = opts;
        o.format = negotiate_exposition(accept);
        Snapshot snap = read_all(att, read_errors);
        ExporterCounters c;
        c.series_dropped = series_dropped.load();
        c.read_errors = read_errors.load();
        c.http_rejected = rejections.snapshot();
        if (auto ps = read_process_stats()) c.process = *ps;
        c.findings = findings.judge(snap);
        std::ostringstream os;
        PromStats st = render_prometheus(os, snap, info, c, o);
        series_dropped += st.dropped;
        return {os.str(), std::string(content_type(o.format))};
    }
};

void add_routes(GuardedServer& svr, Exporter& ex, const std::string& plan_json) {
    constexpr const char* kText = "text/plain; charset=utf-8";
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content("500 Internal Server Error\n", kText);
    });
    svr.Get("/metrics", [&ex](const httplib::Request& req, httplib::Response& res) {
        auto [body, type] = ex.metrics(req.get_header_value("Accept"));
        res.set_content(body, type);
    });
    svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", kText); });
    svr.Get("/plan", [&plan_json](const httplib::Request&, httplib::Response& res) {
        res.set_content(plan_json, "application/json");
    });
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("hotline exporter\n\n/metrics  Prometheus metrics\n/plan     attach plan (JSON)\n"
                        "/healthz  liveness\n",
                        kText);
    });
}

// A listener others can reach serves kernel facts to anyone unless TLS and basic
// auth are both on: say so (the exporter-toolkit convention is to allow it).
void warn_if_exposed(const ServeConfig& cfg) {
    if (cfg.listen.loopback() || (cfg.tls() && cfg.auth())) return;
    warn("listening on {} ({}) without {}: anyone who can reach this port can read the metrics; "
         "set TLS and basic auth with --web.config.file, or listen on 127.0.0.1",
         cfg.listen.to_string(), cfg.listen.all_addresses() ? "every address" : "not loopback",
         !cfg.tls() && !cfg.auth() ? "TLS and basic auth" : !cfg.tls() ? "TLS" : "basic auth");
}

// Binds the configured address; port 0 picks a free one.  nullopt: said why.
std::optional<ListenAddress> bind_listen(GuardedServer& svr, const ListenAddress& want) {
    int port = want.port;
    errno = 0;
    bool bound = port == 0 ? (port = svr.bind_to_any_port(want.bind_host())) > 0
                           : svr.bind_to_port(want.bind_host(), port);
    if (!bound) {
        int e = errno;
        log_at(LogLevel::kError, "cannot listen on {}{}{}; is another exporter using the port?", want.to_string(),
               e ? ": " : "", e ? std::strerror(e) : "");
        return std::nullopt;
    }
    svr.raise_backlog(256);
    return ListenAddress{want.host, port};
}

// Serves until SIGTERM or SIGINT (SIGHUP is said and ignored); signals are
// waited for on one thread.  False when the server stopped by itself.
bool serve_until_signal(GuardedServer& svr, ShutdownSignals& signals) {
    std::atomic<bool> listening_done{false};
    std::atomic<bool> stop_requested{false};
    std::thread waiter([&] {
        while (!listening_done) {
            if (stop_requested) {
                svr.stop();  // repeated: a stop before listen() starts would be lost
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                continue;
            }
            int s = signals.wait(0.2);
            if (s == SIGHUP) {
                say("SIGHUP ignored: serve has no reload; restart it to apply a new configuration");
            } else if (s == SIGTERM || s == SIGINT) {
                say("SIG{} received: stopping", signal_name(s));
                notify_systemd("STOPPING=1");
                stop_requested = true;
            }
        }
    });
    bool served = svr.listen_after_bind();
    listening_done = true;
    waiter.join();
    return served || stop_requested;
}

// --check-config attaches only when --strict is on the command line (a pre-flight
// check); `strict = true` in the file governs serving.
int check_config_only(const ServeConfig& cfg) {
    std::size_t ntargets = cfg.targets.empty() ? builtin_targets().size() : cfg.targets.size();
    fmt::print("{}: configuration is valid ({} targets, listen {}{}{})\n", cfg.source, ntargets,
               cfg.listen.to_string(), cfg.tls() ? ", TLS" : "", cfg.auth() ? ", basic auth" : "");
    return kExitOk;
}

// Attaches once; nullopt after saying why (then the exit status is kExitError).
std::optional<Attachment> attach_all(const ServeConfig& cfg, const KernelInfo& k, const Topology& topo,
                                     std::vector<std::string>& missing) {
    Status can = check_privileges(k);
    auto att = can ? attach_targets(cfg, k, topo) : Result<Attachment>(can.error());
    if (!att) {
        log_fail(att.error(), kExitError);
        return std::nullopt;
    }
    // Planning parsed kallsyms and BTF (tens of MB, now freed); give the pages back
    // so a long-lived daemon does not keep them.
    malloc_trim(0);
    missing = report_plan(att->plan);
    if (cfg.strict && !missing.empty()) {
        log_at(LogLevel::kError, "--strict: {} could not be attached (see above); nothing is left attached",
               fmt::join(missing, ", "));
        return std::nullopt;
    }
    return std::move(*att);
}

int serve(const ServeConfig& cfg, const TlsContext& tls, const KernelInfo& k, const Topology& topo,
          const Attachment& att, std::size_t attached, ShutdownSignals& signals) {
    const bool run_stats = run_stats_available();
    Exporter ex(att, cfg.metrics, open_diagnosis(k, topo, att), cfg.probe.duty_period);
    malloc_trim(0);
    ex.info.run_stats = run_stats;
    ex.info.version = HOTLINE_VERSION;
    ex.info.kernel = k;
    ex.info.topo = topo;
    ex.info.plan = att.plan;
    const std::string plan_json = to_json(att.plan).dump(2) + "\n";

    GuardedServer svr(cfg.http, ex.rejections, tls.get());
    if (cfg.auth()) svr.require_basic_auth(cfg.users);
    add_routes(svr, ex, plan_json);
    auto bound_at = bind_listen(svr, cfg.listen);
    if (!bound_at) return kExitError;
    say("listening on {}://{}/metrics ({} of {} targets attached)", cfg.tls() ? "https" : "http",
        bound_at->to_string(), attached, att.plan.targets.size());
    warn_if_exposed(cfg);
    notify_systemd(fmt::format("READY=1\nSTATUS=serving metrics on {}", bound_at->to_string()));
    if (!serve_until_signal(svr, signals)) {
        say("the HTTP server stopped unexpectedly");
        return kExitError;
    }
    return kExitOk;
}

}  // namespace

// --log.level and --log.format, before anything is logged.
Status configure_logging(const ServeArgs& a) {
    auto level = parse_log_level(a.log_level);
    if (!level) return make_error("--log.level: " + level.error().message(), EINVAL);
    auto format = parse_log_format(a.log_format);
    if (!format) return make_error("--log.format: " + format.error().message(), EINVAL);
    configure_log(*level, *format);
    return ok_status();
}

int run_serve(const ServeArgs& a) {
    if (auto st = configure_logging(a); !st) return fail(st.error(), kExitUsage);
    auto cfg = load_config(a);
    if (!cfg) return fail(cfg.error(), kExitUsage);
    TlsContext tls;
    if (cfg->tls())
        if (std::string err = tls.load(cfg->tls_cert, cfg->tls_key); !err.empty())
            return fail(make_error(cfg->source + ": " + err, EINVAL, "check the [tls] cert and key files"), kExitUsage);
    if (a.check_config && !a.strict) return check_config_only(*cfg);

    KernelInfo k = probe_kernel();
    auto topo = read_topology();
    if (!topo) return log_fail(topo.error(), kExitError);
    std::vector<std::string> missing;
    auto att = attach_all(*cfg, k, *topo, missing);
    if (!att) return kExitError;
    if (a.check_config) {
        fmt::print("{}: configuration is valid and all {} targets attach\n", cfg->source, att->plan.targets.size());
        return kExitOk;
    }
    if (!att->plan.any_observable()) warn("no target could be attached; serving hotline_probe_attached 0 for each");
    // Blocked until every probe is detached; SIGPIPE never kills us.
    ShutdownSignals signals;
    signal(SIGPIPE, SIG_IGN);
    int rc = serve(*cfg, tls, k, *topo, *att, att->plan.targets.size() - missing.size(), signals);
    if (rc != kExitOk) return rc;
    att->sessions.clear();
    say("stopped; every probe is detached");
    return kExitOk;
}

}  // namespace hotline::daemon
