// SPDX-License-Identifier: Apache-2.0
// What the `hotline serve` host tests share: the Daemon fixture (a real daemon on a
// free loopback port, checked at every shutdown), raw HTTP and HTTPS clients,
// readings of the daemon's /proc entries, and our own workload.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "host_util.hpp"

namespace servetest {

using Clock = std::chrono::steady_clock;
using hosttest::CmdResult;

// Polls `pred` every `step` until it holds or `timeout` passes; true when it held.
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = std::chrono::milliseconds(20)) {
    auto deadline = Clock::now() + timeout;
    while (!pred()) {
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(step);
    }
    return true;
}

std::string make_tempdir();
bool have(const char* tool);
// Starts argv[0] with stdout and stderr appended to log_path; -1 on failure.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& extra_env = {});
// Waits for a child up to `secs`; returns its exit status (128+signal when killed),
// or -1 if it is still running.
int wait_exit(pid_t pid, double secs);

// A `hotline serve` child.  Every shutdown, by stop() or by the destructor, fails the
// running test unless the daemon exited 0 after SIGTERM (docs/metrics.md) and its
// output holds no sanitizer report; the failure names the test and shows the
// output's tail.
class Daemon {
public:
    explicit Daemon(const std::string& config_text, std::vector<std::string> extra_args = {},
                    std::vector<std::string> env = {}, const std::string& listen = "127.0.0.1:0");
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    bool up() const { return pid_ > 0 && port_ > 0; }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    const std::string& dir() const { return dir_; }
    std::string log() const { return hosttest::slurp(log_); }
    // Why the daemon is not serving, with its output: the message for ASSERT_TRUE(up()).
    std::string why_not_up() const;
    // SIGTERM and wait up to `secs`; returns the exit status, -1 if still running.
    int stop(double secs = 15);

private:
    // Once the daemon has been reaped: fails the running test with `problem` and
    // any sanitizer report in the output, when there is either.
    void ended(std::string problem);

    std::string dir_, config_, log_, startup_;
    pid_t pid_ = -1;
    int port_ = 0;
};

int connect_to(int port);
std::string read_all(int fd);
// Sends raw bytes (optionally half-closing) and returns everything the server sent.
std::string raw(int port, const std::string& bytes, bool half_close = false);
int status_of(const std::string& resp);  // -1: no HTTP answer
std::string body_of(const std::string& resp);
std::string header_of(const std::string& resp, const std::string& name);
std::string get(int port, const std::string& path, const std::string& extra_headers = "");
// GET until the answer is not 503 (every worker busy) or 10 s pass; `busy` counts the 503s.
std::string get_until_served(int port, const std::string& path, int* busy = nullptr);
// Value of one sample line "name{labels} value" in an exposition, NaN when absent.
double sample(const std::string& text, const std::string& series);

std::uint64_t status_kb(pid_t pid, const std::string& field);
std::size_t fd_count(pid_t pid);
// The daemon's fd count once its lingering closes are done: unchanged for 200 ms.
std::size_t settled_fd_count(pid_t pid);
// Queued work items via /proc/sys/vm/stat_refresh: one queue_work_on per online CPU.
void stat_refresh(int times);
int free_port();

// A throw-away self-signed certificate, DIR/cert.pem and DIR/key.pem.
CmdResult make_cert(const std::string& dir);
// TLS with the certificate from make_cert(dir) and basic auth prom:secret, in TOML.
std::string tls_auth_config(const std::string& dir);

struct TlsScrape {
    int status = -1;  // -1: no HTTP answer (see error)
    std::string error, retry_after, body, content_type;
};
// One HTTPS GET on a fresh connection, as a Prometheus scrape does; no user when empty.
TlsScrape tls_get(int port, const std::string& path, const std::string& user = "prom",
                  const std::string& password = "secret");
// As tls_get as prom:secret, until the answer is not 503 or 10 s pass; `busy` counts the 503s.
TlsScrape tls_get_until_served(int port, const std::string& path, int* busy = nullptr);
std::vector<TlsScrape> concurrent_tls_gets(int port, int n);

// Attached throughout (probe.duty_cycle = 100): the tests count exact calls.
inline constexpr const char* kQueueWorkConfig =
    "targets = [\"queue_work_on\", \"dst_release\"]\n[probe]\nduty_cycle = 100\n";

}  // namespace servetest
