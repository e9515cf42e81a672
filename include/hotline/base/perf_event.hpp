// SPDX-License-Identifier: Apache-2.0
// perf_event_open(2), which glibc does not wrap: the one place hotline fills a
// perf_event_attr.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

namespace hotline {

// A software cpu-clock event sampling at `freq` Hz on `cpu` (all tasks).  Returns
// the fd, or -1 with errno set.
int open_cpu_clock_event(int cpu, int freq, bool disabled, unsigned long flags);

// Any event: fills attr.size and opens it.  Returns the fd, or -1 with errno set.
int open_perf_event(perf_event_attr& attr, pid_t pid, int cpu, unsigned long flags);

}  // namespace hotline
