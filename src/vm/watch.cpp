// SPDX-License-Identifier: Apache-2.0
#include "watch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "hotline/base/util.hpp"

namespace hotline::vm {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The next line of TEXT from POS (moved past it): nothing at the end, and
// `complete` false for a last line without its newline (still being written).
std::optional<std::string_view> next_line(std::string_view text, std::size_t& pos, bool& complete) {
    if (pos >= text.size()) return std::nullopt;
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    complete = nl != std::string_view::npos;
    return line;
}

long env_long(const char* name, long fallback) {
    const char* v = std::getenv(name);
    long n = 0;
    if (!v || !*v) return fallback;
    auto [end, ec] = std::from_chars(v, v + std::strlen(v), n);
    return ec == std::errc{} && *end == '\0' && n > 0 ? n : fallback;
}

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (true) {
        i = line.find_first_not_of(" \t", i);
        if (i == std::string_view::npos) break;
        std::size_t end = line.find_first_of(" \t", i);
        out.push_back(line.substr(i, end - i));
        if (end == std::string_view::npos) break;
        i = end;
    }
    return out;
}

// The monitor redraws a command as it is typed: cursor escapes and \r go.
std::string strip_escapes(std::string_view text) {
    static const std::regex esc("\x1b\\[[0-9]*[A-Z]");
    std::string s = std::regex_replace(std::string(text), esc, "");
    s.erase(std::remove(s.begin(), s.end(), '\r'), s.end());
    return s;
}

std::string stall_reason(const std::string& marker, long secs) {
    if (starts_with(marker, "HLVM-START ")) {
        auto f = fields(marker);
        std::string_view test = f.size() > 1 ? f[1] : "?";
        std::string_view tmo = f.size() > 2 ? f[2] : "";
        if (starts_with(tmo, "timeout=")) tmo.remove_prefix(8);
        return fmt::format(
            "test {} sent no result for {} s (its own timeout {} s, which a livelocked guest "
            "kernel "
            "never reaches)",
            printable(test), secs, printable(tmo));
    }
    if (marker.empty())
        return fmt::format("the guest sent no HLVM-HELLO for {} s after QEMU started", secs);
    return fmt::format("the guest sent nothing for {} s after: {}", secs, printable(marker));
}

}  // namespace

long step_limit_base_s() { return env_long("VM_STEP_LIMIT_S", kDefaultStepLimitS); }
double watch_poll_s() { return static_cast<double>(env_long("VM_WATCH_POLL_S", 5)); }

long step_limit_s(std::string_view marker, long base_s) {
    if (!starts_with(marker, "HLVM-START ")) return base_s;
    // The marker is the guest's text: only a plain number of up to six digits counts.
    auto at = marker.rfind("timeout=");
    std::string_view t = at == std::string_view::npos ? std::string_view() : marker.substr(at + 8);
    const bool plain = !t.empty() && t.size() <= 6 &&
                       std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    long v = 0;
    if (plain) std::from_chars(t.data(), t.data() + t.size(), v);
    return 2 * v + base_s;
}

std::string last_marker(std::string_view channel) {
    std::string last;
    std::size_t pos = 0;
    bool complete = false;
    while (auto next = next_line(channel, pos, complete)) {
        if (!complete) break;  // a line still being written
        std::string_view line = *next;
        while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        for (std::string_view m : {"HLVM-HELLO", "HLVM-START", "HLVM-RESULT", "HLVM-DONE"})
            if (starts_with(line, m)) last = std::string(line);
    }
    return last;
}

std::optional<std::string> ProgressWatch::check(std::string_view channel, double now) {
    if (done_) return std::nullopt;
    std::string last = last_marker(channel);
    if (starts_with(last, "HLVM-DONE")) {
        done_ = true;
        return std::nullopt;
    }
    if (last != marker_) {
        marker_ = last;
        since_ = now;
        return std::nullopt;
    }
    const long secs = static_cast<long>(now - since_);
    if (now - since_ <= static_cast<double>(step_limit_s(marker_, base_s_))) return std::nullopt;
    return stall_reason(marker_, secs);
}

std::string printable(std::string_view s) {
    std::string out(s.substr(0, 200));
    for (char& c : out)
        if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
    return out;
}

std::string monitor_summary(std::string_view monitor_text) {
    static const std::regex cpu_cmd(R"(^\(qemu\).*cpu [0-9]+$)");
    std::map<std::string, std::string> rip, rsp;
    std::string cur, rc, trail, out;
    bool regs = false, inx = false;
    auto flush = [&] {
        if (inx && !cur.empty())
            out += fmt::format("cpu {} rip {} rsp {} stack{}\n", cur, rip[cur], rsp[cur], trail);
        inx = false;
        trail.clear();
    };
    std::istringstream in(strip_escapes(monitor_text));
    for (std::string line; std::getline(in, line);) {
        auto f = fields(line);
        if (ends_with(line, "info registers -a")) {
            flush();
            regs = true;
        } else if (ends_with(line, "x /48gx $esp")) {
            flush();
            regs = false;
            inx = true;
        } else if (std::regex_search(line, cpu_cmd)) {
            flush();
            regs = false;
            cur = std::string(f.back());
        } else if (regs && starts_with(line, "CPU#") && line.size() > 4 &&
                   std::isdigit(static_cast<unsigned char>(line[4]))) {
            rc = std::string(f[0].substr(4));
        } else if (regs) {
            if (starts_with(line, "RIP=")) rip[rc] = std::string(f[0].substr(4));
            for (auto w : f)
                if (starts_with(w, "RSP=")) rsp[rc] = std::string(w.substr(4));
        } else if (inx && !f.empty() && ends_with(f[0], ":") &&
                   starts_with(f.size() > 1 ? f[1] : "", "0x")) {
            for (std::size_t i = 1; i < f.size(); ++i)
                if (starts_with(f[i], "0xffffffff8")) trail += " " + std::string(f[i].substr(2));
        }
    }
    flush();
    return out;
}

std::string dump_cpus(const std::string& base, int cpus) {
    const std::string in_path = base + ".in", out_path = base + ".out";
    // Read-write: opening a FIFO only to write or read blocks until the other
    // side opens it, and QEMU may be gone.
    int out_fd = open(out_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    int in_fd = open(in_path.c_str(), O_RDWR | O_CLOEXEC);
    if (out_fd < 0 || in_fd < 0) {
        if (out_fd >= 0) close(out_fd);
        if (in_fd >= 0) close(in_fd);
        return "no QEMU monitor at " + base + "\n";
    }
    std::string answers;
    auto drain = [&](double seconds) {
        const double end = monotonic_seconds() + seconds;
        for (double left = seconds; left > 0; left = end - monotonic_seconds()) {
            pollfd p{out_fd, POLLIN, 0};
            if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
            char buf[65536];
            ssize_t n = read(out_fd, buf, sizeof buf);
            if (n > 0) answers.append(buf, static_cast<std::size_t>(n));
        }
    };
    for (int sample = 0; sample < 3; ++sample) {
        std::string cmds = "info registers -a\n";
        for (int cpu = 0; cpu < cpus; ++cpu) cmds += fmt::format("cpu {}\nx /48gx $esp\n", cpu);
        if (write(in_fd, cmds.data(), cmds.size()) < 0) break;
        drain(1.0);
    }
    drain(1.0);
    close(in_fd);
    close(out_fd);
    const std::string dir = base.substr(0, base.rfind('/'));
    (void)write_file_atomic(dir + "/monitor.log", answers);
    return monitor_summary(answers);
}

std::optional<std::string> fatal_console_line(std::string_view console) {
    static constexpr std::array<std::string_view, 5> kFatal{
        "Kernel panic", "Oops:", "BUG: unable to handle", "general protection fault",
        "kernel BUG at"};
    std::size_t pos = 0;
    bool complete = false;
    while (auto line = next_line(console, pos, complete))
        for (auto f : kFatal)
            if (line->find(f) != std::string_view::npos) return std::string(*line);
    return std::nullopt;
}

}  // namespace hotline::vm
