// SPDX-License-Identifier: Apache-2.0
// `hotline serve` and systemd: READY=1 once serving, STOPPING=1 on SIGTERM, and
// every BPF program it held released once it has exited.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "serve_util.hpp"

using namespace servetest;

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
    ASSERT_TRUE(d.up()) << d.why_not_up();
    char buf[512] = {};
    ssize_t n = recv(ns, buf, sizeof buf - 1, 0);
    ASSERT_GT(n, 0) << "no notification within 5 s of listening";
    EXPECT_NE(std::string(buf).find("READY=1"), std::string::npos) << buf;

    // The BPF programs the daemon holds, from its fdinfo.
    std::set<int> progs = hosttest::prog_ids_held_by(d.pid());
    ASSERT_FALSE(progs.empty()) << "the daemon holds no BPF program";
    for (auto id : progs) {
        int fd = bpf_prog_get_fd_by_id(std::uint32_t(id));
        EXPECT_GE(fd, 0) << "program " << id << " should be loaded while serving";
        if (fd >= 0) close(fd);
    }

    ASSERT_NE(d.stop(), -1) << "serve did not exit within 15 s of SIGTERM";  // its status: the fixture's
    std::memset(buf, 0, sizeof buf);
    n = recv(ns, buf, sizeof buf - 1, 0);
    EXPECT_NE(std::string(buf).find("STOPPING=1"), std::string::npos) << buf;
    // The kernel frees released programs asynchronously (RCU).
    std::set<int> left = progs;
    bool freed = wait_until(
        [&] {
            for (auto it = left.begin(); it != left.end();) {
                int fd = bpf_prog_get_fd_by_id(std::uint32_t(*it));
                if (fd >= 0) close(fd);
                it = fd < 0 ? left.erase(it) : std::next(it);
            }
            return left.empty();
        },
        std::chrono::seconds(5), std::chrono::milliseconds(50));
    EXPECT_TRUE(freed) << left.size() << " programs still loaded 5 s after serve exited";
    EXPECT_NE(d.log().find("every probe is detached"), std::string::npos) << d.log();
    close(ns);
    std::filesystem::remove_all(dir);
}
