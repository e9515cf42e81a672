// SPDX-License-Identifier: Apache-2.0
// `hotline serve` under load: no fd or RSS growth over 1,000 scrapes, 100
// concurrent scrapes answered 200 or 503, slow clients that neither starve
// scrapes nor delay SIGTERM, and keep-alive connections that hold no worker.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include "serve_util.hpp"

using namespace servetest;

TEST(ServeHost, NoFdOrRssGrowthAcross1000Scrapes) {
    Daemon d(kQueueWorkConfig);
    ASSERT_TRUE(d.up()) << d.why_not_up();
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
    ASSERT_TRUE(d.up()) << d.why_not_up();
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

// Clients that connect and then send their request one byte a second, or nothing,
// must hold neither the workers nor shutdown: scrapes alongside them succeed and
// SIGTERM ends the daemon within the bound the daemon promises (3 s).
TEST(ServeHost, SlowClientsStarveNoScrapeAndDoNotDelaySigterm) {
    Daemon d(std::string(kQueueWorkConfig) + "[http]\nread_timeout = \"60s\"\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
    constexpr int kSlow = 40, kScrapes = 10;
    std::size_t fds0 = fd_count(d.pid());
    std::vector<int> slow;
    for (int i = 0; i < kSlow; ++i) slow.push_back(connect_to(d.port()));
    for (int fd : slow) ASSERT_GE(fd, 0);
    // Each accepted connection is one more fd in the daemon.
    ASSERT_TRUE(wait_until([&] { return fd_count(d.pid()) >= fds0 + kSlow; }, std::chrono::seconds(10)))
        << "the daemon holds " << fd_count(d.pid()) << " fds 10 s after " << kSlow << " clients connected, "
        << fds0 << " before";
    std::atomic<bool> done{false};
    std::atomic<int> rounds{0};
    std::thread trickle([&] {
        const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        for (std::size_t at = 0; !done && at + 1 < head.size(); ++at) {
            for (int i = 0; i < kSlow; i += 2) send(slow[std::size_t(i)], head.data() + at, 1, MSG_NOSIGNAL);
            ++rounds;
            // The clients' pace: one byte a second, in slices so that the end of the test is not held.
            for (int t = 0; t < 10 && !done; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });
    EXPECT_TRUE(wait_until([&] { return rounds > 0; }, std::chrono::seconds(10))) << "the slow clients sent nothing";
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
    // Its exit status is the fixture's to check.
    EXPECT_NE(rc, -1) << "serve did not exit within 3 s of SIGTERM under " << kSlow << " slow clients";
    std::printf("%d of %d scrapes succeeded beside %d slow clients; SIGTERM to exit: %.2f s\n", ok, kScrapes,
                kSlow, took);
    for (int fd : slow) close(fd);
}

// One connection serves several requests: pipelined ones, and one sent after the
// connection has gone idle; idle, it holds no worker (the daemon's only worker
// serves another client meanwhile), and it is closed after keep_alive_timeout.
// One queue slot: the pipelined request waits there for the worker that served
// the first; a request queued for over a second is answered 503.
TEST(ServeHost, KeepAliveServesPipelinedAndLaterRequests) {
    Daemon d(std::string(kQueueWorkConfig) +
             "[http]\nmax_concurrent = 1\nmax_queued = 1\nkeep_alive_timeout = \"3s\"\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
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
    // Within the keep-alive timeout, another client gets the one worker: the kept
    // connection waits without it (held until the timeout, the worker would leave
    // the other client queued past its second, so answered 503).
    ASSERT_TRUE(wait_until([&] { return status_of(get(d.port(), "/healthz")) == 200; }, std::chrono::seconds(2)))
        << "no other client was served within 2 s of the kept connection's answers";
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
