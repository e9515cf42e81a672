// SPDX-License-Identifier: Apache-2.0
// The journal's network-namespace knobs on a fixture procfs root: each
// namespace changed alone, found again by its identity, and a netns label on a
// machine-wide knob never trusted.
#include <gtest/gtest.h>

#include <filesystem>

#include "fix_test_util.hpp"
#include "hotline/fix/journal.hpp"

using namespace hotline;
using hotline::test::TempDir;

namespace {

using Fixture = hotline::test::JournalSandbox;
using hotline::test::write_of;

// Namespaces on a fixture: each name has its own proc/sys tree under ns/NAME,
// and its identity is the inode of the file netns/NAME.
class FixtureNsIo : public KnobIo {
public:
    FixtureNsIo(const TempDir& d, KnobRoots roots) : d_(d), base_(std::move(roots)) {}
    Result<std::string> read(KnobKind k, const std::string& rel, const std::optional<NetnsRef>& ns) override {
        return io_for(ns).read(k, rel, std::nullopt);
    }
    Status write(KnobKind k, const std::string& rel, const std::string& v, const std::optional<NetnsRef>& ns) override {
        return io_for(ns).write(k, rel, v, std::nullopt);
    }
    Result<NsIdentity> netns_identity(const NetnsRef& ns) override { return base_.netns_identity(ns); }
    std::optional<NetnsRef> find_netns(const NsIdentity& id) override { return base_.find_netns(id); }
    Result<std::string> boot_id() override { return base_.boot_id(); }

private:
    FsKnobIo io_for(const std::optional<NetnsRef>& ns) {
        if (!ns) return base_;
        KnobRoots r = base_.roots();
        std::string tree = ns->pid > 0 ? "pid-" + std::to_string(ns->pid) : ns->name;
        r.proc_sys = d_ / ("ns/" + tree + "/proc/sys");
        return FsKnobIo(r);
    }
    const TempDir& d_;
    FsKnobIo base_;
};

}  // namespace

TEST(Journal, NetnsKnobsChangeOnlyTheirNamespace) {
    Fixture f;
    f.d.write("ns/hl-a/proc/sys/net/ipv4/ip_early_demux", "1\n");
    f.d.write("netns/hl-a", "");
    FixtureNsIo io(f.d, f.roots);
    f.opts.allow_global = false;
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    KnobWrite w = write_of("net.ipv4.ip_early_demux", "0", Scope::kNetns);
    w.netns = NetnsRef{"hl-a", 0};
    auto r = (*j)->apply(w);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->status, ApplyStatus::kApplied);
    EXPECT_EQ(r->knob, "net.ipv4.ip_early_demux in netns hl-a");
    EXPECT_EQ(normalize_value(f.d.read("ns/hl-a/proc/sys/net/ipv4/ip_early_demux")), "0");
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    auto rep = (*j)->restore();
    EXPECT_EQ(rep.items.at(0).status, RestoreStatus::kRestored);
    EXPECT_EQ(normalize_value(f.d.read("ns/hl-a/proc/sys/net/ipv4/ip_early_demux")), "1");
}

TEST(Journal, AVanishedOrReplacedNamespaceIsNotTouched) {
    for (bool recreate : {false, true}) {
        SCOPED_TRACE(recreate ? "recreated" : "deleted");
        Fixture f;
        f.d.write("ns/hl-a/proc/sys/net/ipv4/ip_early_demux", "1\n");
        f.d.write("netns/hl-a", "");
        FixtureNsIo io(f.d, f.roots);
        auto j = Journal::open(f.opts, io);
        ASSERT_TRUE(j);
        KnobWrite w = write_of("net.ipv4.ip_early_demux", "0", Scope::kNetns);
        w.netns = NetnsRef{"hl-a", 0};
        ASSERT_TRUE((*j)->apply(w));
        // A hard link keeps the old inode alive, so a recreated name cannot reuse it.
        std::filesystem::create_hard_link(f.d / "netns/hl-a", f.d / "old-hl-a");
        std::filesystem::remove(f.d / "netns/hl-a");
        if (recreate) f.d.write("netns/hl-a", "");
        auto rep = (*j)->restore();
        ASSERT_EQ(rep.items.size(), 1u);
        EXPECT_EQ(rep.items[0].status, RestoreStatus::kGone);
        EXPECT_NE(rep.items[0].detail.find(recreate ? "different namespace" : "no longer exists"), std::string::npos);
        EXPECT_EQ(normalize_value(f.d.read("ns/hl-a/proc/sys/net/ipv4/ip_early_demux")), "0");
        EXPECT_FALSE(f.journal_exists());
    }
}

TEST(Journal, AMissingNamespaceIsAnErrorNotCouldNotApply) {
    Fixture f;
    FixtureNsIo io(f.d, f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    KnobWrite w = write_of("net.ipv4.ip_early_demux", "0", Scope::kNetns);
    w.netns = NetnsRef{"hl-missing", 0};
    auto r = (*j)->apply(w);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("netns hl-missing"), std::string::npos) << r.error().message();
    EXPECT_FALSE(f.journal_exists());
}

namespace {

// A fixture "process" whose namespace file is proc/PID/ns/net; hard links give
// two processes (or a process and an `ip netns` name) the same namespace.
void fixture_process(const Fixture& f, int pid, const std::string& same_ns_as = "") {
    std::filesystem::create_directories(f.d / ("proc/" + std::to_string(pid) + "/ns"));
    std::string p = f.d / ("proc/" + std::to_string(pid) + "/ns/net");
    if (same_ns_as.empty()) f.d.write("proc/" + std::to_string(pid) + "/ns/net", "");
    else std::filesystem::create_hard_link(same_ns_as, p);
}

KnobWrite netns_write_of(const NetnsRef& ns) {
    KnobWrite w = write_of("net.ipv4.ip_early_demux", "0", Scope::kNetns);
    w.netns = ns;
    return w;
}

}  // namespace

TEST(Journal, APidInTheHostNamespaceNeedsAllowGlobal) {
    Fixture f;
    f.roots.proc = f.d / "proc";
    f.opts.roots = f.roots;
    f.opts.allow_global = false;
    fixture_process(f, 1);
    fixture_process(f, 4242, f.d / "proc/1/ns/net");
    f.d.write("ns/pid-4242/proc/sys/net/ipv4/ip_early_demux", "1\n");
    FixtureNsIo io(f.d, f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(netns_write_of(NetnsRef{"", 4242}));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("--allow-global"), std::string::npos) << r.error().message();
    EXPECT_EQ(normalize_value(f.d.read("ns/pid-4242/proc/sys/net/ipv4/ip_early_demux")), "1");
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, RestoreFindsTheNamespaceByItsIdentityAfterThePidExits) {
    Fixture f;
    f.roots.proc = f.d / "proc";
    f.opts.roots = f.roots;
    fixture_process(f, 1);
    fixture_process(f, 4242);
    fixture_process(f, 777, f.d / "proc/4242/ns/net");  // another process in the same namespace
    f.d.write("ns/pid-4242/proc/sys/net/ipv4/ip_early_demux", "1\n");
    std::filesystem::create_directory_symlink(f.d / "ns/pid-4242", f.d / "ns/pid-777");
    FixtureNsIo io(f.d, f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(netns_write_of(NetnsRef{"", 4242}));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->status, ApplyStatus::kApplied);
    std::filesystem::remove_all(f.d / "proc/4242");  // the pid exits; its namespace lives on in pid 777
    auto rep = (*j)->restore();
    ASSERT_EQ(rep.items.size(), 1u);
    EXPECT_EQ(rep.items[0].status, RestoreStatus::kRestored) << rep.items[0].detail;
    EXPECT_EQ(normalize_value(f.d.read("ns/pid-4242/proc/sys/net/ipv4/ip_early_demux")), "1");
}

TEST(Journal, ANetnsLabelOnAMachineWideKnobIsNotTrusted) {
    Fixture f;
    f.opts.allow_global = false;
    f.d.write("proc/sys/kernel/sched_autogroup_enabled", "1\n");
    f.d.write("ns/hl-a/proc/sys/kernel/sched_autogroup_enabled", "1\n");
    f.d.write("netns/hl-a", "");
    FixtureNsIo io(f.d, f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    for (KnobKind kind : {KnobKind::kSysctl, KnobKind::kSysfs}) {
        KnobWrite w = write_of(kind == KnobKind::kSysctl ? "kernel.sched_autogroup_enabled" : "kernel/mm/ksm/run",
                               "0", Scope::kNetns);
        w.kind = kind;
        w.netns = NetnsRef{"hl-a", 0};
        auto r = (*j)->apply(w);
        ASSERT_FALSE(r) << w.name;
        EXPECT_NE(r.error().message().find("machine-wide"), std::string::npos) << r.error().message();
    }
    EXPECT_EQ(normalize_value(f.d.read("ns/hl-a/proc/sys/kernel/sched_autogroup_enabled")), "1");
    EXPECT_FALSE(f.journal_exists());
}

// Apply refuses a netns label on a machine-wide knob; an edited journal that
// carries one must not make restore write the host's knob.
TEST(Journal, AJournalEntryLabellingAMachineWideKnobPerNetnsIsNotRestored) {
    Fixture f;
    f.d.write("proc/sys/vm/swappiness", "60\n");
    nlohmann::json lie{{"kind", "sysctl"}, {"name", "vm.swappiness"}, {"scope", "netns"}, {"fix", "x"},
                       {"old", "7"}, {"new", "60"}, {"netns", nullptr}};
    nlohmann::json doc{{"schema", "hotline.journal"}, {"version", 1}, {"boot_id", "aaaa-1111"}, {"pid", 1},
                       {"owner", "x"}, {"entries", {lie}}};
    f.d.write("journal/journal.json", doc.dump());
    FsKnobIo io(f.roots);
    auto t = recover(f.opts, io);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message().find("machine-wide"), std::string::npos) << t.error().message();
    EXPECT_EQ(f.val("vm/swappiness"), "60");
}
