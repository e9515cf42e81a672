// SPDX-License-Identifier: Apache-2.0
// `hotline serve` with [tls] and [basic_auth] in its TOML: 401 without the right
// password, plain HTTP at the TLS port refused, and the over-limit 503 answered
// inside TLS while silent clients cannot pin the rejecting path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <httplib.h>
#include <map>
#include <string>
#include <vector>

#include "serve_util.hpp"

using namespace servetest;

TEST(ServeHost, TlsAndBasicAuth) {
    if (!have("openssl")) GTEST_SKIP() << "openssl not installed";
    std::string dir = make_tempdir();
    CmdResult gen = make_cert(dir);
    ASSERT_EQ(gen.rc, 0) << gen.out << gen.err;
    Daemon d(tls_auth_config(dir));
    ASSERT_TRUE(d.up()) << d.why_not_up();
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
    // The right credentials twice, or beside wrong ones (prom:secret, prom:wrong): ambiguous, refused.
    const std::string right = "Basic cHJvbTpzZWNyZXQ=";
    const std::string wrong = "Basic cHJvbTp3cm9uZw==";
    for (auto& [first, second] : {std::pair{right, wrong}, std::pair{wrong, right}, std::pair{right, right}}) {
        httplib::SSLClient two("127.0.0.1", d.port());
        two.enable_server_certificate_verification(false);
        auto r = two.Get("/metrics", httplib::Headers{{"Authorization", first}, {"Authorization", second}});
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 401) << "two Authorization headers";
    }
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
    std::filesystem::remove_all(dir);
}

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
    CmdResult gen = make_cert(dir);
    ASSERT_EQ(gen.rc, 0) << gen.out << gen.err;
    Daemon d(tls_auth_config(dir) +
             "[http]\nmax_concurrent = 1\nmax_queued = 0\nmax_connections = 1\nread_timeout = \"60s\"\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
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
    TlsScrape h = tls_get_until_served(d.port(), "/healthz", &refused);
    ASSERT_EQ(h.status, 200) << "10 s after the pinning connection closed: " << h.error;
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

    TlsScrape m = tls_get_until_served(d.port(), "/metrics", &refused);
    ASSERT_EQ(m.status, 200) << "10 s after the concurrent scrapes: " << m.error;
    EXPECT_EQ(sample(m.body, "hotline_http_rejected_total{reason=\"busy\"}"), double(refused));
    EXPECT_EQ(wait_exit(d.pid(), 0), -1) << "still running";
    // Every refused connection is released (lingering closes end within a second).
    std::size_t fds1 = fd_count(d.pid());
    wait_until([&] { return (fds1 = fd_count(d.pid())) <= fds0; }, std::chrono::seconds(10),
               std::chrono::milliseconds(100));
    std::uint64_t rss1 = status_kb(d.pid(), "VmRSS");
    std::printf("fds %zu -> %zu; RSS %llu -> %llu kB (peak %llu -> %llu kB)\n", fds0, fds1,
                (unsigned long long)rss0, (unsigned long long)rss1, (unsigned long long)hwm0,
                (unsigned long long)status_kb(d.pid(), "VmHWM"));
    EXPECT_LE(fds1, fds0) << "fds still held 10 s after the last scrape";
    std::filesystem::remove_all(dir);
}
