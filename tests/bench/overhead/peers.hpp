// SPDX-License-Identifier: Apache-2.0
// The peers hotline is measured against, each run as the tool users run it:
// `perf stat -e EVENT -a` and a bpftrace script (peers.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "hotline/base/result.hpp"
#include "hotline/workload/workload.hpp"

namespace overhead {

using hotline::ChildProcess;
using hotline::Result;
using hotline::Status;

struct ProgStat;

// `perf stat -e EVENT -a`: the kernel counting a tracepoint's hits in its perf
// events, no BPF.  Started with its events off (-D -1) and switched through its
// control FIFOs, so the timing starts only once the kernel is counting.
class PerfStat {
  public:
    static Result<PerfStat> start(const std::string& event);
    Status enable() { return command("enable"); }
    Status disable() { return command("disable"); }
    // Ends perf and returns the hits it counted while enabled.
    Result<std::uint64_t> stop();
    PerfStat() = default;
    PerfStat(PerfStat&& o) noexcept;
    ~PerfStat();

  private:
    Status command(const char* what);
    std::optional<ChildProcess> child_;
    std::string dir_, event_;
    int ctl_ = -1, ack_ = -1;
};

// perf counting EVENT while TIMED runs: TIMED's result, once perf's count reached
// EXPECTED hits (fewer is a failure: perf missed what was triggered).
Result<double> time_under_perf_stat(const std::string& event,
                                    const std::function<Result<double>()>& timed, double expected);

// bpftrace attached while this lives; its programs are those loaded since it
// started that are still there once it says it attached.
struct Bpftrace {
    std::optional<ChildProcess> child;
    std::set<std::uint32_t> before;
    std::string out_path;

    static Result<Bpftrace> start(const char* script);
    std::map<std::uint32_t, ProgStat> stats() const;
    // Ends bpftrace and sums each map it printed at exit (`@name[key]: N`
    // lines) by map name: what it counted, for a check against the triggers.
    std::map<std::string, std::uint64_t> stop_and_sum();
    ~Bpftrace();
    static void stop(ChildProcess& c);
    Bpftrace() = default;
    Bpftrace(Bpftrace&& o) noexcept;
};

}  // namespace overhead
