// `hotline serve` on the real kernel: exposition accepted by promtool and scraped by
// a real Prometheus, counters driven by our own workload, no fd/RSS growth over
// 1,000 scrapes, overload and malformed requests, config checks, TLS and auth (and 503 over TLS),
// systemd readiness, and detaching everything on SIGTERM.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <httplib.h>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <set>
#include <vector>

#include "host_util.hpp"
#include "machine_facts.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string make_tempdir() {
    char tmpl[] = "/tmp/hotline-serve-XXXXXX";
    char* d = mkdtemp(tmpl);
    return d ? d : "";
}

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Cmd {
    int rc = -1;
    std::string out;
};

// Runs a shell command, returning its exit status and combined output.
Cmd sh(const std::string& cmd) {
    Cmd r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return r;
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) r.out += buf;
    int st = pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

bool have(const char* tool) { return sh(std::string("command -v ") + tool + " >/dev/null").rc == 0; }

pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& extra_env = {}) {
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

// Waits for a child up to `secs`; returns its exit status, or -1 if still running.
int wait_exit(pid_t pid, double secs) {
    auto end = Clock::now() + std::chrono::milliseconds(int(secs * 1000));
    while (Clock::now() < end) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
}

// A `hotline serve` child on a free loopback port.
class Daemon {
public:
    Daemon(const std::string& config_text, std::vector<std::string> extra_args = {},
           std::vector<std::string> env = {}, const std::string& listen = "127.0.0.1:0") {
        dir_ = make_tempdir();
        config_ = dir_ + "/serve.toml";
        log_ = dir_ + "/serve.log";
        std::ofstream(config_) << config_text;
        std::vector<std::string> argv{HOTLINE_BIN, "serve", "--config", config_, "--listen", listen};
        for (auto& a : extra_args) argv.push_back(a);
        pid_ = spawn(argv, log_, env);
        auto end = Clock::now() + std::chrono::seconds(60);
        while (pid_ > 0 && Clock::now() < end) {
            std::string log = slurp(log_);
            auto at = log.find("listening on http");
            if (at != std::string::npos && log.find("/metrics", at) != std::string::npos) {
                // "listening on http://HOST:PORT/metrics": HOST may be an IPv6 address.
                auto colon = log.rfind(':', log.find("/metrics", at));
                port_ = std::atoi(log.c_str() + colon + 1);
                break;
            }
            if (wait_exit(pid_, 0) >= 0) {
                pid_ = -1;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ~Daemon() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            if (wait_exit(pid_, 10) < 0) {
                kill(pid_, SIGKILL);
                wait_exit(pid_, 5);
            }
        }
        fs::remove_all(dir_);
    }
    bool up() const { return pid_ > 0 && port_ > 0; }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string log() const { return slurp(log_); }
    const std::string& dir() const { return dir_; }
    // SIGTERM and wait up to `secs`; returns the exit status, -1 if still running.
    int stop(double secs = 15) {
        kill(pid_, SIGTERM);
        int rc = wait_exit(pid_, secs);
        if (rc >= 0) pid_ = -1;
        return rc;
    }

private:
    std::string dir_, config_, log_;
    pid_t pid_ = -1;
    int port_ = 0;
};

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

// Sends raw bytes (optionally half-closing) and returns everything the server sent.
std::string raw(int port, const std::string& bytes, bool half_close = false) {
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

std::string get(int port, const std::string& path, const std::string& extra_headers = "") {
    return raw(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers + "\r\n");
}

// Value of one sample line "name{labels} value" in an exposition, NaN when absent.
double sample(const std::string& text, const std::string& series) {
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);)
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return NAN;
}

std::uint64_t status_kb(pid_t pid, const std::string& field) {
    std::istringstream is(slurp(fmt::format("/proc/{}/status", pid)));
    for (std::string line; std::getline(is, line);)
        if (line.rfind(field + ":", 0) == 0) return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10);
    return 0;
}

std::size_t fd_count(pid_t pid) {
    std::size_t n = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(fmt::format("/proc/{}/fd", pid))) ++n;
    return n;
}

// The daemon's fd count once its lingering closes are done: polled until it
// has not changed for 200 ms (at most 10 s), instead of guessing a sleep.
std::size_t settled_fd_count(pid_t pid) {
    std::size_t n = fd_count(pid);
    auto stable_since = Clock::now(), deadline = stable_since + std::chrono::seconds(10);
    while (Clock::now() - stable_since < std::chrono::milliseconds(200) && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::size_t m = fd_count(pid);
        if (m != n) stable_since = Clock::now();
        n = m;
    }
    return n;
}

// Queued work items via /proc/sys/vm/stat_refresh: one queue_work_on per online CPU.
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

const char* kQueueWorkConfig = "targets = [\"queue_work_on\", \"dst_release\"]\n";

}  // namespace

TEST(ServeHost, ExpositionPassesPromtoolAndNegotiatesOpenMetrics) {
    if (!have("promtool")) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
    Daemon d("[metrics]\nper_cpu = true\n");
    ASSERT_TRUE(d.up()) << d.log();
    stat_refresh(5);
    std::string text = get(d.port(), "/metrics");
    ASSERT_EQ(status_of(text), 200) << text;
    EXPECT_EQ(header_of(text, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    std::string path = d.dir() + "/metrics.txt";
    std::ofstream(path) << body_of(text);
    Cmd r = sh("promtool check metrics < " + path);
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(r.out, "") << "promtool lint findings";
    EXPECT_NE(body_of(text).find("cpu=\"0\""), std::string::npos) << "per_cpu = true gives cpu labels";

    std::string om = get(d.port(), "/metrics", "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n");
    ASSERT_EQ(status_of(om), 200);
    EXPECT_EQ(header_of(om, "Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
    std::string omb = body_of(om);
    ASSERT_GE(omb.size(), 6u);
    EXPECT_EQ(omb.substr(omb.size() - 6), "# EOF\n");
    EXPECT_NE(omb.find("# TYPE hotline_calls counter"), std::string::npos);

    std::string head = raw(d.port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(head), 200);
    EXPECT_EQ(body_of(head), "");

    std::string plan = get(d.port(), "/plan");
    ASSERT_EQ(status_of(plan), 200);
    auto j = nlohmann::json::parse(body_of(plan), nullptr, false);
    ASSERT_TRUE(j.is_array()) << body_of(plan);
    EXPECT_EQ(j.size(), 4u);  // every built-in target, attached or not
    EXPECT_EQ(body_of(get(d.port(), "/healthz")), "ok\n");
    EXPECT_EQ(status_of(get(d.port(), "/nope")), 404);
}

TEST(ServeHost, CountersFollowOurOwnWorkloadAndNeverReset) {
    Daemon d(kQueueWorkConfig);
    ASSERT_TRUE(d.up()) << d.log();
    std::string m0 = body_of(get(d.port(), "/metrics"));
    ASSERT_NE(m0.find("hotline_probe_attached{target=\"queue_work_on\",mechanism=\""), std::string::npos) << m0;
    ASSERT_EQ(m0.find("hotline_probe_attached{target=\"queue_work_on\",mechanism=\"unavailable\"}"), std::string::npos)
        << "queue_work_on must be watched on this machine\n" << m0;
    auto calls = [&](const std::string& m) {
        double s = 0;
        std::istringstream is(m);
        for (std::string line; std::getline(is, line);)
            if (line.rfind("hotline_calls_total{target=\"queue_work_on\"", 0) == 0)
                s += std::stod(line.substr(line.rfind(' ') + 1));
        return s;
    };
    const int kRefreshes = 50;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double before = calls(m0);
    stat_refresh(kRefreshes);
    double after = calls(body_of(get(d.port(), "/metrics")));
    // Each refresh queues one work item per online CPU; other kernel work only adds.
    EXPECT_GE(after - before, double(kRefreshes * cpus)) << before << " -> " << after;
    double later = calls(body_of(get(d.port(), "/metrics")));
    EXPECT_GE(later, after) << "counters are cumulative";
}

TEST(ServeHost, NoFdOrRssGrowthAcross1000Scrapes) {
    Daemon d(kQueueWorkConfig);
    ASSERT_TRUE(d.up()) << d.log();
    for (int i = 0; i < 50; ++i) ASSERT_EQ(status_of(get(d.port(), "/metrics")), 200);  // warm-up
    std::size_t fds0 = settled_fd_count(d.pid());
    std::uint64_t rss0 = status_kb(d.pid(), "VmRSS");
    std::vector<double> ms;
    int ok = 0;
    for (int i = 0; i < 1000; ++i) {
        auto t0 = Clock::now();
        std::string r = get(d.port(), "/metrics");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        ok += status_of(r) == 200 && body_of(r).find("process_start_time_seconds") != std::string::npos;
    }
    std::size_t fds1 = settled_fd_count(d.pid());
    std::uint64_t rss1 = status_kb(d.pid(), "VmRSS");
    std::sort(ms.begin(), ms.end());
    std::printf("1000 scrapes: %d ok; latency ms p50 %.2f p99 %.2f max %.2f; fds %zu -> %zu; RSS %llu -> %llu kB\n",
                ok, ms[500], ms[990], ms.back(), fds0, fds1, (unsigned long long)rss0, (unsigned long long)rss1);
    EXPECT_EQ(ok, 1000);
    EXPECT_LE(fds1, fds0);
    // A leak of 512 bytes per scrape would show; allocator noise stays well below.
    EXPECT_LE(rss1, rss0 + 512) << "RSS grew by " << (rss1 - rss0) << " kB";
}

TEST(ServeHost, HundredConcurrentScrapesGet200Or503) {
    Daemon d(kQueueWorkConfig);
    ASSERT_TRUE(d.up()) << d.log();
    constexpr int kClients = 100;
    std::vector<int> fds(kClients, -1);
    for (int i = 0; i < kClients; ++i) fds[std::size_t(i)] = connect_to(d.port());
    std::vector<std::string> resp(kClients);
    std::barrier go(kClients);
    std::vector<std::thread> ts;
    for (int i = 0; i < kClients; ++i)
        ts.emplace_back([&, i] {
            go.arrive_and_wait();
            int fd = fds[std::size_t(i)];
            if (fd < 0) return;
            std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
            send(fd, req.data(), req.size(), MSG_NOSIGNAL);
            resp[std::size_t(i)] = read_all(fd);
            close(fd);
        });
    for (auto& t : ts) t.join();
    std::map<int, int> by_status;
    for (auto& r : resp) {
        int s = status_of(r);
        ++by_status[s];
        if (s == 200) {
            EXPECT_EQ(std::to_string(body_of(r).size()), header_of(r, "Content-Length"));
        } else if (s == 503) {
            EXPECT_EQ(header_of(r, "Retry-After"), "1");
        }
    }
    std::printf("100 concurrent scrapes: %d x 200, %d x 503, %zu other\n", by_status[200], by_status[503],
                resp.size() - std::size_t(by_status[200] + by_status[503]));
    EXPECT_EQ(by_status[200] + by_status[503], kClients);
    EXPECT_GE(by_status[200], 1);
    EXPECT_EQ(status_of(get(d.port(), "/healthz")), 200);
    double busy = sample(body_of(get(d.port(), "/metrics")), "hotline_http_rejected_total{reason=\"busy\"}");
    EXPECT_EQ(busy, double(by_status[503]));
}

TEST(ServeHost, MalformedRequestsGetTheDocumentedStatusAndServingGoesOn) {
    Daemon d(std::string(kQueueWorkConfig) + "[http]\nread_timeout = \"1s\"\n");
    ASSERT_TRUE(d.up()) << d.log();
    struct Case {
        const char* name;
        std::string bytes;
        bool half_close;
        int status;
    };
    std::string garbage;
    for (int i = 0; i < 3000; ++i) garbage += char((i * 7919 + 13) % 251 + 1);
    garbage += "\r\n\r\n";
    std::string many;
    for (int i = 0; i < 2000; ++i) many += fmt::format("X-H{}: v\r\n", i);
    std::vector<Case> cases = {
        {"huge header", "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 << 10, 'a') + "\r\n\r\n", false, 431},
        {"many headers", "GET /metrics HTTP/1.1\r\n" + many + "\r\n", false, 431},
        {"huge URI", "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n", false, 431},
        {"unknown method", "BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false, 400},
        {"POST", "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd", false, 405},
        {"DELETE", "DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false, 405},
        {"garbage bytes", garbage, false, 400},
        {"half-closed mid-headers", "GET /metrics HTTP/1.1\r\nHost: x\r\n", true, 400},
        {"half-closed after a full request", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", true, 200},
        {"request line never finished", "GET /metrics HTTP/1.1\r\nHost: x", false, 408},
    };
    for (const auto& c : cases) {
        std::string r = raw(d.port(), c.bytes, c.half_close);
        EXPECT_EQ(status_of(r), c.status) << c.name << ": " << r.substr(0, 200);
        if (c.status == 405) {
            EXPECT_EQ(header_of(r, "Allow"), "GET, HEAD") << c.name;
        }
        EXPECT_EQ(status_of(get(d.port(), "/healthz")), 200) << "after " << c.name;
    }
    // A client that resets the connection right after asking.
    for (int i = 0; i < 20; ++i) {
        int fd = connect_to(d.port());
        std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        send(fd, req.data(), req.size(), MSG_NOSIGNAL);
        linger lg{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
    }
    // The resets may still hold every worker for a moment (then 503 is the answer).
    std::string m = get(d.port(), "/metrics");
    for (int i = 0; i < 50 && status_of(m) == 503; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        m = get(d.port(), "/metrics");
    }
    ASSERT_EQ(status_of(m), 200) << "the daemon survives resets";
    std::string b = body_of(m);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"too_large\"}"), 3);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"method\"}"), 2);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"bad_request\"}"), 3);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"timeout\"}"), 1);
    EXPECT_EQ(wait_exit(d.pid(), 0), -1) << "still running";
}

TEST(ServeHost, CheckConfigRejectsBadFilesNamingTheLine) {
    std::string dir = make_tempdir();
    struct Bad {
        const char* text;
        int line;
    };
    std::vector<Bad> bad = {
        {"listen = \"127.0.0.1:9464\"\n[probe\n", 2},
        {"# targets\n\ntargets = [\"dst_release\", \"no_such_function\"]\n", 3},
        {"[[target]]\nname = \"queue_work_on\"\nmechanism = \"uprobe\"\n", 3},
        {"[http]\nmax_concurrent = 0\n", 2},
        {"[metrics]\nper_cpu = 1\n", 2},
        {"lissen = \"127.0.0.1:1\"\n", 1},
        {"listen = \"127.0.0.1\"\n", 1},
        {"\n\n\n[tls]\ncert = \"/nonexistent.pem\"\nkey = \"/nonexistent.key\"\n", 5},
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        std::string path = fmt::format("{}/bad{}.toml", dir, i);
        std::ofstream(path) << bad[i].text;
        Cmd r = sh(fmt::format("{} serve --check-config --config {}", HOTLINE_BIN, path));
        EXPECT_EQ(r.rc, hotline::kExitUsage) << bad[i].text << r.out;
        EXPECT_NE(r.out.find(fmt::format("{}:{}:", path, bad[i].line)), std::string::npos)
            << bad[i].text << "\n--- said:\n" << r.out;
    }
    std::string good = dir + "/good.toml";
    std::ofstream(good) << "targets = [\"queue_work_on\"]\n[metrics]\nper_cpu = true\n";
    Cmd r = sh(fmt::format("{} serve --check-config --config {}", HOTLINE_BIN, good));
    EXPECT_EQ(r.rc, 0) << r.out;
    Cmd l = sh(fmt::format("{} serve --check-config --listen nope", HOTLINE_BIN));
    EXPECT_EQ(l.rc, hotline::kExitUsage) << l.out;
    fs::remove_all(dir);
}

TEST(ServeHost, StrictFailsWhenATargetCannotAttach) {
    std::string dir = make_tempdir();
    std::string cfg = dir + "/strict.toml";
    // tcp_prequeue left the kernel in 4.14: it never attaches here.
    std::ofstream(cfg) << "targets = [\"queue_work_on\", \"tcp_prequeue\"]\n";
    Cmd strict = sh(fmt::format("{} serve --check-config --strict --config {}", HOTLINE_BIN, cfg));
    EXPECT_EQ(strict.rc, 1) << strict.out;
    EXPECT_NE(strict.out.find("tcp_prequeue"), std::string::npos) << strict.out;
    std::string ok = dir + "/ok.toml";
    std::ofstream(ok) << "targets = [\"queue_work_on\"]\n";
    Cmd fine = sh(fmt::format("{} serve --check-config --strict --config {}", HOTLINE_BIN, ok));
    EXPECT_EQ(fine.rc, 0) << fine.out;

    Daemon lenient("targets = [\"queue_work_on\", \"tcp_prequeue\"]\n");
    ASSERT_TRUE(lenient.up()) << lenient.log();
    std::string m = body_of(get(lenient.port(), "/metrics"));
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"tcp_prequeue\",mechanism=\"unavailable\"}"), 0) << m;
    fs::remove_all(dir);
}

// One connection serves several requests: pipelined ones, and one sent after an
// idle pause (the connection waits without a worker); an idle connection is
// closed after keep_alive_timeout.
// `--listen [::1]:0`: the exporter binds the IPv6 loopback, says so with the
// address in brackets, and serves the exposition there.
TEST(ServeHost, ServesOnTheIpv6Loopback) {
    Daemon d(kQueueWorkConfig, {}, {}, "[::1]:0");
    ASSERT_TRUE(d.up()) << d.log();
    EXPECT_NE(d.log().find("listening on http://[::1]:" + std::to_string(d.port()) + "/metrics"), std::string::npos)
        << d.log();
    httplib::Client c("::1", d.port());
    auto r = c.Get("/metrics");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("hotline_probe_attached{target=\"queue_work_on\""), std::string::npos) << r->body;
}

TEST(ServeHost, KeepAliveServesPipelinedAndLaterRequests) {
    Daemon d(std::string(kQueueWorkConfig) + "[http]\nkeep_alive_timeout = \"1s\"\n");
    ASSERT_TRUE(d.up()) << d.log();
    int fd = connect_to(d.port());
    ASSERT_GE(fd, 0);
    const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    std::string two = req + req;
    ASSERT_EQ(send(fd, two.data(), two.size(), MSG_NOSIGNAL), ssize_t(two.size()));
    std::string got;
    char buf[4096];
    // Whole 200 responses so far (each ends with its body "ok\n").
    auto count_ok = [&] {
        std::size_t n = 0;
        for (auto at = got.find("HTTP/1.1 200"); at != std::string::npos; at = got.find("HTTP/1.1 200", at + 1))
            n += got.find("\r\n\r\nok\n", at) != std::string::npos;
        return n;
    };
    while (count_ok() < 2) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        ASSERT_GT(n, 0) << got;
        got.append(buf, std::size_t(n));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
    while (count_ok() < 3) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        ASSERT_GT(n, 0) << got;
        got.append(buf, std::size_t(n));
    }
    // Then idle: the daemon closes it (a timeout here would be -1: SO_RCVTIMEO is 30 s).
    EXPECT_EQ(recv(fd, buf, sizeof buf, 0), 0);
    close(fd);
}

// Clients that connect and then send their request one byte a second, or nothing,
// must hold neither the workers nor shutdown: scrapes alongside them succeed and
// SIGTERM ends the daemon within the bound the daemon promises (3 s).
TEST(ServeHost, SlowClientsStarveNoScrapeAndDoNotDelaySigterm) {
    Daemon d(std::string(kQueueWorkConfig) + "[http]\nread_timeout = \"60s\"\n");
    ASSERT_TRUE(d.up()) << d.log();
    constexpr int kSlow = 40, kScrapes = 10;
    std::vector<int> slow;
    for (int i = 0; i < kSlow; ++i) slow.push_back(connect_to(d.port()));
    for (int fd : slow) ASSERT_GE(fd, 0);
    std::atomic<bool> done{false};
    std::thread trickle([&] {
        const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        for (std::size_t at = 0; !done && at + 1 < head.size(); ++at) {
            for (int i = 0; i < kSlow; i += 2) send(slow[std::size_t(i)], head.data() + at, 1, MSG_NOSIGNAL);
            for (int t = 0; t < 10 && !done; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    int ok = 0;
    for (int i = 0; i < kScrapes; ++i) {
        std::string r = get(d.port(), "/metrics");
        ok += status_of(r) == 200 && body_of(r).find("hotline_calls_total") != std::string::npos;
    }
    EXPECT_GE(ok, 9) << ok << " of " << kScrapes << " scrapes succeeded beside " << kSlow << " slow clients";
    // The slow clients still hold their connections: nothing was answered or closed.
    int held = 0;
    for (int fd : slow) {
        char b;
        held += recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
    }
    EXPECT_EQ(held, kSlow);
    auto t0 = Clock::now();
    int rc = d.stop(3.0);
    double took = std::chrono::duration<double>(Clock::now() - t0).count();
    done = true;
    trickle.join();
    EXPECT_EQ(rc, 0) << "serve did not exit within 3 s of SIGTERM under " << kSlow << " slow clients";
    std::printf("%d of %d scrapes succeeded beside %d slow clients; SIGTERM to exit: %.2f s\n", ok, kScrapes,
                kSlow, took);
    for (int fd : slow) close(fd);
}

TEST(ServeHost, SigtermDetachesEverythingAndSystemdIsTold) {
    std::string dir = make_tempdir();
    std::string sock_path = dir + "/notify.sock";
    int ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, sock_path.c_str(), sizeof sa.sun_path - 1);
    ASSERT_EQ(bind(ns, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    timeval tv{5, 0};
    setsockopt(ns, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    Daemon d(kQueueWorkConfig, {}, {"NOTIFY_SOCKET=" + sock_path});
    ASSERT_TRUE(d.up()) << d.log();
    char buf[512] = {};
    ssize_t n = recv(ns, buf, sizeof buf - 1, 0);
    ASSERT_GT(n, 0);
    EXPECT_NE(std::string(buf).find("READY=1"), std::string::npos) << buf;

    // The BPF programs the daemon holds, from its fdinfo.
    std::set<int> progs = hosttest::prog_ids_held_by(d.pid());
    ASSERT_FALSE(progs.empty()) << "the daemon holds no BPF program";
    for (auto id : progs) {
        int fd = bpf_prog_get_fd_by_id(std::uint32_t(id));
        EXPECT_GE(fd, 0) << "program " << id << " should be loaded while serving";
        if (fd >= 0) close(fd);
    }

    EXPECT_EQ(d.stop(), 0);
    std::memset(buf, 0, sizeof buf);
    n = recv(ns, buf, sizeof buf - 1, 0);
    EXPECT_NE(std::string(buf).find("STOPPING=1"), std::string::npos) << buf;
    // The kernel frees released programs asynchronously (RCU): allow it a moment.
    std::set<int> left = progs;
    for (int i = 0; i < 100 && !left.empty(); ++i) {
        for (auto it = left.begin(); it != left.end();) {
            int fd = bpf_prog_get_fd_by_id(std::uint32_t(*it));
            if (fd >= 0) close(fd);
            it = fd < 0 ? left.erase(it) : std::next(it);
        }
        if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(left.empty()) << left.size() << " programs still loaded after SIGTERM";
    EXPECT_NE(d.log().find("every probe is detached"), std::string::npos) << d.log();
    close(ns);
    fs::remove_all(dir);
}

namespace {

// A throw-away self-signed certificate in `dir`; returns openssl's output on failure.
Cmd make_cert(const std::string& dir) {
    return sh(fmt::format(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost "
        "-keyout {0}/key.pem -out {0}/cert.pem",
        dir));
}

// TLS with the certificate from make_cert(dir) and basic auth prom:secret.
std::string tls_auth_config(const std::string& dir) {
    return fmt::format("targets = [\"queue_work_on\"]\n[tls]\ncert = \"{0}/cert.pem\"\nkey = \"{0}/key.pem\"\n"
                       "[basic_auth]\nusername = \"prom\"\n"
                       "password_sha256 = \"2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b\"\n",
                       dir);
}

}  // namespace

TEST(ServeHost, TlsAndBasicAuth) {
    if (!have("openssl")) GTEST_SKIP() << "openssl not installed";
    std::string dir = make_tempdir();
    Cmd gen = make_cert(dir);
    ASSERT_EQ(gen.rc, 0) << gen.out;
    Daemon d(tls_auth_config(dir));
    ASSERT_TRUE(d.up()) << d.log();
    httplib::SSLClient c("127.0.0.1", d.port());
    c.enable_server_certificate_verification(false);
    c.set_connection_timeout(5);
    c.set_read_timeout(10);
    auto anon = c.Get("/metrics");
    ASSERT_TRUE(anon) << "TLS request failed: " << httplib::to_string(anon.error());
    EXPECT_EQ(anon->status, 401);
    EXPECT_NE(anon->get_header_value("WWW-Authenticate").find("Basic"), std::string::npos);
    c.set_basic_auth("prom", "wrong");
    auto bad = c.Get("/metrics");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 401);
    c.set_basic_auth("prom", "secret");
    auto good = c.Get("/metrics");
    ASSERT_TRUE(good);
    EXPECT_EQ(good->status, 200);
    EXPECT_NE(good->body.find("hotline_calls_total"), std::string::npos);
    // Plain HTTP at the TLS port gets no answer, and serving goes on.
    std::string plain = get(d.port(), "/metrics");
    EXPECT_NE(status_of(plain), 200);
    auto again = c.Get("/healthz");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200);
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_GE(sample(m->body, "hotline_http_rejected_total{reason=\"auth\"}"), 2);
    EXPECT_GE(sample(m->body, "hotline_http_rejected_total{reason=\"tls_handshake\"}"), 1);
    fs::remove_all(dir);
}

namespace {

struct TlsScrape {
    int status = -1;  // -1: no HTTP answer (see error)
    std::string error, retry_after, body;
};

// One HTTPS GET as prom:secret on a fresh connection, as a Prometheus scrape does.
TlsScrape tls_get(int port, const std::string& path) {
    httplib::SSLClient c("127.0.0.1", port);
    c.enable_server_certificate_verification(false);
    c.set_connection_timeout(10);
    c.set_read_timeout(20);
    c.set_write_timeout(10);
    c.set_basic_auth("prom", "secret");
    auto r = c.Get(path);
    if (!r) return {-1, httplib::to_string(r.error()), "", ""};
    return {r->status, "", r->get_header_value("Retry-After"), r->body};
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

}  // namespace

// Over-limit TLS clients get an HTTP 503 inside TLS, silent clients cannot pin the
// rejecting path, and serving goes on.  Room for one connection being read, one
// worker and no queue: a silent connection held in its handshake (read_timeout
// 60 s) makes every later connection over the limit until we close it.
TEST(ServeHost, TlsOverLimitGets503OverTls) {
    if (!have("openssl")) GTEST_SKIP() << "openssl not installed";
    // A TLS write to a connection the daemon closed must fail the test, not kill it.
    struct sigaction ign {}, old {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);
    struct Restore {
        struct sigaction old;
        ~Restore() { sigaction(SIGPIPE, &old, nullptr); }
    } restore{old};
    std::string dir = make_tempdir();
    Cmd gen = make_cert(dir);
    ASSERT_EQ(gen.rc, 0) << gen.out;
    Daemon d(tls_auth_config(dir) +
             "[http]\nmax_concurrent = 1\nmax_queued = 0\nmax_connections = 1\nread_timeout = \"60s\"\n");
    ASSERT_TRUE(d.up()) << d.log();
    ASSERT_EQ(tls_get(d.port(), "/healthz").status, 200);
    std::size_t fds0 = settled_fd_count(d.pid());
    std::uint64_t rss0 = status_kb(d.pid(), "VmRSS"), hwm0 = status_kb(d.pid(), "VmHWM");
    int refused = 0;  // connections the daemon must count as busy

    int pin = connect_to(d.port());
    ASSERT_GE(pin, 0);
    constexpr int kOverLimit = 50;
    for (const auto& r : concurrent_tls_gets(d.port(), kOverLimit)) {
        EXPECT_EQ(r.status, 503) << r.error;
        EXPECT_EQ(r.retry_after, "1");
    }
    refused += kOverLimit;

    // Silent clients, more than the rejecting path holds at once (128 over TLS): the
    // ones beyond it are closed at once, the others when their handshake deadline
    // passes.  Every one must be closed by the daemon, not left hanging.
    constexpr int kSilent = 150;
    std::vector<int> silent;
    for (int i = 0; i < kSilent; ++i) silent.push_back(connect_to(d.port()));
    int closed_by_daemon = 0;
    for (int fd : silent) {
        char b;
        closed_by_daemon += fd >= 0 && recv(fd, &b, 1, 0) == 0;  // SO_RCVTIMEO is 30 s
        if (fd >= 0) close(fd);
    }
    EXPECT_EQ(closed_by_daemon, kSilent);
    refused += kSilent;
    TlsScrape after = tls_get(d.port(), "/metrics");
    EXPECT_EQ(after.status, 503) << "the rejecting path answers again after silent clients: " << after.error;
    refused += 1;

    // Free the worker: a mix of 200 and 503, nothing else.
    close(pin);
    TlsScrape h = tls_get(d.port(), "/healthz");
    for (int i = 0; i < 50 && h.status == 503; ++i) {
        ++refused;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        h = tls_get(d.port(), "/healthz");
    }
    ASSERT_EQ(h.status, 200) << h.error;
    constexpr int kClients = 100;
    std::map<int, int> by_status;
    for (const auto& r : concurrent_tls_gets(d.port(), kClients)) {
        ++by_status[r.status];
        EXPECT_TRUE(r.status == 200 || r.status == 503) << "status " << r.status << ": " << r.error;
        if (r.status == 200) {
            EXPECT_NE(r.body.find("hotline_calls_total"), std::string::npos);
        }
    }
    refused += by_status[503];
    std::printf("100 concurrent TLS scrapes with 1 worker: %d x 200, %d x 503, %d failed\n", by_status[200],
                by_status[503], kClients - by_status[200] - by_status[503]);

    TlsScrape m = tls_get(d.port(), "/metrics");
    for (int i = 0; i < 50 && m.status == 503; ++i) {
        ++refused;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        m = tls_get(d.port(), "/metrics");
    }
    ASSERT_EQ(m.status, 200) << m.error;
    EXPECT_EQ(sample(m.body, "hotline_http_rejected_total{reason=\"busy\"}"), double(refused));
    EXPECT_EQ(wait_exit(d.pid(), 0), -1) << "still running";
    // Every refused connection is released (lingering closes end within a second).
    std::size_t fds1 = fd_count(d.pid());
    for (int i = 0; i < 100 && fds1 > fds0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        fds1 = fd_count(d.pid());
    }
    std::uint64_t rss1 = status_kb(d.pid(), "VmRSS");
    std::printf("fds %zu -> %zu; RSS %llu -> %llu kB (peak %llu -> %llu kB)\n", fds0, fds1,
                (unsigned long long)rss0, (unsigned long long)rss1, (unsigned long long)hwm0,
                (unsigned long long)status_kb(d.pid(), "VmHWM"));
    EXPECT_LE(fds1, fds0);
    fs::remove_all(dir);
}

// A real Prometheus (own config, data dir and free ports) scrapes the daemon while
// we queue work; its query API must then show a positive rate.
TEST(ServeHost, PrometheusScrapesAPositiveRate) {
    if (!have("prometheus")) GTEST_SKIP() << "prometheus not installed (Debian package prometheus)";
    Daemon d("targets = [\"queue_work_on\"]\n");
    ASSERT_TRUE(d.up()) << d.log();
    std::string dir = make_tempdir();
    std::ofstream(dir + "/prometheus.yml") << fmt::format(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: hotline\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
        d.port());
    // Stopped and cleaned up however the test ends (an ASSERT returns early).
    struct Reaper {
        pid_t pid = -1;
        std::string dir;
        void stop() {
            if (pid <= 0) return;
            kill(pid, SIGTERM);
            if (wait_exit(pid, 20) < 0) {
                kill(pid, SIGKILL);
                wait_exit(pid, 5);
            }
            pid = -1;
        }
        ~Reaper() {
            stop();
            fs::remove_all(dir);
        }
    } reaper{-1, dir};
    // Prometheus cannot listen on port 0 and say where: a free port is picked
    // and, when another process took it first (Prometheus then exits), another.
    int prom_port = 0;
    bool ready = false;
    for (int attempt = 0; attempt < 5 && !ready; ++attempt) {
        reaper.stop();
        prom_port = free_port();
        reaper.pid = spawn({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                            "--storage.tsdb.path=" + dir + "/data",
                            fmt::format("--web.listen-address=127.0.0.1:{}", prom_port), "--log.level=warn"},
                           dir + "/prometheus.log");
        ASSERT_GT(reaper.pid, 0);
        httplib::Client probe("127.0.0.1", prom_port);
        probe.set_connection_timeout(2);
        for (int i = 0; i < 300 && !ready; ++i) {
            auto r = probe.Get("/-/ready");
            ready = r && r->status == 200;
            if (!ready && waitpid(reaper.pid, nullptr, WNOHANG) == reaper.pid) {
                reaper.pid = -1;  // exited: the port was taken
                break;
            }
            if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!ready && reaper.pid > 0) break;  // alive but never ready: give up
    }
    httplib::Client api("127.0.0.1", prom_port);
    api.set_connection_timeout(2);
    api.set_read_timeout(10);
    ASSERT_TRUE(ready) << slurp(dir + "/prometheus.log");

    auto query = [&](const std::string& q) {
        auto r = api.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
        if (!r || r->status != 200) return nlohmann::json();
        return nlohmann::json::parse(r->body, nullptr, false);
    };
    auto targets_state = [&] {
        auto t = api.Get("/api/v1/targets");
        return t ? t->body : std::string("(no answer)");
    };
    // ~20 s of our own work items while Prometheus scrapes once a second; on a
    // loaded machine scrapes can lag, so keep working (bounded) until the rate shows.
    const std::string kRate = "sum(rate(hotline_calls_total{target=\"queue_work_on\"}[20s]))";
    auto start = Clock::now();
    double v = 0;
    nlohmann::json rate;
    while (Clock::now() - start < std::chrono::seconds(60)) {
        auto slice = Clock::now() + std::chrono::seconds(1);
        while (Clock::now() < slice) {
            stat_refresh(5);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (Clock::now() - start < std::chrono::seconds(20)) continue;
        rate = query(kRate);
        if (!rate.is_discarded() && rate.value("status", "") == "success" && !rate["data"]["result"].empty()) {
            v = std::stod(rate["data"]["result"][0]["value"][1].get<std::string>());
            if (v > 0) break;
        }
    }
    std::printf("Prometheus: %s = %.1f/s after %.0f s\n", kRate.c_str(), v,
                std::chrono::duration<double>(Clock::now() - start).count());
    EXPECT_GT(v, 0) << rate.dump() << "\ntargets: " << targets_state() << "\nprometheus log:\n"
                    << slurp(dir + "/prometheus.log") << "\nserve log:\n" << d.log();
    auto up = query("up{job=\"hotline\"}");
    ASSERT_FALSE(up["data"]["result"].empty()) << up.dump();
    EXPECT_EQ(up["data"]["result"][0]["value"][1], "1");
    auto scrapes = query("count_over_time(up{job=\"hotline\"}[30s])");
    ASSERT_FALSE(scrapes["data"]["result"].empty());
    std::printf("Prometheus scraped %s times\n", scrapes["data"]["result"][0]["value"][1].get<std::string>().c_str());
    auto targets = api.Get("/api/v1/targets");
    ASSERT_TRUE(targets);
    auto tj = nlohmann::json::parse(targets->body, nullptr, false);
    ASSERT_FALSE(tj["data"]["activeTargets"].empty());
    EXPECT_EQ(tj["data"]["activeTargets"][0]["health"], "up") << tj.dump(2);
    EXPECT_EQ(tj["data"]["activeTargets"][0]["lastError"], "") << tj.dump(2);

}

// Targets with pinned mechanisms run in their own sessions; one exposition covers
// them all, and a pinned mechanism that cannot attach leaves only its target out.
TEST(ServeHost, PerTargetMechanismsShareOneExposition) {
    Daemon d("[[target]]\nname = \"queue_work_on\"\nmechanism = \"tracepoint\"\n"
             "[[target]]\nname = \"dst_release\"\n"
             "[[target]]\nname = \"ipv4_dst_check\"\nmechanism = \"sampling\"\n"
             "[[target]]\nname = \"tcp_prequeue\"\nmechanism = \"fentry\"\n");
    ASSERT_TRUE(d.up()) << d.log();
    stat_refresh(10);
    std::string m = body_of(get(d.port(), "/metrics"));
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"queue_work_on\",mechanism=\"tracepoint\"}"), 1) << m;
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"ipv4_dst_check\",mechanism=\"sampling\"}"), 1) << m;
    EXPECT_EQ(sample(m, "hotline_probe_attached{target=\"tcp_prequeue\",mechanism=\"unavailable\"}"), 0) << m;
    EXPECT_NE(m.find("hotline_probe_attached{target=\"dst_release\",mechanism=\""), std::string::npos);
    // Per node, each node of the machine (tests/lib/machine_facts.hpp) a series.
    const auto& mf = hostfacts::MachineFacts::get();
    double calls = 0;
    for (auto& [node, cpus] : mf.nodes()) {
        calls += sample(m, fmt::format("hotline_calls_total{{target=\"queue_work_on\",node=\"{}\","
                                       "mechanism=\"tracepoint\"}}",
                                       node));
        EXPECT_FALSE(std::isnan(sample(m, fmt::format("hotline_samples_total{{node=\"{}\"}}", node))))
            << "the sampling session reports; " << mf.why({"nodes"}) << "\n" << m;
    }
    EXPECT_GE(calls, 10) << mf.why({"nodes"}) << "\n" << m;
    // Configuration order in the plan, and the refusal reason for the pinned target.
    auto plan = nlohmann::json::parse(body_of(get(d.port(), "/plan")), nullptr, false);
    ASSERT_TRUE(plan.is_array());
    ASSERT_EQ(plan.size(), 4u);
    EXPECT_EQ(plan[0]["target"], "queue_work_on");
    EXPECT_EQ(plan[3]["target"], "tcp_prequeue");
    EXPECT_EQ(plan[3]["observable"], false);
    EXPECT_NE(d.log().find("tcp_prequeue"), std::string::npos);
}

// The pty workload hands one work item between CPU 0 and CPU 1 on every write
// (tests/host/helpers/pty_pingpong.cpp); the daemon's matrix must show it.
TEST(ServeHost, HandoffMatrixFollowsAnAlternatingWriter) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_FAIL() << "needs 2 CPUs";
    Daemon d("targets = [\"queue_work_on\"]\n");
    ASSERT_TRUE(d.up()) << d.log();
    // The matrix cells between the writer's CPUs' nodes (machine_facts.hpp).
    const auto& mf = hostfacts::MachineFacts::get();
    const int n0 = mf.node_of(0), n1 = mf.node_of(1);
    std::set<std::string> cells;
    for (auto [from, to] : {std::pair{n0, n1}, std::pair{n1, n0}})
        cells.insert(fmt::format("hotline_handoffs_total{{target=\"queue_work_on\",from_node=\"{}\",to_node=\"{}\"}}",
                                 from, to));
    auto in_cells = [&](const std::string& m) {
        double v = 0;
        for (auto& c : cells) v += sample(m, c);
        return v;
    };
    const std::string tracked = "hotline_handoff_tracked_hits_total{target=\"queue_work_on\"}";
    const std::string cross = "hotline_cross_node_handoffs_total{target=\"queue_work_on\"}";
    std::string m0 = body_of(get(d.port(), "/metrics"));
    ASSERT_FALSE(std::isnan(in_cells(m0))) << mf.why({"nodes"}) << "\n" << m0;
    const int writes = 2000;
    Cmd w = sh(fmt::format("{} {} alt", PTY_PINGPONG_BIN, writes));
    ASSERT_EQ(w.rc, 0) << w.out;
    std::string m1 = body_of(get(d.port(), "/metrics"));
    double handoffs = in_cells(m1) - in_cells(m0);
    // One handoff per write after the first; a write may find the work still pending
    // (not queued again): allow 5% of those.  Other kernel work only adds.
    EXPECT_GE(handoffs, writes * 0.95 - 1) << m1;
    EXPECT_GE(sample(m1, tracked) - sample(m0, tracked), handoffs);
    if (n0 != n1) {
        EXPECT_GE(sample(m1, cross) - sample(m0, cross), handoffs) << mf.why({"nodes"}) << "\n" << m1;
    } else if (mf.nodes_with_cpus() == 1) {
        EXPECT_EQ(sample(m1, cross), 0) << mf.why({"nodes"}) << "\n" << m1;
    }

    Daemon off("targets = [\"queue_work_on\"]\n[probe]\nhandoffs = false\n");
    ASSERT_TRUE(off.up()) << off.log();
    std::string m = body_of(get(off.port(), "/metrics"));
    EXPECT_EQ(m.find("hotline_handoffs_total"), std::string::npos) << "count-only mode exports no matrix";
}
