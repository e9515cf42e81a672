// SPDX-License-Identifier: Apache-2.0
// The guest's progress watch (src/vm/qemu.cpp, watch_guest) without QEMU: a
// `sleep` stands in for it and the test writes the channel.
//   - a test that starts and never reports: the stand-in is stopped, the
//     reason names the test, and the run's failure is a hang;
//   - a guest that never says hello: stopped, and the reason says so;
//   - a guest that keeps reporting within each step's limit: never stopped;
//   - a stalled guest's vCPUs are sampled through the QEMU monitor before it
//     is stopped (a stand-in answers on the monitor's FIFOs as QEMU 7.2 does);
//   - SIGTERM to hotline stops the guest and says it was interrupted.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "boot.hpp"
#include "files.hpp"
#include "hotline/base/util.hpp"
#include "process.hpp"
#include "qemu.hpp"

using namespace hotline;
using namespace hotline::vm;
using testlib::TempDir;

namespace {

class Watchdog : public ::testing::Test {
  protected:
    void SetUp() override {
        setenv("VM_WATCH_POLL_S", "1", 1);
        setenv("VM_STEP_LIMIT_S", "3", 1);
    }
    void TearDown() override {
        unsetenv("VM_WATCH_POLL_S");
        unsetenv("VM_STEP_LIMIT_S");
    }
    BootSpec spec(int cpus = 1) const {
        return {"", "", tmp.path(), kTcgAccel, {1, cpus, 256}, 600, LiveConsole::kOff};
    }
    void append(const std::string& text) const {
        std::ofstream(tmp / "channel.log", std::ios::app) << text << std::flush;
    }
    // Watches a stand-in for QEMU; the seconds it took.
    double watch(BootEnd& end, int cpus = 1, const std::string& standin_s = "120") {
        ShutdownSignals signals({SIGCHLD});
        auto pid = spawn({"sleep", standin_s});
        EXPECT_TRUE(pid);
        const double t0 = monotonic_seconds();
        end = watch_guest(*pid, spec(cpus), signals);
        return monotonic_seconds() - t0;
    }
    TempDir tmp;
};

// Answers `info registers -a`, `cpu N` and `x /48gx $esp` the way QEMU's
// monitor does (echoing each command with cursor escapes): CPU c at RIP
// ffffffff8100000c, RSP ffffc900000c0000, whose stack holds a return address
// ffffffff8100100c and a non-text value.
void fake_monitor(const std::string& base, int cpus, const std::atomic<bool>& stop) {
    int in = open((base + ".in").c_str(), O_RDWR | O_CLOEXEC);
    int out = open((base + ".out").c_str(), O_RDWR | O_CLOEXEC);
    auto say = [&](const std::string& s) { (void)!write(out, s.data(), s.size()); };
    say("QEMU 7.2.22 monitor - type 'help' for more information\r\n");
    std::string pending;
    int cur = 0;
    while (!stop) {
        pollfd p{in, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        char buf[4096];
        ssize_t n = read(in, buf, sizeof buf);
        if (n <= 0) break;
        pending.append(buf, static_cast<std::size_t>(n));
        for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
            std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            say("(qemu) " + line.substr(0, 1) + "\x1b[K\x1b[D" + line + "\r\n");
            if (line == "info registers -a") {
                for (int c = 0; c < cpus; ++c)
                    say(fmt::format(
                        "CPU#{}\r\nRAX=0000000000000001 "
                        "RBX=0000000000000002\r\nRSI=0000000000000000 "
                        "RDI=0000000000000000 RBP=0000000000000000 RSP=ffffc900000{}0000\r\n"
                        "RIP=ffffffff8100000{} RFL=00000002 [-------] CPL=0 II=0 A20=1 SMM=0 "
                        "HLT=0\r\n",
                        c, c, c));
            } else if (line.rfind("cpu ", 0) == 0) {
                cur = std::stoi(line.substr(4));
            } else if (line == "x /48gx $esp") {
                say(fmt::format("ffffc900000{}0000: 0xffffffff8100100{} 0x000000000000002a\r\n",
                                cur, cur));
            }
        }
    }
    close(in);
    close(out);
}

}  // namespace

TEST_F(Watchdog, ATestWithoutAResultIsStoppedAndIsAHang) {
    append("HLVM-HELLO release=x uptime=1\nHLVM-START cost timeout=1\n");
    BootEnd end;
    const double took = watch(end);
    EXPECT_LT(took, 15);
    EXPECT_GE(took, 5);  // its limit: 2 x 1 + 3 s
    EXPECT_EQ(end.qemu_rc, 128 + SIGTERM);
    EXPECT_FALSE(end.interrupted);
    EXPECT_NE(tmp.read("stalled").find("test cost sent no result for "), std::string::npos)
        << tmp.read("stalled");
    EXPECT_NE(tmp.read("stalled").find("(its own timeout 1 s"), std::string::npos);
    tmp.write("console.log", "HLVM-START cost timeout=1\n");
    EXPECT_EQ(
        failure_cause(tmp.path(), end.qemu_rc, 0, 2850).rfind("hang: test cost sent no result", 0),
        0u);
}

TEST_F(Watchdog, AGuestThatNeverSaysHelloIsStopped) {
    append("");
    BootEnd end;
    EXPECT_LT(watch(end), 15);
    EXPECT_NE(tmp.read("stalled").find("no HLVM-HELLO for"), std::string::npos);
}

TEST_F(Watchdog, AGuestThatKeepsReportingIsNeverStopped) {
    append("");
    std::thread guest([&] {
        for (int t = 0; t < 5; ++t) {
            std::this_thread::sleep_for(
                std::chrono::milliseconds(2500));  // more than the 3 s base minus a poll
            append(fmt::format("HLVM-START t{} timeout=1\nHLVM-RESULT t{} rc=0 secs=1.5", t, t));
            append("\n");
        }
        append("HLVM-DONE uptime=11\n");
    });
    BootEnd end;
    const double took = watch(end, 1, "18");  // the stand-in ends by itself after HLVM-DONE
    guest.join();
    EXPECT_GE(took, 17);
    EXPECT_EQ(end.qemu_rc, 0);
    EXPECT_FALSE(tmp.exists("stalled"));
    EXPECT_EQ(failure_cause(tmp.path(), 0, 1, 100), "");
}

TEST_F(Watchdog, AStalledGuestsCpusAreSampledThroughTheMonitor) {
    ASSERT_EQ(mkfifo((tmp / "monitor.in").c_str(), 0600), 0);
    ASSERT_EQ(mkfifo((tmp / "monitor.out").c_str(), 0600), 0);
    std::atomic<bool> stop{false};
    std::thread monitor(fake_monitor, tmp / "monitor", 4, std::cref(stop));
    append("HLVM-HELLO release=x uptime=1\nHLVM-START proxy-nodes timeout=1\n");
    BootEnd end;
    EXPECT_LT(watch(end, 4), 30);
    stop = true;
    monitor.join();
    const std::string dump = tmp.read("stalled-cpus.txt");
    for (int c = 0; c < 4; ++c)
        EXPECT_EQ(testlib::count(
                      dump, fmt::format("cpu {} rip ffffffff8100000{} rsp ffffc900000{}0000 stack "
                                        "ffffffff8100100{}\n",
                                        c, c, c, c)),
                  3u)
            << dump;
    EXPECT_EQ(testlib::count(dump, "2a"), 0u);
    EXPECT_NE(tmp.read("monitor.log").find("info registers -a"), std::string::npos);
}

TEST_F(Watchdog, SigtermStopsTheGuest) {
    append("HLVM-HELLO release=x uptime=1\n");
    const pthread_t self = pthread_self();
    std::thread user([self] {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        pthread_kill(self, SIGTERM);
    });
    BootEnd end;
    EXPECT_LT(watch(end), 5);
    user.join();
    EXPECT_TRUE(end.interrupted);
    EXPECT_FALSE(tmp.exists("stalled"));
}
