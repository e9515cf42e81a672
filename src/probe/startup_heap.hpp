// SPDX-License-Identifier: Apache-2.0
// malloc tuning while a session opens.
#pragma once

namespace hotline {

// Start-up parses vmlinux BTF in the session and again in libbpf for every object
// it loads, each time into megabytes of fresh buffers.  While a session opens,
// freed big buffers stay in the heap so that each parse reuses the pages the last
// one faulted in; then the heap is trimmed, as a session can run for days.  The
// thresholds set after keep small per-interval buffers in the heap, while one-off
// buffers of a MiB and more go back to the system when freed.  docs/overhead.md
// has the start-up numbers.
class StartupHeap {
public:
    StartupHeap();
    ~StartupHeap();
    StartupHeap(const StartupHeap&) = delete;
    StartupHeap& operator=(const StartupHeap&) = delete;
};

}  // namespace hotline
