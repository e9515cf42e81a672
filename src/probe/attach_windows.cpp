// SPDX-License-Identifier: Apache-2.0
#include "attach_windows.hpp"

#include <algorithm>
#include <cerrno>

#include "attach.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

AttachWindows::AttachWindows(std::vector<std::pair<bpf_program*, bpf_link*>> attached, DutyCycle duty)
    : duty_(duty), links_(std::move(attached)), on_since_(monotonic_ns()) {
    if (!duty_.always()) thread_ = thread_with_signals_blocked([this] { loop(); });
}

AttachWindows::~AttachWindows() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> g(mu_);
    detach_all();
}

double AttachWindows::watched_seconds() const {
    std::lock_guard<std::mutex> g(mu_);
    const std::uint64_t open = on_since_ ? monotonic_ns() - on_since_ : 0;
    return double(watched_ns_ + open) / 1e9;
}

std::vector<std::pair<bpf_program*, std::string>> AttachWindows::failures() const {
    std::lock_guard<std::mutex> g(mu_);
    return failures_;
}

// true when told to stop.
bool AttachWindows::wait(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds d) {
    return cv_.wait_for(lk, d, [this] { return stop_; });
}

// The watched time ends before the first link goes: no time is counted
// during which a program may already be gone.
void AttachWindows::detach_all() {
    if (on_since_) watched_ns_ += monotonic_ns() - on_since_;
    on_since_ = 0;
    for (auto& [prog, link] : links_) {
        if (link) bpf_link__destroy(link);
        link = nullptr;
    }
}

// ... and starts once the last one is attached.
void AttachWindows::attach_all() {
    for (auto& pl : links_) {
        bpf_program* prog = pl.first;
        const bool failed_before =
            std::find_if(failures_.begin(), failures_.end(), [prog](auto& f) { return f.first == prog; }) != failures_.end();
        if (failed_before) continue;
        pl.second = bpf_program__attach(prog);
        if (!pl.second) failures_.emplace_back(prog, errname(errno) + " at attach after a window off");
    }
    on_since_ = monotonic_ns();
}

void AttachWindows::loop() {
    std::unique_lock<std::mutex> lk(mu_);
    const auto phase = duty_.phase % duty_.period;
    auto on_left = phase < duty_.on() ? duty_.on() - phase : std::chrono::milliseconds(0);
    auto off_left = duty_.period - std::max(phase, duty_.on());
    while (!stop_) {
        if (wait(lk, on_left)) return;
        detach_all();
        if (wait(lk, off_left)) return;
        attach_all();
        on_left = duty_.on();
        off_left = duty_.period - duty_.on();
    }
}

}  // namespace hotline
