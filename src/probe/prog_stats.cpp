// SPDX-License-Identifier: Apache-2.0
#include "hotline/probe/prog_stats.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/filter.h>
#include <unistd.h>

#include <utility>

namespace hotline {

std::optional<ProgRunStats> prog_run_stats(int prog_fd) {
    if (prog_fd < 0) return std::nullopt;
    bpf_prog_info info{};
    std::uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len)) return std::nullopt;
    return ProgRunStats{info.run_cnt, info.run_time_ns, info.recursion_misses};
}

std::optional<ProgRunStats> prog_run_stats(const bpf_object* obj, const char* name) {
    const bpf_program* p = bpf_object__find_program_by_name(obj, name);
    return p ? prog_run_stats(bpf_program__fd(p)) : std::nullopt;
}

std::optional<RunStatsCanary> RunStatsCanary::load() {
    // return 0: a filter that keeps nothing.
    const bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
    };
    int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "hl_stats_canary", "GPL", insns, 2, nullptr);
    if (fd < 0) return std::nullopt;
    RunStatsCanary c(fd);
    if (!c.run_once()) return std::nullopt;
    return c;
}

RunStatsCanary::RunStatsCanary(RunStatsCanary&& o) noexcept : fd_(std::exchange(o.fd_, -1)), runs_(o.runs_) {}

RunStatsCanary::~RunStatsCanary() {
    if (fd_ >= 0) close(fd_);
}

// One test run on an Ethernet header's worth of zeros (the least a socket
// filter's test run takes), then the kernel's count.
bool RunStatsCanary::run_once() {
    unsigned char frame[14] = {};
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof frame, .repeat = 1);
    if (bpf_prog_test_run_opts(fd_, &opts)) return false;
    auto st = prog_run_stats(fd_);
    if (!st) return false;
    runs_ = st->run_cnt;
    return true;
}

bool RunStatsCanary::counted() {
    const std::uint64_t before = runs_;
    return run_once() && runs_ > before;
}

}  // namespace hotline
