// SPDX-License-Identifier: Apache-2.0
// The one implementation of blocking and waiting for shutdown signals.
#include "hotline/base/signals.hpp"

#include <pthread.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace hotline {

bool is_shutdown_signal(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev ? abbrev : "signal";
}

ShutdownSignals::ShutdownSignals(std::initializer_list<int> extra) {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, s);
    for (int s : extra) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
}

ShutdownSignals::~ShutdownSignals() {
    while (wait(0) != 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

int ShutdownSignals::wait(double seconds) {
    if (seconds < 0) seconds = 0;
    timespec ts{time_t(seconds), long(std::fmod(seconds, 1.0) * 1e9)};
    while (true) {
        int sig = sigtimedwait(&set_, nullptr, &ts);
        if (sig > 0) {
            int none = 0;
            if (is_shutdown_signal(sig)) received_.compare_exchange_strong(none, sig);
            return sig;
        }
        if (errno == EINTR) continue;
        return 0;
    }
}

std::thread thread_with_signals_blocked(std::function<void()> body) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    std::thread t(std::move(body));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return t;
}

}  // namespace hotline
