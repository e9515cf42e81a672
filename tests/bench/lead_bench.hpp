// SPDX-License-Identifier: Apache-2.0
// What the benchmarks that take one program apart on a live tracepoint share
// (cold_lines, counter_layouts): their command line, and programs attached
// behind a lead in table or reverse order, priced by the kernel's run statistics.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "hotline/probe/prog_stats.hpp"

namespace hotline::bench {

struct Prog {
    const char* name;
    const char* what;
};

struct RoundsOptions {
    int rounds = 5;
    double secs = 3;
    bool smoke = false;
    std::string json_path;
};

// Reads [--smoke] [--rounds N] [--duration S] [--json FILE] and checks for root
// (`needs` says what for; without it the benchmark fails: it measured nothing).  Returns the exit code to leave with, or -1 to go on.
inline int parse_rounds(const char* prog, const char* needs, int argc, char** argv, RoundsOptions& o) {
    std::string usage = fmt::format("{} [--smoke] [--rounds N] [--duration S] [--json FILE]", prog);
    Args args(prog, usage.c_str(), argc, argv);
    while (args.next()) {
        if (args.is("--smoke")) o.smoke = true;
        else if (args.is("--rounds")) o.rounds = args.int_value();
        else if (args.is("--duration")) o.secs = args.double_value();
        else if (args.is("--json")) o.json_path = args.value();
        else return args.usage();
    }
    if (o.smoke) {
        o.rounds = 1;
        o.secs = 0.5;
    }
    if (o.rounds < 1 || o.secs <= 0) {
        fmt::print(stderr, "{}: --rounds and --duration must be positive\n", prog);
        return 2;
    }
    if (geteuid() != 0) {
        fmt::print(stderr, "{}: needs root ({}); run it as root\n", prog, needs);
        return 1;
    }
    return -1;
}

// The lead first, then the programs in table order or reversed.
inline std::vector<const char*> lead_then(const char* lead, const std::vector<Prog>& progs, bool reverse) {
    std::vector<const char*> body;
    for (auto& p : progs) body.push_back(p.name);
    if (reverse) std::reverse(body.begin(), body.end());
    body.insert(body.begin(), lead);
    return body;
}

// Attaches the programs in order; nullopt (and a message) when one fails.
inline std::optional<std::vector<bpf_link*>> attach_in_order(bpf_object* obj, const std::vector<const char*>& seq,
                                                             const char* prog) {
    std::vector<bpf_link*> links;
    for (auto* n : seq) {
        bpf_program* p = bpf_object__find_program_by_name(obj, n);
        bpf_link* l = p ? bpf_program__attach(p) : nullptr;
        if (!l) {
            fmt::print(stderr, "{}: attach {}: {}\n", prog, n, std::strerror(errno));
            for (auto* x : links) bpf_link__destroy(x);
            return std::nullopt;
        }
        links.push_back(l);
    }
    return links;
}

// Run count of a program since it was loaded and its ns per run; 0 runs when
// it never ran (or its statistics cannot be read).
inline std::uint64_t run_stats(bpf_object* obj, const char* name, double* ns_per_run) {
    auto st = prog_run_stats(obj, name);
    if (!st || !st->run_cnt) return 0;
    *ns_per_run = st->ns_per_run();
    return st->run_cnt;
}

}  // namespace hotline::bench
