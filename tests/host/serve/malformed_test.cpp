// SPDX-License-Identifier: Apache-2.0
// Malformed, oversized, slow and reset requests to `hotline serve`: each gets the
// documented status (docs/metrics.md), is counted by reason, and serving goes on.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <string>
#include <vector>

#include "serve_util.hpp"

using namespace servetest;

TEST(ServeHost, MalformedRequestsGetTheDocumentedStatusAndServingGoesOn) {
    Daemon d(std::string(kQueueWorkConfig) + "[http]\nread_timeout = \"1s\"\n");
    ASSERT_TRUE(d.up()) << d.why_not_up();
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
    std::string m = get_until_served(d.port(), "/metrics");
    ASSERT_EQ(status_of(m), 200) << "the daemon survives resets; 10 s after them it answered: " << m.substr(0, 200);
    std::string b = body_of(m);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"too_large\"}"), 3);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"method\"}"), 2);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"bad_request\"}"), 3);
    EXPECT_EQ(sample(b, "hotline_http_rejected_total{reason=\"timeout\"}"), 1);
    EXPECT_EQ(wait_exit(d.pid(), 0), -1) << "still running";
}
