// SPDX-License-Identifier: Apache-2.0
// Reads qperf's client output into the scenario result model.  qperf exits 0
// even when it cannot reach its server, so the text itself decides success.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <sstream>

#include "hotline/workload/scenario.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

namespace {

// Multiplier from a qperf unit to the base unit of its kind: ns for time,
// bytes for sizes, bits/sec for bandwidth, 1/sec for rates, percent for CPU.
// qperf's B/sec prefixes are decimal, its KiB sizes binary.
std::optional<double> unit_scale(const std::string& unit) {
    static const std::map<std::string, double> k = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"sec", 1e9}, {"s", 1e9},
        {"bytes", 1}, {"KiB", 1024}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
        {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
        {"bits/sec", 1}, {"Kb/sec", 1e3}, {"Mb/sec", 1e6}, {"Gb/sec", 1e9}, {"Tb/sec", 1e12},
        {"bytes/sec", 8}, {"B/sec", 8}, {"KB/sec", 8e3}, {"MB/sec", 8e6}, {"GB/sec", 8e9}, {"TB/sec", 8e12},
        {"/sec", 1}, {"K/sec", 1e3}, {"M/sec", 1e6}, {"G/sec", 1e9},
        {"% cpus", 1},
        {"ns/GB", 1}, {"us/GB", 1e3}, {"ms/GB", 1e6}, {"sec/GB", 1e9},
    };
    auto it = k.find(unit);
    if (it == k.end()) return std::nullopt;
    return it->second;
}

}  // namespace

Result<std::vector<QperfBlock>> parse_qperf_output(std::string_view text) {
    std::vector<QperfBlock> blocks;
    std::istringstream in{std::string(text)};
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        std::string t(trim(line));
        if (t.empty()) continue;
        bool indented = std::isspace(static_cast<unsigned char>(line[0]));
        if (!indented && t.back() == ':' && t.find(' ') == std::string::npos) {
            blocks.push_back({t.substr(0, t.size() - 1), {}});
            continue;
        }
        auto eq = t.find('=');
        if (!indented || eq == std::string::npos || blocks.empty()) {
            // Anything else is qperf telling why a test did not run.
            Error e = make_error(fmt::format("qperf{}: {}", blocks.empty() ? "" : " " + blocks.back().test, t), EIO,
                                 "check that the qperf server is reachable in the server namespace");
            return e;
        }
        std::string key(trim(std::string_view(t).substr(0, eq)));
        std::string rest(trim(std::string_view(t).substr(eq + 1)));
        // "4 KiB (4,096)": the parenthesised figure is exact, in base units.
        double value = 0;
        std::string unit;
        auto paren = rest.find('(');
        std::string num = rest;
        if (paren != std::string::npos) {
            std::string inner = rest.substr(paren + 1);
            inner = inner.substr(0, inner.find(')'));
            std::string digits;
            for (char c : inner)
                if (c != ',') digits += c;
            char* end = nullptr;
            value = std::strtod(digits.c_str(), &end);
            if (end == digits.c_str() || *end)
                return make_error(fmt::format("qperf output line {}: cannot read \"{}\"", lineno, t), EINVAL);
            blocks.back().values[key] = value;
            continue;
        }
        char* end = nullptr;
        value = std::strtod(num.c_str(), &end);
        if (end == num.c_str())
            return make_error(fmt::format("qperf output line {}: no number in \"{}\"", lineno, t), EINVAL);
        unit = std::string(trim(end));
        auto scale = unit_scale(unit);
        if (!scale)
            return make_error(fmt::format("qperf output line {}: unknown unit \"{}\"", lineno, unit), EINVAL,
                              "this qperf prints units hotline does not know; run it with -uu");
        blocks.back().values[key] = value * *scale;
    }
    if (blocks.empty()) return make_error("qperf printed no results", EIO);
    for (auto& b : blocks)
        if (b.values.empty())
            return make_error(fmt::format("qperf {} printed no values", b.test), EIO);
    return blocks;
}

Status apply_qperf_blocks(const std::vector<QperfBlock>& blocks, ScenarioResult& r) {
    double bw_bits = 0, bw_secs = 0;
    for (auto& b : blocks) {
        auto get = [&](const char* k) -> std::optional<double> {
            auto it = b.values.find(k);
            if (it == b.values.end()) return std::nullopt;
            return it->second;
        };
        bool lat = b.test.size() > 4 && b.test.substr(b.test.size() - 4) == "_lat";
        bool bw = b.test.size() > 3 && b.test.substr(b.test.size() - 3) == "_bw";
        if (lat) {
            auto l = get("latency");
            if (!l) return make_error("qperf " + b.test + " reported no latency", EIO);
            LatencyPoint p;
            p.one_way_ns = *l;
            p.rtt_mean_ns = 2 * *l;  // qperf's latency is half the round trip
            p.msg_size = std::uint64_t(get("msg_size").value_or(0));
            p.seconds = get("time").value_or(0) / 1e9;
            // Without -v only the latency is printed: derive the rate from it.
            p.rate_per_s = p.rtt_mean_ns > 0 ? 1e9 / p.rtt_mean_ns : 0;
            p.exchanges = std::uint64_t(std::llround(p.rate_per_s * p.seconds));
            r.latency.push_back(p);
        } else if (bw) {
            auto v = get("bw");
            if (!v) return make_error("qperf " + b.test + " reported no bandwidth", EIO);
            double secs = get("time").value_or(0) / 1e9;
            double size = get("msg_size").value_or(0);
            double rate = get("msg_rate").value_or(size > 0 ? *v / 8 / size : 0);
            bw_bits += *v * (secs > 0 ? secs : 1);
            bw_secs += secs > 0 ? secs : 1;
            r.messages += std::uint64_t(std::llround(rate * (secs > 0 ? secs : 1)));
            r.bytes += std::uint64_t(std::llround(*v / 8 * (secs > 0 ? secs : 1)));
        } else {
            r.notes.push_back("qperf test " + b.test + " is not mapped to a result field");
        }
        // qperf's *_cpus_used figures count the whole machine: CPU use is
        // measured by hotline per process instead, like the built-in generators.
    }
    if (bw_secs > 0) {
        r.mbit_per_s = bw_bits / bw_secs / 1e6;
        r.messages_per_s = double(r.messages) / bw_secs;
    }
    return ok_status();
}

}  // namespace hotline
