// SPDX-License-Identifier: Apache-2.0
// Programs attached for a share of the time, in windows: a program that is not
// attached costs the kernel nothing, where one that returns early still pays
// the tracepoint's dispatch.  Counts are then per watched second, as perf
// scales a multiplexed counter by the time it was enabled.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hotline/probe/bpf_skeleton.hpp"

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

// Detaches the links at the end of each window and attaches them again at the
// start of the next, from a thread of its own.  The links stay their owners'
// (a LoadedObject, a Discovery), which outlive the windows; every link must
// know how to attach again (not own_link's).  A tracing program's (fentry/fexit) is not: after its link is
// destroyed the kernel may attach it again without its trampoline running it
// (measured on a 6.12 guest), and before 5.19 not at all.
class AttachWindows {
public:
    // `links`: attached, in attach order; they are detached in the reverse order
    // (an entry program before its exit program).  `before_attach` runs before
    // each window opens: state that pairs two events (an entry and its exit, a
    // queue and its execute) must not pair one seen before a window off with
    // one seen after it.  `after_detach` runs after each window closes.  With
    // no links the two hooks are the windows (a switch the programs read).
    AttachWindows(std::vector<OwnedLink*> links, DutyCycle duty, std::function<void()> before_attach = {},
                  std::function<void()> after_detach = {});
    // Stops the windows; the links stay as they are, for their owners to detach.
    ~AttachWindows();
    AttachWindows(const AttachWindows&) = delete;
    AttachWindows& operator=(const AttachWindows&) = delete;

    const DutyCycle& duty() const { return duty_; }
    // Time during which the programs were attached, since construction.
    double watched_seconds() const { return double(watched_ns()) / 1e9; }
    std::uint64_t watched_ns() const;
    // Links that failed to attach again after a window off (by name), with the
    // error; they stay detached.
    std::vector<std::pair<std::string, std::string>> failures() const;

private:
    void loop();
    bool wait(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds d);
    void detach_all();
    void attach_all();

    const DutyCycle duty_;
    const std::function<void()> before_attach_;
    const std::function<void()> after_detach_;
    std::vector<OwnedLink*> links_;
    std::vector<std::pair<std::string, std::string>> failures_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::uint64_t watched_ns_ = 0;
    std::uint64_t on_since_ = 0;  // 0: detached now
    std::thread thread_;
};

}  // namespace hotline
