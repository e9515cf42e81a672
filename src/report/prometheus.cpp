// Prometheus text 0.0.4 / OpenMetrics 1.0 rendering of a cumulative Snapshot:
// per-node (optionally per-CPU) call counters, handoff matrices, latency
// histograms, sampling shares, and the exporter's own health.
#include "hotline/prometheus.hpp"
#include "hotline/util.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace hotline {

// ------------------------------------------------------------ negotiation
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return out;
}

struct MediaRange {
    std::string type;  // "application/openmetrics-text", "text/plain", "*/*" ...
    std::string version;
    double q = 1.0;
};

std::vector<MediaRange> parse_accept(std::string_view accept) {
    std::vector<MediaRange> out;
    while (!accept.empty()) {
        auto comma = accept.find(',');
        std::string_view item = accept.substr(0, comma);
        accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
        MediaRange r;
        bool first = true;
        while (true) {
            auto semi = item.find(';');
            std::string_view part = trim(item.substr(0, semi));
            if (first) {
                r.type = lower(part);
                first = false;
            } else if (auto eq = part.find('='); eq != std::string_view::npos) {
                std::string key = lower(trim(part.substr(0, eq)));
                std::string_view val = trim(part.substr(eq + 1));
                if (val.size() >= 2 && val.front() == '"' && val.back() == '"')
                    val = val.substr(1, val.size() - 2);
                if (key == "q") {
                    char* end = nullptr;
                    std::string v(val);
                    double q = std::strtod(v.c_str(), &end);
                    r.q = (end == v.c_str() || !std::isfinite(q)) ? 0.0 : std::clamp(q, 0.0, 1.0);
                } else if (key == "version") {
                    r.version = std::string(val);
                }
            }
            if (semi == std::string_view::npos) break;
            item = item.substr(semi + 1);
        }
        if (!r.type.empty()) out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

ExpositionFormat negotiate_exposition(std::string_view accept) {
    double om = 0, text = 0;
    bool text_named = false;
    for (const auto& r : parse_accept(accept)) {
        if (r.type == "application/openmetrics-text") {
            if (r.version.empty() || r.version == "1.0.0" || r.version == "0.0.1") om = std::max(om, r.q);
        } else if (r.type == "text/plain") {
            if (r.version.empty() || r.version == "0.0.4") text = std::max(text, r.q);
            text_named = true;
        } else if (r.type == "*/*" || r.type == "text/*") {
            if (!text_named) text = std::max(text, r.q);
        }
    }
    // A tie goes to OpenMetrics: a scraper naming it at all asked for it.
    return om > 0 && om >= text ? ExpositionFormat::kOpenMetrics100 : ExpositionFormat::kText004;
}

std::string_view content_type(ExpositionFormat f) {
    return f == ExpositionFormat::kOpenMetrics100
               ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
               : "text/plain; version=0.0.4; charset=utf-8";
}

// ------------------------------------------------------------ values, labels
std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    std::size_t n = v.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c < 0x80) {
            out += char(c);
        } else {
            // Scrapers reject invalid UTF-8 in the whole scrape; replace the bad byte.
            int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            bool good = len > 0 && i + len <= n;
            for (int k = 1; good && k < len; ++k) good = (p[i + k] & 0xC0) == 0x80;
            if (good) {
                std::uint32_t cp = c & (0xFF >> (len + 1));
                for (int k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
                static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
                good = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
            }
            if (good) {
                out.append(v.data() + i, std::size_t(len));
                i += std::size_t(len);
                continue;
            }
            out += "\xEF\xBF\xBD";
        }
        ++i;
    }
    return out;
}

std::string format_sample_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", v);
}

double latency_le_seconds(int slot) {
    // Slot i holds integer nanoseconds in [2^i, 2^(i+1) - 1] (slot 0 also holds 0), so
    // "<= 2^(i+1) - 1 ns" is exact; the last slot is open-ended.
    if (slot >= HL_HIST_SLOTS - 1) return INFINITY;
    if (slot < 0) slot = 0;
    return double((std::uint64_t(1) << (slot + 1)) - 1) / 1e9;
}

// ------------------------------------------------------------ writer
namespace {

enum class Kind { kCounter, kGauge, kHistogram, kInfo };

struct Family {
    std::string_view base;  // without _total/_info
    Kind kind;
    std::string_view help;
    std::string_view unit = {};  // OpenMetrics UNIT; base must end with it
};

using Labels = std::vector<std::pair<std::string_view, std::string>>;

class Expo {
public:
    Expo(std::ostream& os, const PromOptions& o) : os_(os), om_(o.format == ExpositionFormat::kOpenMetrics100), max_(o.max_series) {}

    void begin(const Family& f) {
        fam_ = f;
        header_done_ = false;
    }

    // For capped (contention) families: admits n series or counts them as dropped.
    bool admit(std::size_t n) {
        if (series_ + n > max_) {
            dropped_ += n;
            return false;
        }
        series_ += n;
        return true;
    }

    void sample(std::string_view suffix, const Labels& labels, std::string_view value) {
        if (!header_done_) header();
        line_.clear();
        line_ += fam_.base;
        if (fam_.kind == Kind::kCounter) line_ += "_total";
        else if (fam_.kind == Kind::kInfo) line_ += "_info";
        else line_ += suffix;
        if (!labels.empty()) {
            line_ += '{';
            bool first = true;
            for (const auto& [k, v] : labels) {
                if (!first) line_ += ',';
                first = false;
                line_ += k;
                line_ += "=\"";
                line_ += escape_label_value(v);
                line_ += '"';
            }
            line_ += '}';
        }
        line_ += ' ';
        line_ += value;
        line_ += '\n';
        os_ << line_;
    }
    void sample(const Labels& labels, std::uint64_t v) { sample({}, labels, std::to_string(v)); }
    void sample(const Labels& labels, double v) { sample({}, labels, format_sample_value(v)); }

    void finish() {
        if (om_) os_ << "# EOF\n";
    }
    std::size_t series() const { return series_; }
    std::uint64_t dropped() const { return dropped_; }

private:
    void header() {
        header_done_ = true;
        std::string name(fam_.base);
        std::string_view type;
        switch (fam_.kind) {
            case Kind::kCounter:
                type = "counter";
                if (!om_) name += "_total";
                break;
            case Kind::kGauge: type = "gauge"; break;
            case Kind::kHistogram: type = "histogram"; break;
            case Kind::kInfo:
                type = om_ ? "info" : "gauge";
                if (!om_) name += "_info";
                break;
        }
        std::string help;
        for (char c : fam_.help) {
            if (c == '\\') help += "\\\\";
            else if (c == '\n') help += "\\n";
            else if (c == '"' && om_) help += "\\\"";
            else help += c;
        }
        os_ << "# HELP " << name << ' ' << help << '\n';
        os_ << "# TYPE " << name << ' ' << type << '\n';
        if (om_ && !fam_.unit.empty()) os_ << "# UNIT " << name << ' ' << fam_.unit << '\n';
    }

    std::ostream& os_;
    bool om_;
    std::size_t max_;
    Family fam_{"", Kind::kGauge, ""};
    bool header_done_ = false;
    std::size_t series_ = 0;
    std::uint64_t dropped_ = 0;
    std::string line_;
};

std::uint64_t at(const std::vector<std::uint64_t>& v, int i) {
    return i >= 0 && std::size_t(i) < v.size() ? v[std::size_t(i)] : 0;
}

// Per-node folds, or per-CPU series with their node when per_cpu is set.
template <class Emit>
void per_place(const std::vector<std::uint64_t>& per_cpu, const Topology& topo, bool cpus, Emit emit) {
    if (cpus) {
        for (int cpu : topo.cpus) emit(topo.node_of(cpu), cpu, at(per_cpu, cpu));
    } else {
        for (const auto& [node, v] : fold_by_node(per_cpu, topo)) emit(node, -1, v);
    }
}

}  // namespace

PromStats render_prometheus(std::ostream& os, const Snapshot& s, const ExporterInfo& info,
                            const ExporterCounters& counters, const PromOptions& opts) {
    Expo x(os, opts);
    const Topology& topo = info.topo;

    x.begin({"hotline_build", Kind::kInfo, "hotline version running this exporter."});
    x.sample({{"version", info.version}}, std::uint64_t(1));
    x.begin({"hotline_kernel", Kind::kInfo, "The kernel hotline observes and what it allows."});
    x.sample({{"release", info.kernel.release},
              {"machine", info.kernel.machine},
              {"lockdown", info.kernel.lockdown},
              {"btf", info.kernel.btf ? "true" : "false"}},
             std::uint64_t(1));

    x.begin({"hotline_probe_attached", Kind::kGauge,
             "1 when the target is watched, by the mechanism named; 0 when no mechanism could attach."});
    for (const auto& tp : info.plan.targets)
        x.sample({{"target", tp.target}, {"mechanism", std::string(to_string(tp.mechanism))}},
                 std::uint64_t(tp.observable() ? 1 : 0));

    // --- contention series, under the cap
    x.begin({"hotline_calls", Kind::kCounter,
             "Hits on the target function (for a tracepoint proxy: matching events; for sampling: samples "
             "whose IP was in the function), per NUMA node."});
    for (const auto& t : s.targets) {
        std::string mech(to_string(t.mechanism));
        per_place(t.calls, topo, opts.per_cpu, [&](int node, int cpu, std::uint64_t v) {
            if (!x.admit(1)) return;
            Labels l{{"target", t.target}, {"node", std::to_string(node)}};
            if (cpu >= 0) l.emplace_back("cpu", std::to_string(cpu));
            l.emplace_back("mechanism", mech);
            x.sample(l, v);
        });
    }

    // Handoffs: only targets whose objects are tracked.  The matrix is indexed by
    // node id; cells for every pair of the topology's nodes, zeros included, so
    // the series set does not change as handoffs start.
    x.begin({"hotline_handoffs", Kind::kCounter,
             "Hits on an object last touched from another CPU: one of node from_node, this one of to_node "
             "(the node x node handoff matrix; the diagonal is same-node handoffs)."});
    for (const auto& t : s.targets) {
        if (!t.has_handoffs) continue;
        const auto& m = t.handoffs.matrix;
        for (int from : topo.nodes)
            for (int to : topo.nodes) {
                std::uint64_t v = std::size_t(from) < m.size() && std::size_t(to) < m[std::size_t(from)].size()
                                      ? m[std::size_t(from)][std::size_t(to)]
                                      : 0;
                if (!x.admit(1)) continue;
                x.sample({{"target", t.target}, {"from_node", std::to_string(from)}, {"to_node", std::to_string(to)}}, v);
            }
    }
    x.begin({"hotline_cross_node_handoffs", Kind::kCounter,
             "Handoffs whose from_node and to_node differ (the off-diagonal of hotline_handoffs_total)."});
    for (const auto& t : s.targets)
        if (t.has_handoffs && x.admit(1)) x.sample({{"target", t.target}}, t.handoffs.total(t.handoffs.cross_node));
    x.begin({"hotline_handoff_tracked_hits", Kind::kCounter,
             "Hits that went through handoff tracking (after probe.handoff_sample): the denominator of handoff shares."});
    for (const auto& t : s.targets)
        if (t.has_handoffs && x.admit(1)) x.sample({{"target", t.target}}, t.handoffs.total(t.handoffs.tracked));
    x.begin({"hotline_handoff_live_objects", Kind::kGauge,
             "Objects in the bounded owner map now (its capacity is hotline_handoff_owner_capacity)."});
    for (const auto& t : s.targets)
        if (t.has_handoffs) x.sample({{"target", t.target}}, t.handoffs.live_objects);
    x.begin({"hotline_handoff_owner_capacity", Kind::kGauge, "Entries the owner map holds before evicting."});
    for (const auto& t : s.targets)
        if (t.has_handoffs) x.sample({{"target", t.target}}, t.handoffs.capacity);

    x.begin({"hotline_latency_seconds", Kind::kHistogram,
             "Time spent in the target function, entry to return.", "seconds"});
    for (const auto& t : s.targets) {
        if (!t.has_latency) continue;
        if (!x.admit(std::size_t(HL_HIST_SLOTS) + 2)) continue;
        std::uint64_t cum = 0;
        for (int i = 0; i < HL_HIST_SLOTS; ++i) {
            cum += t.hist[std::size_t(i)];
            if (i == HL_HIST_SLOTS - 1) break;  // the open-ended slot only reaches +Inf
            x.sample("_bucket", {{"target", t.target}, {"le", format_sample_value(latency_le_seconds(i))}},
                     std::to_string(cum));
        }
        x.sample("_bucket", {{"target", t.target}, {"le", "+Inf"}}, std::to_string(cum));
        // _count equals the +Inf bucket by construction; lat_count can run one
        // increment ahead of the slots while a CPU is mid-update.
        x.sample("_sum", {{"target", t.target}}, format_sample_value(double(t.lat_sum_ns) / 1e9));
        x.sample("_count", {{"target", t.target}}, std::to_string(cum));
    }

    if (!s.samples_total.empty()) {
        auto samples = [&](std::string_view base, std::string_view help, const std::vector<std::uint64_t>& v) {
            x.begin({base, Kind::kCounter, help});
            per_place(v, topo, opts.per_cpu, [&](int node, int cpu, std::uint64_t n) {
                if (!x.admit(1)) return;
                Labels l{{"node", std::to_string(node)}};
                if (cpu >= 0) l.emplace_back("cpu", std::to_string(cpu));
                x.sample(l, n);
            });
        };
        samples("hotline_samples", "cpu-clock samples taken by the sampling mechanism.", s.samples_total);
        samples("hotline_kernel_samples", "Of hotline_samples_total, those whose IP was in the kernel.",
                s.samples_kernel);
        x.begin({"hotline_sampled_share", Kind::kGauge,
                 "Share (0..1) of all samples since start whose IP was in the target function."});
        for (const auto& t : s.targets)
            if (t.mechanism == Mechanism::kSampling && x.admit(1))
                x.sample({{"target", t.target}}, sampled_share(t, s.samples_total));
    }

    // --- the probes' own cost and losses
    x.begin({"hotline_probe_run_stats_enabled", Kind::kGauge,
             "1 when the kernel keeps BPF run statistics; 0 leaves the run counters at 0 "
             "(grant CAP_SYS_ADMIN or set kernel.bpf_stats_enabled=1)."});
    x.sample({}, std::uint64_t(info.run_stats ? 1 : 0));
    x.begin({"hotline_probe_runs", Kind::kCounter, "Times the kernel ran the program (BPF run statistics)."});
    for (const auto& c : s.cost) x.sample({{"target", c.target}, {"program", c.program}}, c.run_cnt);
    x.begin({"hotline_probe_run_seconds", Kind::kCounter,
             "Time the kernel spent in the program (BPF run statistics; 0 when run statistics are off).",
             "seconds"});
    for (const auto& c : s.cost)
        x.sample({{"target", c.target}, {"program", c.program}}, double(c.run_time_ns) / 1e9);
    x.begin({"hotline_drops", Kind::kCounter,
             "Events lost: recursion = runs the kernel skipped; latency_lost = returns without a recorded entry; "
             "owner_evicted = objects pushed out of the full owner map (their next touch counts as new)."});
    {
        std::vector<std::pair<std::string, std::uint64_t>> rec;
        for (const auto& c : s.cost) {
            auto it = std::find_if(rec.begin(), rec.end(), [&](auto& r) { return r.first == c.target; });
            if (it == rec.end()) it = rec.insert(rec.end(), {c.target, 0});
            it->second += c.recursion_misses;
        }
        for (const auto& [target, v] : rec) x.sample({{"target", target}, {"reason", "recursion"}}, v);
        for (const auto& t : s.targets)
            if (t.has_latency) x.sample({{"target", t.target}, {"reason", "latency_lost"}}, t.lat_lost);
        for (const auto& t : s.targets)
            if (t.has_handoffs) x.sample({{"target", t.target}, {"reason", "owner_evicted"}}, t.handoffs.evictions);
    }

    // --- the exporter itself
    x.begin({"hotline_read_errors", Kind::kCounter, "Scrapes where reading a session's counters failed."});
    x.sample({}, counters.read_errors);
    x.begin({"hotline_http_rejected", Kind::kCounter, "HTTP requests refused, by reason."});
    for (const auto& [reason, v] : counters.http_rejected) x.sample({{"reason", reason}}, v);
    x.begin({"hotline_series_dropped", Kind::kCounter,
             "Contention series left out because the series cap (metrics.max_series) was reached."});
    x.sample({}, counters.series_dropped + x.dropped());

    if (const auto& p = counters.process) {
        x.begin({"process_cpu_seconds", Kind::kCounter, "Total user and system CPU time spent in seconds.",
                 "seconds"});
        x.sample({}, p->cpu_seconds);
        x.begin({"process_resident_memory_bytes", Kind::kGauge, "Resident memory size in bytes.", "bytes"});
        x.sample({}, p->resident_bytes);
        x.begin({"process_virtual_memory_bytes", Kind::kGauge, "Virtual memory size in bytes.", "bytes"});
        x.sample({}, p->virtual_bytes);
        x.begin({"process_open_fds", Kind::kGauge, "Number of open file descriptors."});
        x.sample({}, p->open_fds);
        x.begin({"process_max_fds", Kind::kGauge, "Maximum number of open file descriptors."});
        x.sample({}, p->max_fds);
        x.begin({"process_start_time_seconds", Kind::kGauge,
                 "Start time of the process since unix epoch in seconds.", "seconds"});
        x.sample({}, p->start_time_seconds);
    }
    x.finish();
    return {x.series(), x.dropped()};
}

// ------------------------------------------------------------ /proc
Result<ProcessStats> read_process_stats(const std::string& proc_root, const std::string& pid) {
    std::string dir = proc_root + "/" + pid;
    std::string stat;
    {
        std::ifstream f(dir + "/stat");
        if (!f) return make_error("cannot read " + dir + "/stat", errno);
        std::getline(f, stat);
    }
    auto rparen = stat.rfind(')');
    if (rparen == std::string::npos) return make_error("malformed " + dir + "/stat", EINVAL);
    std::istringstream fields(stat.substr(rparen + 1));
    std::vector<std::string> tok;
    for (std::string t; fields >> t;) tok.push_back(t);
    // tok[0] is field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
    if (tok.size() < 22) return make_error("short " + dir + "/stat", EINVAL);
    auto num = [](const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); };
    double tick = double(sysconf(_SC_CLK_TCK));
    ProcessStats ps;
    ps.cpu_seconds = double(num(tok[11]) + num(tok[12])) / tick;
    ps.virtual_bytes = num(tok[20]);
    ps.resident_bytes = num(tok[21]) * std::uint64_t(sysconf(_SC_PAGESIZE));

    std::uint64_t btime = 0;
    {
        std::ifstream f(proc_root + "/stat");
        for (std::string line; std::getline(f, line);)
            if (line.rfind("btime ", 0) == 0) btime = num(line.substr(6));
    }
    ps.start_time_seconds = double(btime) + double(num(tok[19])) / tick;

    if (DIR* d = opendir((dir + "/fd").c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++ps.open_fds;
        closedir(d);
        // Our own listing counts the descriptor opendir holds.
        bool own = proc_root == "/proc" && (pid == "self" || pid == std::to_string(getpid()));
        if (own && ps.open_fds > 0) --ps.open_fds;
    }
    {
        std::ifstream f(dir + "/limits");
        for (std::string line; std::getline(f, line);) {
            if (line.rfind("Max open files", 0) != 0) continue;
            std::istringstream ls(line.substr(14));
            std::string soft;
            ls >> soft;
            ps.max_fds = soft == "unlimited" ? 0 : num(soft);
        }
    }
    return ps;
}

}  // namespace hotline
