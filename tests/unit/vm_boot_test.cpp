// SPDX-License-Identifier: Apache-2.0
// `hotline vm`'s host side without QEMU: the initramfs archive, QEMU's argv
// for a shape, the progress watch's limits, the console's routing, the
// monitor's summary, the memory check and the digests.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>

#include "boot.hpp"
#include "digest.hpp"
#include "files.hpp"
#include "hotline/vm/kernels.hpp"
#include "initramfs.hpp"
#include "process.hpp"
#include "qemu.hpp"
#include "watch.hpp"

using namespace hotline;
using namespace hotline::vm;
using testlib::TempDir;
namespace fs = std::filesystem;

namespace {

struct Member {
    std::string name;
    unsigned mode = 0;
    std::string data;
};

unsigned hex_field(const std::string& a, std::size_t at, int index) {
    return static_cast<unsigned>(
        std::stoul(a.substr(at + 6 + 8 * static_cast<std::size_t>(index), 8), nullptr, 16));
}

// Parses a newc archive as the kernel does; fails the test on a bad header.
std::vector<Member> parse_newc(const std::string& a) {
    std::vector<Member> out;
    std::size_t at = 0;
    while (at + 110 <= a.size()) {
        EXPECT_EQ(a.substr(at, 6), "070701") << "at " << at;
        if (a.substr(at, 6) != "070701") break;
        const unsigned mode = hex_field(a, at, 1), size = hex_field(a, at, 6),
                       namesize = hex_field(a, at, 11);
        std::string name = a.substr(at + 110, namesize - 1);
        EXPECT_EQ(a[at + 110 + namesize - 1], '\0');
        std::size_t data = (at + 110 + namesize + 3) & ~std::size_t{3};
        if (name == "TRAILER!!!") break;
        out.push_back({name, mode, a.substr(data, size)});
        at = (data + size + 3) & ~std::size_t{3};
    }
    return out;
}

}  // namespace

TEST(VmInitramfs, NewcArchiveHoldsEveryMemberWithParentsFirst) {
    TempDir tmp;
    tmp.write("src/tool", "#!/bin/true\nbinary bytes");
    chmod((tmp / "src/tool").c_str(), 0750);
    ArchiveTree tree;
    tree.add_directory("proc");
    tree.add_data("hlvm/env", "HLVM_KERNEL=debian:6.12\n", 0644);
    ASSERT_TRUE(tree.add_copy("usr/lib/x86_64-linux-gnu/libtool.so", tmp / "src/tool"));
    tree.add_data("odd", "12345", 0600);  // a size that needs padding
    ASSERT_TRUE(tree.write(tmp / "a.cpio"));
    auto members = parse_newc(tmp.read("a.cpio"));
    std::vector<std::string> names;
    for (auto& m : members) names.push_back(m.name);
    ASSERT_EQ(names, (std::vector<std::string>{"hlvm", "hlvm/env", "odd", "proc", "usr", "usr/lib",
                                               "usr/lib/x86_64-linux-gnu",
                                               "usr/lib/x86_64-linux-gnu/libtool.so"}));
    EXPECT_EQ(members[0].mode, S_IFDIR | 0755u);
    EXPECT_EQ(members[1].data, "HLVM_KERNEL=debian:6.12\n");
    EXPECT_EQ(members[2].data, "12345");
    EXPECT_EQ(members[7].mode, S_IFREG | 0750u);
    EXPECT_EQ(members[7].data, "#!/bin/true\nbinary bytes");
}

TEST(VmInitramfs, CpioToolReadsTheArchive) {
    if (!find_program("cpio")) GTEST_SKIP() << "no cpio tool to cross-check with";
    TempDir tmp;
    ArchiveTree tree;
    tree.add_data("hlvm/tests/plan", "probe 120 script\n", 0644);
    tree.add_data("init", "#!/bin/busybox sh\n", 0755);
    ASSERT_TRUE(tree.write(tmp / "a.cpio"));
    int in = open((tmp / "a.cpio").c_str(), O_RDONLY | O_CLOEXEC);
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    auto pid = spawn({"cpio", "-it", "--quiet"}, {in, fds[1], -1, {}});
    close(fds[1]);
    close(in);
    ASSERT_TRUE(pid);
    std::string listing;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
        listing.append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
    EXPECT_EQ(wait_child(*pid, 10), 0);
    EXPECT_EQ(listing, "hlvm\nhlvm/tests\nhlvm/tests/plan\ninit\n");
}

TEST(VmInitramfs, LddLibrariesAreAbsolutePaths) {
    auto libs = ldd_libraries("/bin/sh");
    ASSERT_FALSE(libs.empty());
    for (auto& l : libs) EXPECT_EQ(l.front(), '/') << l;
    EXPECT_TRUE(std::any_of(libs.begin(), libs.end(),
                            [](auto& l) { return l.find("libc.so") != std::string::npos; }));
}

TEST(VmQemu, MachineArgsSplitCpusAndMemoryOverNodes) {
    auto args = machine_args(kTcgAccel, {2, 4, 2048});
    EXPECT_EQ(args, (std::vector<std::string>{"-accel",      "tcg,thread=single",
                                              "-cpu",        "max",
                                              "-m",          "2048M",
                                              "-smp",        "4,sockets=2,cores=2,threads=1",
                                              "-nodefaults", "-display",
                                              "none",        "-no-reboot",
                                              "-object",     "memory-backend-ram,id=m0,size=1024M",
                                              "-numa",       "node,nodeid=0,cpus=0-1,memdev=m0",
                                              "-object",     "memory-backend-ram,id=m1,size=1024M",
                                              "-numa",       "node,nodeid=1,cpus=2-3,memdev=m1"}));
    auto kvm = machine_args("kvm", {1, 2, 512});
    EXPECT_EQ(kvm[3], "host");
    EXPECT_EQ(kvm[7], "2,sockets=1,cores=2,threads=1");
}

TEST(VmWatch, StepLimits) {
    EXPECT_EQ(step_limit_s("", 300), 300);
    EXPECT_EQ(step_limit_s("HLVM-HELLO release=6.12 uptime=1", 300), 300);
    EXPECT_EQ(step_limit_s("HLVM-START cost timeout=60", 300), 420);
    EXPECT_EQ(step_limit_s("HLVM-RESULT cost rc=0 secs=1", 300), 300);
    // The guest's text: nothing but a plain number counts.
    EXPECT_EQ(step_limit_s("HLVM-START x timeout=$(reboot)", 300), 300);
    EXPECT_EQ(step_limit_s("HLVM-START x timeout=1234567", 300), 300);
    EXPECT_EQ(step_limit_s("HLVM-START x timeout=-5", 300), 300);
}

TEST(VmWatch, LastMarkerIgnoresPayloadAndPartialLines) {
    EXPECT_EQ(last_marker("HLVM-HELLO release=x uptime=1\r\nHLVM-START a timeout=1\nHLVM-OUTPUT a "
                          "3\nYWJj\nHLVM-EOF\n"),
              "HLVM-START a timeout=1");
    EXPECT_EQ(last_marker("HLVM-HELLO release=x uptime=1\nHLVM-DO"),
              "HLVM-HELLO release=x uptime=1");
    // A marker whose line is still being written is not one yet.
    EXPECT_EQ(last_marker("HLVM-HELLO release=x uptime=1\nHLVM-START b timeo"), "HLVM-HELLO release=x uptime=1");
    EXPECT_EQ(last_marker(""), "");
}

TEST(VmWatch, ATestWithoutAResultStallsAfterItsLimit) {
    ProgressWatch w(3, 0);
    const std::string ch = "HLVM-HELLO release=x uptime=1\nHLVM-START cost timeout=1\n";
    EXPECT_FALSE(w.check(ch, 1));  // a new marker
    EXPECT_FALSE(w.check(ch, 6));  // 5 s: 2 x 1 + 3, not past it
    auto why = w.check(ch, 7);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why,
              "test cost sent no result for 6 s (its own timeout 1 s, which a livelocked guest "
              "kernel never "
              "reaches)");
}

TEST(VmWatch, SilentBootAndProgressAndDone) {
    ProgressWatch silent(3, 0);
    EXPECT_FALSE(silent.check("", 3));
    auto why = silent.check("", 4);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "the guest sent no HLVM-HELLO for 4 s after QEMU started");

    ProgressWatch busy(3, 0);
    std::string ch;
    for (int t = 1; t <= 20; t += 2) {
        ch += "HLVM-START t" + std::to_string(t) + " timeout=1\n";
        EXPECT_FALSE(busy.check(ch, t));
        EXPECT_FALSE(busy.check(ch, t + 1.5));
    }
    ch += "HLVM-DONE uptime=21\n";
    EXPECT_FALSE(busy.check(ch, 22));
    EXPECT_TRUE(busy.done());
    EXPECT_FALSE(busy.check(ch, 1000));

    ProgressWatch hostile(3, 0);
    const std::string evil = "HLVM-RESULT \x1b[2J rc=0\n";
    EXPECT_FALSE(hostile.check(evil, 1));
    auto said = hostile.check(evil, 5);
    ASSERT_TRUE(said);
    EXPECT_EQ(said->find('\x1b'), std::string::npos) << *said;
}

TEST(VmQemu, ConsoleRouting) {
    ConsoleRoute all(LiveConsole::kAll);
    EXPECT_TRUE(all.shown("[    0.000000] Linux version 6.12"));
    ConsoleRoute off(LiveConsole::kOff);
    EXPECT_FALSE(off.shown("[    0.000000] Linux version 6.12"));
    EXPECT_FALSE(off.shown("hlvm: guest up"));
    ConsoleRoute stream(LiveConsole::kStream);
    EXPECT_FALSE(stream.shown("[    1.000000] booting"));
    EXPECT_TRUE(stream.shown("hlvm: guest 6.12 up"));
    EXPECT_FALSE(stream.shown("outside the stream"));
    EXPECT_FALSE(stream.shown("hlvm: stream-start cmd"));
    EXPECT_TRUE(stream.shown("hotline: probing"));
    EXPECT_FALSE(stream.shown("[   12.345678] veth: loaded"));
    EXPECT_FALSE(stream.shown("hlvm: stream-end cmd"));
    EXPECT_FALSE(stream.shown("after the stream"));
}

TEST(VmWatch, MonitorSummaryOnePerCpuAndSample) {
    const std::string esc = "\x1b[K\x1b[D";
    std::string text = "QEMU 7.2.22 monitor - type 'help' for more information\r\n";
    text += "(qemu) i" + esc + "info registers -a\r\n";
    for (int c = 0; c < 2; ++c)
        text += "CPU#" + std::to_string(c) + "\r\nRAX=0000000000000001 RBX=0000000000000002\r\n" +
                "RSI=0 RDI=0 RBP=0 RSP=ffffc900000" + std::to_string(c) + "0000\r\n" +
                "RIP=ffffffff8100000" + std::to_string(c) + " RFL=00000002 [-------] CPL=0\r\n";
    for (int c = 0; c < 2; ++c) {
        text += "(qemu) c" + esc + "cpu " + std::to_string(c) + "\r\n";
        text += "(qemu) x" + esc + "x /48gx $esp\r\n";
        text += "ffffc900000" + std::to_string(c) + "0000: 0xffffffff8100100" + std::to_string(c) +
                " 0x000000000000002a\r\n";
    }
    EXPECT_EQ(monitor_summary(text),
              "cpu 0 rip ffffffff81000000 rsp ffffc90000000000 stack ffffffff81001000\n"
              "cpu 1 rip ffffffff81000001 rsp ffffc90000010000 stack ffffffff81001001\n");
}

TEST(VmWatch, FatalConsoleLine) {
    EXPECT_FALSE(fatal_console_line("[ 1.0] ok\n[ 2.0] fine\n"));
    EXPECT_EQ(fatal_console_line(
                  "[ 1.0] ok\n[ 2.0] Oops: 0002 [#1] SMP\n[ 3.0] Kernel panic - not syncing\n"),
              "[ 2.0] Oops: 0002 [#1] SMP");
}

TEST(VmBoot, MemoryCheckedAgainstTheInitramfs) {
    EXPECT_EQ(min_memory_mib(40), 336);
    EXPECT_EQ(memory_problem(336, 40), "");
    EXPECT_EQ(memory_problem(300, 40),
              "--memory 300M is too small for this guest: its 40 MiB initramfs needs at least 336M "
              "(the archive "
              "and its unpacked files, the kernel, hotline)");
}

TEST(VmBoot, ScriptTimeout) {
    EXPECT_EQ(script_timeout_s("#!/bin/sh\n# hlvm-timeout: 240\necho\n"), 240);
    EXPECT_EQ(script_timeout_s("#!/bin/sh\necho # hlvm-timeout: 9\n"), 120);
    EXPECT_EQ(script_timeout_s("# hlvm-timeout: 5s\n# hlvm-timeout: 7\n"), 5);
    EXPECT_EQ(script_timeout_s("# hlvm-timeout: 99999999999\n"), 120);
}

TEST(VmBoot, TempBaseOnlyPlainPaths) {
    TempDir tmp;
    const std::string odd = tmp / "a,b";
    fs::create_directories(odd);
    const char* old = std::getenv("TMPDIR");
    std::string saved = old ? old : "";
    setenv("TMPDIR", odd.c_str(), 1);
    EXPECT_EQ(vm_temp_base(), "/tmp");
    setenv("TMPDIR", tmp.path().c_str(), 1);
    EXPECT_EQ(vm_temp_base(), tmp.path());
    if (old)
        setenv("TMPDIR", saved.c_str(), 1);
    else
        unsetenv("TMPDIR");
}

TEST(VmDigest, Sha256OfAFile) {
    TempDir tmp;
    tmp.write("abc", "abc");
    auto d = sha256_file(tmp / "abc");
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_FALSE(sha256_file(tmp / "missing"));
}

TEST(VmKernels, AliasTable) {
    ASSERT_NE(find_kernel_alias("debian:6.12"), nullptr);
    EXPECT_EQ(find_kernel_alias("6.12")->suite, "bookworm-backports");
    EXPECT_EQ(find_kernel_alias("debian:6.1")->dst_field, "__refcnt");
    EXPECT_EQ(find_kernel_alias("debian:6.2"), nullptr);
    EXPECT_EQ(find_kernel_alias("../6.1"), nullptr);
    EXPECT_EQ(kernel_alias_list(), "debian:6.1|debian:6.12|debian:5.10|debian:latest");
}

TEST(VmProcess, RunOutputAndExitCodes) {
    auto out = run_output({"printf", "%s|", "a b", "$(x)"});
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, "a b|$(x)|");  // argv words, never a shell's
    auto bad = run_output({"false"});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("exit status 1"), std::string::npos);
    auto pid = spawn({"sleep", "30"});
    ASSERT_TRUE(pid);
    EXPECT_FALSE(wait_child(*pid, 0.1));
    EXPECT_EQ(stop_child(*pid, 2), 128 + SIGTERM);
}
