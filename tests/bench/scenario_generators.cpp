// SPDX-License-Identifier: Apache-2.0
// Built-in generators against established tools on the same veth path, side by
// side in one run: is the reproducer, not the generator, what limits the load?
// Target: built-in message rate >= 0.9x the peer's.  Prints, never asserts.
//
//   bench_scenario_generators [--smoke] [--duration S] [--rounds N] [--json FILE]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "hotline/workload/scenario.hpp"

using namespace hotline;

namespace {

struct Pair {
    std::string name;
    std::string unit;
    std::vector<double> builtin, peer;
    std::string note;
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

Result<ScenarioResult> run(ScenarioOptions o) {
    auto r = run_scenario(std::move(o), {});
    if (r && r->stop_reason.rfind("stopped by", 0) == 0) return make_error("interrupted", EINTR);
    return r;
}

// iperf3 in the scenario's namespaces through the exec scenario; its JSON
// report lands in a file the bench reads back.
Result<double> iperf3_msgs_per_s(const std::vector<int>& cpus, int streams, double secs) {
    char tmpl[] = "/tmp/hotline-bench-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return make_error("mkstemp", errno);
    close(fd);
    std::string out = tmpl;
    ScenarioOptions o;
    o.name = "exec";
    o.cpus = cpus;
    o.server_command = {"sh", "-c", "exec iperf3 -s > /dev/null 2>&1"};
    // The server needs a moment to listen: the client retries until it connects.
    // iperf3 -J can exit 0 with {"error": "unable to connect ..."}, so the JSON is checked too.
    o.command = {"sh", "-c",
                 fmt::format("for i in $(seq 100); do iperf3 -c $HOTLINE_SERVER_ADDR -t {} -l 64 -N -w 64K -P {} -J > {} "
                             "&& ! grep -q '\"error\"' {} && exit 0; sleep 0.1; done; exit 1",
                             std::max(1L, std::lround(secs)), streams, out, out)};
    auto r = run(o);
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    unlink(out.c_str());
    if (!r) return r.error();
    if (!r->command_status || *r->command_status != 0)
        return make_error("iperf3 failed", EIO, "install iperf3 (Debian package iperf3)");
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.contains("end")) return make_error("iperf3 printed no JSON report", EIO);
    if (j.contains("error")) return make_error("iperf3: " + j["error"].get<std::string>(), EIO);
    auto& s = j["end"]["sum_sent"];
    double bytes = s["bytes"].get<double>(), seconds = s["seconds"].get<double>();
    return seconds > 0 ? bytes / 64 / seconds : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
    double secs = 5;
    int rounds = 1;
    std::string json_out;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--smoke") secs = 1;
        else if (a == "--duration" && i + 1 < argc) secs = std::atof(argv[++i]);
        else if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
        else if (a == "--json" && i + 1 < argc) json_out = argv[++i];
        else {
            fmt::print(stderr, "usage: {} [--smoke] [--duration S] [--rounds N] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    if (geteuid() != 0) {
        fmt::print(stderr, "bench: needs root (network namespaces)\n");
        return 1;
    }
    auto cpus = usable_cpus();
    const int flows = 3;
    std::vector<Pair> pairs = {
        {fmt::format("dst-refcount {}x{} flows vs iperf3 -P{} -l64 -N -w64K", cpus.size(), flows, cpus.size() * flows),
         "msg/s", {}, {}, "iperf3 (bookworm) drives all streams from one thread"},
        {"dst-refcount 1 flow vs iperf3 -P1 -l64 -N -w64K, all on CPU 0", "msg/s", {}, {},
         "single stream, both tools NODELAY; qperf tcp_bw is no peer here: it leaves Nagle on"},
        {"irq-lat 4K vs qperf tcp_lat 4K", "rtt/s", {}, {}, "same pinning: client on the first CPU, server on the last"},
        {"irq-lat 64K vs qperf tcp_lat 64K", "rtt/s", {}, {}, ""},
    };
    auto fail = [](const char* what, const Error& e) {
        fmt::print(stderr, "bench: {}: {}\n", what, e.message());
        return 1;
    };
    for (int round = 0; round < rounds; ++round) {
        {
            ScenarioOptions o;
            o.name = "dst-refcount";
            o.cpus = cpus;
            o.flows_per_cpu = flows;
            o.duration_s = secs;
            auto b = run(o);
            if (!b) return fail("dst-refcount", b.error());
            auto p = iperf3_msgs_per_s(cpus, int(cpus.size()) * flows, secs);
            if (!p) return fail("iperf3", p.error());
            pairs[0].builtin.push_back(b->messages_per_s);
            pairs[0].peer.push_back(*p);
        }
        {
            ScenarioOptions o;
            o.name = "dst-refcount";
            o.cpus = {cpus.front()};
            o.flows_per_cpu = 1;
            o.duration_s = secs;
            auto b = run(o);
            if (!b) return fail("dst-refcount", b.error());
            auto p = iperf3_msgs_per_s({cpus.front()}, 1, secs);
            if (!p) return fail("iperf3", p.error());
            pairs[1].builtin.push_back(b->messages_per_s);
            pairs[1].peer.push_back(*p);
        }
        for (int k = 0; k < 2; ++k) {
            std::uint64_t size = k == 0 ? 4096 : 65536;
            ScenarioOptions o;
            o.name = "irq-lat";
            o.msg_sizes = {size};
            o.duration_s = std::max(1.0, std::round(secs));
            auto b = run(o);
            if (!b || b->latency.empty()) return fail("irq-lat", b ? make_error("no latency point") : b.error());
            ScenarioOptions q = o;
            q.name = "qperf";
            q.qperf_test = "tcp_lat";
            auto p = run(q);
            if (!p || p->latency.empty()) return fail("qperf tcp_lat", p ? make_error("no latency point") : p.error());
            pairs[std::size_t(2 + k)].builtin.push_back(b->latency[0].rate_per_s);
            pairs[std::size_t(2 + k)].peer.push_back(p->latency[0].rate_per_s);
        }
    }
    fmt::print("{:<58} {:>12} {:>12} {:>7}  target >= 0.9\n", fmt::format("pair ({} s, median of {})", secs, rounds),
               "built-in", "peer", "ratio");
    nlohmann::json j = nlohmann::json::array();
    for (auto& p : pairs) {
        double b = median(p.builtin), q = median(p.peer), ratio = q > 0 ? b / q : 0;
        fmt::print("{:<58} {:>12.0f} {:>12.0f} {:>7.2f}  {}\n", p.name, b, q, ratio, ratio >= 0.9 ? "met" : "NOT met");
        if (!p.note.empty()) fmt::print("  ({}, {})\n", p.unit, p.note);
        j.push_back({{"pair", p.name}, {"unit", p.unit}, {"builtin", p.builtin}, {"peer", p.peer}, {"ratio", ratio}});
    }
    // A pair at 0 msg/s (or a peer that measured nothing) fails in the figure check.
    return hotline::bench::finish("bench_scenario_generators", j, json_out, {}, {});
}
