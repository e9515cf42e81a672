// SPDX-License-Identifier: Apache-2.0
#include "attach_windows.hpp"

#include <algorithm>
#include <cerrno>

#include "attach.hpp"
#include "hotline/base/log.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

AttachWindows::AttachWindows(std::vector<OwnedLink*> links, DutyCycle duty, std::function<void()> before_attach,
                             std::function<void()> after_detach)
    : duty_(duty),
      before_attach_(std::move(before_attach)),
      after_detach_(std::move(after_detach)),
      links_(std::move(links)),
      on_since_(monotonic_ns()) {
    if (!duty_.always()) thread_ = thread_with_signals_blocked([this] { loop(); });
}

AttachWindows::~AttachWindows() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::uint64_t AttachWindows::watched_ns() const {
    std::lock_guard<std::mutex> g(mu_);
    return watched_ns_ + (on_since_ ? monotonic_ns() - on_since_ : 0);
}

std::vector<std::pair<std::string, std::string>> AttachWindows::failures() const {
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
    for (auto l = links_.rbegin(); l != links_.rend(); ++l) (*l)->detach();
    if (after_detach_) after_detach_();
}

// ... and starts once the last one is attached.
void AttachWindows::attach_all() {
    if (before_attach_) before_attach_();
    for (OwnedLink* l : links_) {
        const bool failed_before = std::find_if(failures_.begin(), failures_.end(), [l](auto& f) {
                                       return f.first == l->name();
                                   }) != failures_.end();
        if (failed_before || l->reattach()) continue;
        const std::string why = errname(errno) + " at attach after a window off";
        log_at(LogLevel::kWarn, "{}: {}; it stays detached", l->name(), why);
        failures_.emplace_back(l->name(), why);
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
