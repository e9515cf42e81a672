// SPDX-License-Identifier: Apache-2.0
#include "serve_util.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <httplib.h>
#include <sstream>

extern char** environ;

namespace servetest {

namespace fs = std::filesystem;

std::string make_tempdir() {
    char tmpl[] = "/tmp/hotline-serve-XXXXXX";
    char* d = mkdtemp(tmpl);
    return d ? d : "";
}

bool have(const char* tool) { return hosttest::run(std::string("command -v ") + tool + " >/dev/null").rc == 0; }

pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& extra_env) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
    for (auto& e : extra_env) env_store.push_back(e);
    std::vector<char*> env;
    for (auto& e : env_store) env.push_back(e.data());
    env.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data()) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

// The child's pidfd becomes readable when it exits, so the wait ends with it.
int wait_exit(pid_t pid, double secs) {
    int st = 0;
    auto reaped = [&] { return waitpid(pid, &st, WNOHANG) == pid; };
    auto timeout = std::chrono::milliseconds(int(secs * 1000));
    int pfd = int(syscall(SYS_pidfd_open, pid, 0));
    if (pfd < 0) {
        if (!wait_until(reaped, timeout)) return -1;  // a kernel without pidfd_open (before 5.3)
    } else {
        pollfd p{pfd, POLLIN, 0};
        auto deadline = Clock::now() + timeout;
        for (int ms = int(timeout.count()); poll(&p, 1, ms) < 0 && errno == EINTR;)
            ms = std::max(0, int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
        close(pfd);
        if (!reaped()) return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

namespace {

// The last `lines` lines of `text`.
std::string tail(const std::string& text, int lines) {
    std::size_t at = text.size();
    for (int n = 0; n <= lines && at != std::string::npos && at > 0; ++n) at = text.rfind('\n', at - 1);
    return at == std::string::npos || at == 0 ? text : text.substr(at + 1);
}

}  // namespace

// Waits for "listening on http[s]://HOST:PORT/metrics" in the daemon's output (HOST
// may be an IPv6 address), or for the daemon to exit first.
Daemon::Daemon(const std::string& config_text, std::vector<std::string> extra_args, std::vector<std::string> env,
               const std::string& listen) {
    dir_ = make_tempdir();
    config_ = dir_ + "/serve.toml";
    log_ = dir_ + "/serve.log";
    std::ofstream(config_) << config_text;
    std::vector<std::string> argv{HOTLINE_BIN, "serve", "--config", config_, "--listen", listen};
    for (auto& a : extra_args) argv.push_back(a);
    pid_ = spawn(argv, log_, env);
    if (pid_ <= 0) {
        startup_ = fmt::format("cannot start {}: {}", HOTLINE_BIN, std::strerror(errno));
        return;
    }
    constexpr int kStartupSecs = 60;  // attaching under ASan on a loaded machine
    auto deadline = Clock::now() + std::chrono::seconds(kStartupSecs);
    while (port_ == 0) {
        std::string out = log();
        auto at = out.find("listening on http");
        auto metrics = at == std::string::npos ? at : out.find("/metrics", at);
        if (metrics != std::string::npos) {
            port_ = std::atoi(out.c_str() + out.rfind(':', metrics) + 1);
        } else if (int rc = wait_exit(pid_, 0.05); rc >= 0) {
            startup_ = fmt::format("hotline serve exited with status {} before it listened", rc);
            ended("");  // the test fails on up(); a sanitizer report fails it here too
            return;
        } else if (Clock::now() >= deadline) {
            startup_ = fmt::format("hotline serve said no \"listening on\" within {} s", kStartupSecs);
            return;
        }
    }
}

Daemon::~Daemon() {
    if (pid_ > 0 && stop(10) < 0) {
        kill(pid_, SIGKILL);
        wait_exit(pid_, 5);
        ended("hotline serve did not exit within 10 s of SIGTERM (killed)");
    }
    fs::remove_all(dir_);
}

std::string Daemon::why_not_up() const {
    return fmt::format("{}\n--- its output (last 40 lines):\n{}", startup_, tail(log(), 40));
}

int Daemon::stop(double secs) {
    if (pid_ <= 0) return -1;
    int rc = wait_exit(pid_, 0);
    if (rc >= 0) {
        ended(fmt::format("hotline serve exited by itself, with status {}, before it was stopped", rc));
        return rc;
    }
    kill(pid_, SIGTERM);
    rc = wait_exit(pid_, secs);
    if (rc < 0) return -1;
    ended(rc == hotline::kExitOk ? ""
                                 : fmt::format("hotline serve exited with status {} after SIGTERM (a clean stop "
                                               "exits 0: docs/metrics.md)",
                                               rc));
    return rc;
}

void Daemon::ended(std::string problem) {
    pid_ = -1;
    std::string out = log();
    for (const char* report : {"ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"})
        if (out.find(report) != std::string::npos)
            problem += fmt::format("{}hotline serve's output holds \"{}\"", problem.empty() ? "" : "; ", report);
    if (problem.empty()) return;
    const auto* test = testing::UnitTest::GetInstance()->current_test_info();
    std::string name = test ? fmt::format("{}.{}", test->test_suite_name(), test->name()) : "(no test)";
    ADD_FAILURE() << name << ": " << problem << "\n--- its output (last 40 lines):\n" << tail(out, 40);
}

int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(std::uint16_t(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    timeval tv{30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

std::string read_all(int fd) {
    std::string out;
    char buf[16384];
    while (true) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, std::size_t(n));
    }
    return out;
}

std::string raw(int port, const std::string& bytes, bool half_close) {
    int fd = connect_to(port);
    if (fd < 0) return "";
    std::size_t off = 0;
    while (off < bytes.size()) {
        ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += std::size_t(n);
    }
    if (half_close) shutdown(fd, SHUT_WR);
    std::string out = read_all(fd);
    close(fd);
    return out;
}

int status_of(const std::string& resp) {
    if (resp.rfind("HTTP/1.1 ", 0) != 0 || resp.size() < 12) return -1;
    return std::atoi(resp.c_str() + 9);
}

std::string body_of(const std::string& resp) {
    auto p = resp.find("\r\n\r\n");
    return p == std::string::npos ? "" : resp.substr(p + 4);
}

std::string header_of(const std::string& resp, const std::string& name) {
    std::string head = resp.substr(0, resp.find("\r\n\r\n"));
    std::istringstream is(head);
    for (std::string line; std::getline(is, line);) {
        if (strncasecmp(line.c_str(), (name + ":").c_str(), name.size() + 1) == 0) {
            std::string v = line.substr(name.size() + 1);
            while (!v.empty() && (v.front() == ' ')) v.erase(0, 1);
            while (!v.empty() && (v.back() == '\r')) v.pop_back();
            return v;
        }
    }
    return "";
}

std::string get(int port, const std::string& path, const std::string& extra_headers) {
    return raw(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers + "\r\n");
}

std::string get_until_served(int port, const std::string& path, int* busy) {
    std::string r;
    wait_until(
        [&] {
            r = get(port, path);
            if (status_of(r) != 503) return true;
            if (busy) ++*busy;
            return false;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(100));
    return r;
}

double sample(const std::string& text, const std::string& series) {
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);)
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return NAN;
}

std::uint64_t status_kb(pid_t pid, const std::string& field) {
    std::istringstream is(hosttest::slurp(fmt::format("/proc/{}/status", pid)));
    for (std::string line; std::getline(is, line);)
        if (line.rfind(field + ":", 0) == 0) return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10);
    return 0;
}

std::size_t fd_count(pid_t pid) {
    std::size_t n = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(fmt::format("/proc/{}/fd", pid))) ++n;
    return n;
}

std::size_t settled_fd_count(pid_t pid) {
    std::size_t n = fd_count(pid);
    auto stable_since = Clock::now();
    wait_until(
        [&] {
            std::size_t m = fd_count(pid);
            if (m != n) stable_since = Clock::now();
            n = m;
            return Clock::now() - stable_since >= std::chrono::milliseconds(200);
        },
        std::chrono::seconds(10));
    return n;
}

void stat_refresh(int times) {
    for (int i = 0; i < times; ++i) {
        int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);
        if (fd < 0) return;
        [[maybe_unused]] auto r = write(fd, "1", 1);
        close(fd);
    }
}

int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    close(fd);
    return ntohs(sa.sin_port);
}

CmdResult make_cert(const std::string& dir) {
    return hosttest::run(fmt::format(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost "
        "-keyout {0}/key.pem -out {0}/cert.pem",
        dir));
}

std::string tls_auth_config(const std::string& dir) {
    // password_sha256 is the SHA-256 of "secret".
    return fmt::format("targets = [\"queue_work_on\"]\n[tls]\ncert = \"{0}/cert.pem\"\nkey = \"{0}/key.pem\"\n"
                       "[basic_auth]\nusername = \"prom\"\n"
                       "password_sha256 = \"2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b\"\n",
                       dir);
}

TlsScrape tls_get(int port, const std::string& path, const std::string& user, const std::string& password) {
    httplib::SSLClient c("127.0.0.1", port);
    c.enable_server_certificate_verification(false);
    c.set_connection_timeout(10);
    c.set_read_timeout(20);
    c.set_write_timeout(10);
    if (!user.empty()) c.set_basic_auth(user, password);
    auto r = c.Get(path);
    if (!r) return {-1, httplib::to_string(r.error()), "", "", ""};
    return {r->status, "", r->get_header_value("Retry-After"), r->body, r->get_header_value("Content-Type")};
}

TlsScrape tls_get_until_served(int port, const std::string& path, int* busy) {
    TlsScrape r;
    wait_until(
        [&] {
            r = tls_get(port, path);
            if (r.status != 503) return true;
            if (busy) ++*busy;
            return false;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(100));
    return r;
}

std::vector<TlsScrape> concurrent_tls_gets(int port, int n) {
    std::vector<TlsScrape> out(std::size_t(n), TlsScrape{});
    std::barrier go(n);
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i)
        ts.emplace_back([&, i] {
            go.arrive_and_wait();
            out[std::size_t(i)] = tls_get(port, "/metrics");
        });
    for (auto& t : ts) t.join();
    return out;
}

}  // namespace servetest
