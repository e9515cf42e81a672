// SPDX-License-Identifier: Apache-2.0
#include "hotline/probe/prog_stats.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

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

}  // namespace hotline
