// SPDX-License-Identifier: Apache-2.0
// Programs attached for a share of the time, in windows: a program that is not
// attached costs the kernel nothing, where one that returns early still pays
// the tracepoint's dispatch.  Counts are then per watched second, as perf
// scales a multiplexed counter by the time it was enabled.
#pragma once

#include <bpf/libbpf.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hotline {

struct DutyCycle {
    int percent = 100;  // of each period attached; 100: attached throughout
    std::chrono::milliseconds period{2000};
    // Where in its period the first window starts: 0, attached for a whole
    // window first; a benchmark draws it at random, so that a run shorter than
    // a period falls on attached and detached time as a long session does.
    std::chrono::milliseconds phase{0};
    std::chrono::milliseconds on() const { return period * percent / 100; }
    bool always() const { return percent >= 100; }
};

class AttachWindows {
public:
    // Takes the attached links of `programs` (one link each, same order).
    AttachWindows(std::vector<std::pair<bpf_program*, bpf_link*>> attached, DutyCycle duty);
    // Stops the windows and detaches every program.
    ~AttachWindows();
    AttachWindows(const AttachWindows&) = delete;
    AttachWindows& operator=(const AttachWindows&) = delete;

    // Time during which the programs were attached, since construction.
    double watched_seconds() const;
    // Programs that failed to attach again after a window off, with the error;
    // they stay detached.
    std::vector<std::pair<bpf_program*, std::string>> failures() const;

private:
    void loop();
    bool wait(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds d);
    void detach_all();
    void attach_all();

    const DutyCycle duty_;
    std::vector<std::pair<bpf_program*, bpf_link*>> links_;
    std::vector<std::pair<bpf_program*, std::string>> failures_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::uint64_t watched_ns_ = 0;
    std::uint64_t on_since_ = 0;  // 0: detached now
    std::thread thread_;
};

}  // namespace hotline
