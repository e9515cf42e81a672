// SPDX-License-Identifier: Apache-2.0
#include "hotline/base/perf_event.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace hotline {

int open_perf_event(perf_event_attr& attr, pid_t pid, int cpu, unsigned long flags) {
    attr.size = sizeof attr;
    return static_cast<int>(syscall(SYS_perf_event_open, &attr, pid, cpu, -1, flags));
}

int open_cpu_clock_event(int cpu, int freq, bool disabled, unsigned long flags) {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.freq = 1;
    attr.sample_freq = static_cast<__u64>(freq);
    attr.disabled = disabled;
    return open_perf_event(attr, -1, cpu, flags);
}

}  // namespace hotline
