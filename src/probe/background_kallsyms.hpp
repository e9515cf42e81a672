// SPDX-License-Identifier: Apache-2.0
// /proc/kallsyms read on a thread of its own: the kernel takes tens of
// milliseconds to format it, time in which vmlinux BTF is parsed and the first
// objects load.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <system_error>

#include "hotline/kernel/kernel.hpp"

namespace hotline {

class BackgroundKallsyms {
public:
    BackgroundKallsyms() {
        auto load = [] { return Kallsyms::load(); };
        try {
            pending_ = std::async(std::launch::async, load);
        } catch (const std::system_error&) {
            pending_ = std::async(std::launch::deferred, load);  // no thread: read it when asked
        }
    }
    // Still being read (a deferred load counts as ready: it runs when asked).
    bool pending() const {
        return pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::timeout;
    }
    // Waits for the table on first use; null when /proc/kallsyms could not be read.
    std::unique_ptr<Kallsyms>& get() {
        if (pending_.valid())
            if (auto r = pending_.get(); r) table_ = std::make_unique<Kallsyms>(std::move(*r));
        return table_;
    }

private:
    std::future<Result<Kallsyms>> pending_;
    std::unique_ptr<Kallsyms> table_;
};

}  // namespace hotline
