// SPDX-License-Identifier: Apache-2.0
// The generators' socket toolkit under churn: a reset or a refused connection is
// counted when the generator asks for it, and fails the crew otherwise.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "generators.hpp"

using namespace hotline::detail;

namespace {

// A loopback listener on an ephemeral port.
int listener(int* port) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = make_addr("127.0.0.1", 0);
    if (bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) || listen(lfd, 4)) return -1;
    socklen_t len = sizeof a;
    getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
    *port = ntohs(a.sin_port);
    return lfd;
}

// A connected client whose peer has closed with a reset (SO_LINGER 0).
int reset_connection(Crew& crew) {
    int port = 0;
    int lfd = listener(&port);
    std::string err;
    int fd = tcp_socket(&err);
    set_timeouts(fd);
    if (!connect_wait(fd, make_addr("127.0.0.1", port), crew, &err)) return -1;
    int peer = accept(lfd, nullptr, nullptr);
    linger l{1, 0};
    setsockopt(peer, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(peer);
    close(lfd);
    usleep(20000);
    return fd;
}

int closed_port() {
    int port = 0;
    int lfd = listener(&port);
    close(lfd);
    return port;
}

}  // namespace

TEST(GeneratorFaults, AResetIsCountedWhenTheGeneratorCountsFaults) {
    std::atomic<bool> stop{false};
    Crew crew(stop);
    crew.count_net_faults = true;
    int fd = reset_connection(crew);
    ASSERT_GE(fd, 0);
    char buf[8];
    std::string err;
    bool eof = false;
    EXPECT_FALSE(recv_full(fd, buf, sizeof buf, crew, &err, &eof));
    EXPECT_TRUE(err.empty()) << err;
    EXPECT_EQ(crew.faults.resets.load(), 1u);
    close(fd);
}

TEST(GeneratorFaults, ARefusedConnectIsCountedWhenTheGeneratorCountsFaults) {
    std::atomic<bool> stop{false};
    Crew crew(stop);
    crew.count_net_faults = true;
    std::string err;
    int fd = tcp_socket(&err);
    set_timeouts(fd);
    EXPECT_FALSE(connect_wait(fd, make_addr("127.0.0.1", closed_port()), crew, &err));
    EXPECT_TRUE(err.empty()) << err;
    EXPECT_EQ(crew.faults.refusals.load(), 1u);
    close(fd);
}

TEST(GeneratorFaults, WithoutCountingAResetIsAnError) {
    std::atomic<bool> stop{false};
    Crew crew(stop);
    int fd = reset_connection(crew);
    ASSERT_GE(fd, 0);
    char buf[8];
    std::string err;
    bool eof = false;
    EXPECT_FALSE(recv_full(fd, buf, sizeof buf, crew, &err, &eof));
    EXPECT_NE(err.find("recv"), std::string::npos);
    EXPECT_EQ(crew.faults.resets.load(), 0u);
    close(fd);
}
