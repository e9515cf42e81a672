// SPDX-License-Identifier: Apache-2.0
// Knob names are refused before anything is touched; opens stay beneath their root.
#include <gtest/gtest.h>
#include <unistd.h>

#include "fix_test_util.hpp"
#include "hotline/fix/journal.hpp"

using namespace hotline;
using hotline::test::TempDir;

TEST(KnobName, SysctlFormsBecomePaths) {
    auto r = knob_relpath(KnobKind::kSysctl, "net.ipv4.ip_early_demux");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, "net/ipv4/ip_early_demux");
    r = knob_relpath(KnobKind::kSysctl, "net/ipv4/conf/eth0.100/rp_filter");
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "net/ipv4/conf/eth0.100/rp_filter");
    r = knob_relpath(KnobKind::kSysfs, "class/net/veth0/queues/rx-0/rps_cpus");
    ASSERT_TRUE(r);
    r = knob_relpath(KnobKind::kSysfs, "bus/pci/devices/0000:00:1f.2/numa_node");
    ASSERT_TRUE(r);
    r = knob_relpath(KnobKind::kIrqAffinity, "42");
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "42/smp_affinity_list");
    EXPECT_EQ(knob_display(KnobKind::kSysctl, "net/ipv4/ip_early_demux"), "net.ipv4.ip_early_demux");
}

// A component that starts with dots is a name ("..pid" is a valid interface
// name), not a step up: only "." and ".." are refused.  The journal fuzz target
// once trapped on such a path (corpus/journal/dotted-name-component).
TEST(KnobName, DotsInsideAComponentAreAName) {
    auto r = knob_relpath(KnobKind::kSysctl, "net/ipv4/conf/..pid/forwarding");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, "net/ipv4/conf/..pid/forwarding");
    r = knob_relpath(KnobKind::kSysctl, "..pid/etc/passwd");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, "..pid/etc/passwd");  // /proc/sys/..pid/etc/passwd: beneath /proc/sys
    EXPECT_FALSE(knob_relpath(KnobKind::kSysctl, "net/ipv4/conf/../forwarding"));
}

TEST(KnobName, HostileNamesAreRefused) {
    const std::vector<std::string> bad = {
        "", "../etc/passwd", "net/../../etc/shadow", "/proc/sys/net/ipv4/ip_early_demux", "net.ipv4.*",
        "net.ipv4.ip_early_demux\n", "net ipv4", "net..ipv4", "net.ipv4.", ".net", "net/./ipv4", "a\\b", "~root",
        "net/ipv4/?", "net/ipv4/[ab]", std::string("net\0x", 5), "net/ipv4/..", "$(reboot)", "net/ipv4/...",
    };
    for (auto& n : bad) {
        auto r = knob_relpath(KnobKind::kSysctl, n);
        EXPECT_FALSE(r) << "accepted \"" << n << "\"";
        if (!r) {
            EXPECT_NE(r.error().message().find("refused sysctl name"), std::string::npos);
        }
    }
    for (std::string n : {"..", "class/../../etc", "/sys/class", "class//net", "class/net/*"})
        EXPECT_FALSE(knob_relpath(KnobKind::kSysfs, n)) << n;
    for (std::string n : {"4a", "../1", "", "1/2"}) EXPECT_FALSE(knob_relpath(KnobKind::kIrqAffinity, n)) << n;
}

TEST(KnobName, ErrorSaysWhatIsWrong) {
    auto r = knob_relpath(KnobKind::kSysctl, "net/../etc");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("\"..\" components are not allowed"), std::string::npos);
    r = knob_relpath(KnobKind::kSysctl, "net.ipv4.*");
    EXPECT_NE(r.error().message().find("no globs"), std::string::npos);
    r = knob_relpath(KnobKind::kSysctl, "");
    EXPECT_NE(r.error().message().find("it is empty"), std::string::npos);
    r = knob_relpath(KnobKind::kSysctl, std::string("a\x01", 2));
    EXPECT_NE(r.error().message().find("\\x01"), std::string::npos);  // shown, not emitted raw
}

TEST(KnobValue, NormalizesWhitespace) {
    EXPECT_EQ(normalize_value("4096\t87380   6291456\n"), "4096 87380 6291456");
    EXPECT_EQ(normalize_value("  1\n"), "1");
    EXPECT_EQ(normalize_value("\n"), "");
}

TEST(Netns, ParsesNamesAndPids) {
    auto n = parse_netns("hl-test-1");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->name, "hl-test-1");
    KnobRoots roots;
    EXPECT_EQ(n->path(roots), "/run/netns/hl-test-1");
    auto p = parse_netns("pid:42");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->pid, 42);
    EXPECT_EQ(p->path(roots), "/proc/42/ns/net");
    for (std::string bad : {"", "..", "a/b", "pid:", "pid:-3", "pid:x", "../x"}) EXPECT_FALSE(parse_netns(bad)) << bad;
}

TEST(KnobIo, SymlinksMayNotLeaveTheRoot) {
    TempDir d;
    d.write("outside/secret", "s3cret\n");
    d.write("sys/devices/real/value", "7\n");
    std::filesystem::create_directories(d / "sys/class/net");
    ASSERT_EQ(symlink((d / "outside").c_str(), (d / "sys/class/evil").c_str()), 0);
    ASSERT_EQ(symlink("../../devices/real", (d / "sys/class/net/ok").c_str()), 0);
    KnobRoots roots;
    roots.sys = d / "sys";
    FsKnobIo io(roots);
    auto inside = io.read(KnobKind::kSysfs, "class/net/ok/value", std::nullopt);
    ASSERT_TRUE(inside) << inside.error().message();
    EXPECT_EQ(*inside, "7\n");
    auto escape = io.read(KnobKind::kSysfs, "class/evil/secret", std::nullopt);
    ASSERT_FALSE(escape);
    EXPECT_NE(escape.error().message().find("outside"), std::string::npos) << escape.error().message();
    auto w = io.write(KnobKind::kSysfs, "class/evil/secret", "x", std::nullopt);
    ASSERT_FALSE(w);
    EXPECT_EQ(d.read("outside/secret"), "s3cret\n");
}

TEST(KnobIo, ReadsAndWritesBeneathTheRoot) {
    TempDir d;
    d.write("proc/sys/net/ipv4/ip_early_demux", "1\n");
    KnobRoots roots;
    roots.proc_sys = d / "proc/sys";
    FsKnobIo io(roots);
    ASSERT_TRUE(io.write(KnobKind::kSysctl, "net/ipv4/ip_early_demux", "0", std::nullopt));
    auto v = io.read(KnobKind::kSysctl, "net/ipv4/ip_early_demux", std::nullopt);
    ASSERT_TRUE(v);
    EXPECT_EQ(normalize_value(*v), "0");
    auto missing = io.read(KnobKind::kSysctl, "net/ipv4/nope", std::nullopt);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().err, ENOENT);
}
