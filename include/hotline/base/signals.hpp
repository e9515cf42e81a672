// SPDX-License-Identifier: Apache-2.0
// Shutdown signals (SIGINT, SIGTERM, SIGHUP) are waited for, never handled
// asynchronously: every front end and long-running library call blocks them
// with this one class and polls.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

namespace hotline {

// Blocks SIGINT, SIGTERM and SIGHUP (plus `extra`, e.g. SIGCHLD to wake on a
// child's exit) in the calling thread.  Construct it before starting threads or
// children so they inherit the mask; children unblock what they need.  While
// blocked, a second signal cannot interrupt a restore or a teardown in
// progress: the destructor consumes what arrived before restoring the old mask.
class ShutdownSignals {
public:
    explicit ShutdownSignals(std::initializer_list<int> extra = {});
    ~ShutdownSignals();
    ShutdownSignals(const ShutdownSignals&) = delete;
    ShutdownSignals& operator=(const ShutdownSignals&) = delete;

    int wait(double seconds);  // the signal received (any of the set), 0 on timeout
    int poll() { return wait(0); }
    int received() const { return received_; }  // the first shutdown signal, 0 if none

private:
    sigset_t set_{};
    sigset_t old_{};
    std::atomic<int> received_{0};
};

// A helper thread started with every signal blocked, so that SIGINT and
// SIGTERM go to the threads that wait for them whether or not a
// ShutdownSignals is open yet.
std::thread thread_with_signals_blocked(std::function<void()> body);

bool is_shutdown_signal(int sig);  // SIGINT, SIGTERM or SIGHUP

// "INT", "TERM": the name without its SIG prefix ("signal" when unknown).
std::string signal_name(int sig);

}  // namespace hotline
