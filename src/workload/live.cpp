// SPDX-License-Identifier: Apache-2.0
// The traffic of `validate --live`: the user's command per trial, or a window
// of the host's own traffic counted by the kernel.
#include "hotline/workload/live.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <sstream>

#include "hotline/base/util.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/workload/workload.hpp"

namespace hotline {

namespace {

// A run's output is read from its end: a progress-printing command may write
// much, and its metric is in its last lines.
constexpr std::size_t kOutputTailBytes = 1 << 20;
constexpr std::size_t kErrorTailLines = 8;

std::string last_lines(std::string_view text, std::size_t n) {
    std::size_t end = text.size();
    while (end > 0 && text[end - 1] == '\n') --end;
    std::size_t start = end;
    bool whole = false;
    for (std::size_t k = 0; k < n && !whole; ++k) {
        std::size_t nl = start == 0 ? std::string_view::npos : text.rfind('\n', start - 1);
        whole = nl == std::string_view::npos;
        start = whole ? 0 : nl;
    }
    if (!whole) ++start;  // past the newline before the first kept line
    return std::string(text.substr(start, end - start));
}

std::string read_tail(int fd) {
    struct stat st {};
    if (fstat(fd, &st)) return {};
    std::size_t size = std::size_t(st.st_size);
    std::size_t from = size > kOutputTailBytes ? size - kOutputTailBytes : 0;
    std::string out(size - from, '\0');
    ssize_t n = pread(fd, out.data(), out.size(), off_t(from));
    out.resize(n > 0 ? std::size_t(n) : 0);
    return out;
}

Result<std::uint64_t> field(const std::map<std::string, std::uint64_t>& m, const std::string& k) {
    auto it = m.find(k);
    if (it == m.end()) return make_error("/proc/net/snmp has no Tcp " + k + " counter", ENOENT);
    return it->second;
}

}  // namespace

Result<OutputMetric> parse_output_metric(std::string_view arg) {
    OutputMetric m{std::string(kThroughputMetric), std::string(arg)};
    std::size_t eq = arg.find('=');
    if (eq != std::string_view::npos && eq > 0) {
        std::string_view name = arg.substr(0, eq);
        bool word = std::all_of(name.begin(), name.end(),
                                [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        if (word) m = {std::string(name), std::string(arg.substr(eq + 1))};
    }
    try {
        std::regex re(m.pattern);
        if (re.mark_count() < 1)
            return make_error(fmt::format("--metric {}: \"{}\" has no capture group", m.name, m.pattern), EINVAL,
                              "put the number in parentheses, e.g. 'ops_per_s (\\S+)'");
    } catch (const std::regex_error& e) {
        return make_error(fmt::format("--metric {}: \"{}\" is not a regular expression ({})", m.name, m.pattern,
                                      e.what()),
                          EINVAL);
    }
    return m;
}

Result<double> read_output_metric(const OutputMetric& m, std::string_view text) {
    std::regex re(m.pattern);
    std::string captured;
    bool found = false;
    for (std::cregex_iterator it(text.data(), text.data() + text.size(), re), end; it != end; ++it) {
        captured = (*it)[1].str();
        found = true;
    }
    std::string tail = last_lines(text, 3);
    if (!found)
        return make_error(fmt::format("metric {}: \"{}\" matched nothing in the command's output (last lines: \"{}\")",
                                      m.name, m.pattern, tail),
                          EINVAL, "check the pattern against what the command prints");
    char* endp = nullptr;
    double v = std::strtod(captured.c_str(), &endp);
    if (captured.empty() || *endp != '\0' || !std::isfinite(v))
        return make_error(fmt::format("metric {}: captured \"{}\", not a number", m.name, captured), EINVAL,
                          "make the group capture the number only");
    return v;
}

Result<HostOpsUnit> parse_host_ops_unit(std::string_view s) {
    if (s == "connections") return HostOpsUnit::kConnections;
    if (s == "segments") return HostOpsUnit::kSegments;
    if (s == "packets") return HostOpsUnit::kPackets;
    return make_error(fmt::format("unknown operation unit \"{}\"", s), EINVAL, "use connections, segments or packets");
}

std::string_view to_string(HostOpsUnit u) {
    switch (u) {
    case HostOpsUnit::kConnections: return "connections";
    case HostOpsUnit::kSegments: return "segments";
    case HostOpsUnit::kPackets: return "packets";
    }
    return "?";
}

Result<std::map<std::string, std::uint64_t>> parse_snmp_tcp(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string header, values;
    while (std::getline(in, header)) {
        if (header.rfind("Tcp:", 0) != 0) continue;
        if (!std::getline(in, values) || values.rfind("Tcp:", 0) != 0) break;
        std::istringstream hs(header.substr(4)), vs(values.substr(4));
        std::map<std::string, std::uint64_t> out;
        std::string name;
        long long v = 0;
        while (hs >> name && vs >> v) out[name] = std::uint64_t(v < 0 ? 0 : v);  // MaxConn is -1
        return out;
    }
    return make_error("no Tcp lines in /proc/net/snmp", EINVAL);
}

Result<std::uint64_t> parse_netdev_rx_packets(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string line;
    std::uint64_t total = 0;
    int devices = 0;
    while (std::getline(in, line)) {
        std::size_t colon = line.find(':');
        if (colon == std::string::npos || line.find('|') != std::string::npos) continue;
        std::istringstream ls(line.substr(colon + 1));
        std::uint64_t bytes = 0, packets = 0;
        if (!(ls >> bytes >> packets)) return make_error("unreadable /proc/net/dev line \"" + line + "\"", EINVAL);
        total += packets;
        ++devices;
    }
    if (!devices) return make_error("no devices in /proc/net/dev", EINVAL);
    return total;
}

Result<std::uint64_t> read_host_ops(HostOpsUnit u, const std::string& proc_root) {
    if (u == HostOpsUnit::kPackets) {
        auto t = read_file(proc_root + "/net/dev");
        if (!t) return t.error();
        return parse_netdev_rx_packets(*t);
    }
    auto t = read_file(proc_root + "/net/snmp");
    if (!t) return t.error();
    auto tcp = parse_snmp_tcp(*t);
    if (!tcp) return tcp.error();
    if (u == HostOpsUnit::kSegments) return field(*tcp, "InSegs");
    auto active = field(*tcp, "ActiveOpens");
    if (!active) return active.error();
    auto passive = field(*tcp, "PassiveOpens");
    if (!passive) return passive.error();
    return *active + *passive;
}

Result<double> read_host_busy_seconds(const std::string& proc_root) {
    auto t = read_file(proc_root + "/stat");
    if (!t) return t.error();
    auto cpus = parse_proc_stat(*t);
    if (!cpus) return cpus.error();
    std::uint64_t busy = 0;
    for (auto& [cpu, ticks] : *cpus) busy += ticks.busy();
    return double(busy) / double(sysconf(_SC_CLK_TCK));
}

// --- one command run --------------------------------------------------------------------

struct LiveTraffic::Run {
    std::optional<ChildProcess> child;
    int out = -1, err = -1;  // memfds: never block the command on a full pipe
    int status = -1;
    double started = 0;
    ~Run() {
        child.reset();  // SIGTERM and reap a run still going
        if (out >= 0) close(out);
        if (err >= 0) close(err);
    }
    bool exited() {
        if (!child) return true;
        if (!child->poll(&status)) return false;
        child.reset();
        return true;
    }
};

LiveTraffic::LiveTraffic(LiveOptions o) : opts_(std::move(o)) {}
LiveTraffic::~LiveTraffic() = default;

Result<std::unique_ptr<LiveTraffic>> LiveTraffic::create(LiveOptions opts) {
    if (opts.command.empty() && !opts.metrics.empty())
        return make_error("--metric reads a command's output, and no command was given", EINVAL,
                          "give the command after --, or drop --metric to observe the host");
    for (auto& m : opts.metrics)
        if (auto ok = parse_output_metric(m.name + "=" + m.pattern); !ok) return ok.error();
    if (opts.command.empty())
        if (auto probe = read_host_ops(opts.observe_unit, opts.proc_root); !probe) return probe.error();
    return std::unique_ptr<LiveTraffic>(new LiveTraffic(std::move(opts)));
}

Status LiveTraffic::start_run() {
    run_ = std::make_unique<Run>();
    run_->out = memfd_create("hotline-live-stdout", MFD_CLOEXEC);
    run_->err = memfd_create("hotline-live-stderr", MFD_CLOEXEC);
    if (run_->out < 0 || run_->err < 0) return make_error("memfd_create", errno);
    SpawnOptions so;
    so.cpus = cpus_;
    so.mem_nodes = mem_nodes_;
    so.die_with_parent = true;
    so.own_process_group = true;
    so.stdout_fd = run_->out;
    so.stderr_fd = run_->err;
    run_->started = monotonic_seconds();
    auto c = ChildProcess::spawn(opts_.command, so);
    if (!c) return c.error();
    run_->child.emplace(std::move(*c));
    return ok_status();
}

Status LiveTraffic::finish_run() {
    std::string out = read_tail(run_->out);
    if (run_->status != 0) {
        std::string err = last_lines(read_tail(run_->err), kErrorTailLines);
        return make_error(fmt::format("the command exited with status {}{}", run_->status,
                                      err.empty() ? "" : "; its stderr ended with:\n" + err),
                          ECHILD);
    }
    ++current_.runs;
    const double wall = monotonic_seconds() - run_->started;
    for (auto& m : opts_.metrics) {
        auto v = read_output_metric(m, out);
        if (!v) v = read_output_metric(m, read_tail(run_->err));
        if (!v) return v.error();
        if (m.name == kThroughputMetric) {
            current_.ops += *v * wall;
            runs_seconds_ += wall;
        }
        else current_.extra[m.name] = *v;
    }
    run_.reset();
    return ok_status();
}

bool LiveOptions::reads_throughput() const {
    for (auto& m : metrics)
        if (m.name == kThroughputMetric) return true;
    return false;
}

Status LiveTraffic::begin(const std::vector<int>& cpus, double length_s, const std::vector<int>& mem_nodes) {
    current_ = LiveRun{};
    runs_seconds_ = 0;
    failed_.reset();
    cpus_ = cpus;
    mem_nodes_ = mem_nodes;
    length_s_ = length_s;
    started_ = std::chrono::steady_clock::now();
    auto busy = read_host_busy_seconds(opts_.proc_root);
    if (!busy) return busy.error();
    busy_before_ = *busy;
    if (opts_.command.empty()) {
        auto ops = read_host_ops(opts_.observe_unit, opts_.proc_root);
        if (!ops) return ops.error();
        ops_before_ = *ops;
        return ok_status();
    }
    return start_run();
}

bool LiveTraffic::done() {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (opts_.command.empty()) return elapsed >= length_s_;
    if (failed_) return true;
    if (run_ && !run_->exited()) return false;
    if (run_)
        if (auto st = finish_run(); !st) {
            failed_ = st.error();
            return true;
        }
    if (opts_.reads_throughput() || elapsed >= length_s_) return true;
    if (auto st = start_run(); !st) {
        failed_ = st.error();
        return true;
    }
    return false;
}

Result<LiveRun> LiveTraffic::end() {
    const bool cut_short = !done();
    run_.reset();  // a run still going is killed and not counted
    current_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (failed_) return *failed_;
    auto busy = read_host_busy_seconds(opts_.proc_root);
    if (!busy) return busy.error();
    current_.cpu_seconds = *busy - busy_before_;
    if (opts_.command.empty()) {
        auto ops = read_host_ops(opts_.observe_unit, opts_.proc_root);
        if (!ops) return ops.error();
        current_.ops = double(*ops - std::min(*ops, ops_before_));
    } else if (!opts_.reads_throughput()) {
        current_.ops = current_.runs;
    } else {
        // The metric is the command's rate over its own run, not over the
        // trial's polling: ops / seconds gives it back exactly.
        current_.seconds = runs_seconds_;
    }
    if (cut_short && current_.runs == 0 && !opts_.command.empty())
        return make_error("the trial ended before the command's first run did", EINTR);
    return current_;
}

std::string LiveTraffic::ops_source() const {
    if (opts_.command.empty())
        switch (opts_.observe_unit) {
        case HostOpsUnit::kConnections: return "TCP connections opened on this host (/proc/net/snmp ActiveOpens + PassiveOpens)";
        case HostOpsUnit::kSegments: return "TCP segments received on this host (/proc/net/snmp InSegs)";
        case HostOpsUnit::kPackets: return "packets received by this host's devices (/proc/net/dev)";
        }
    if (opts_.reads_throughput()) return "the command's ops_per_s output metric";
    return "runs of the command";
}

nlohmann::json LiveTraffic::params() const {
    nlohmann::json p = {{"name", "live"}, {"ops", ops_source()}};
    if (!opts_.command.empty()) p["command"] = opts_.command;
    else p["observe_unit"] = std::string(to_string(opts_.observe_unit));
    for (auto& m : opts_.metrics) p["metrics"][m.name] = m.pattern;
    return p;
}

}  // namespace hotline
