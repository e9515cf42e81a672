// SPDX-License-Identifier: Apache-2.0
// The apply/restore journal on a fixture procfs root: restore, "still ours",
// SIGKILL at every step, reboot detection, the run lock, refusals, faults and
// damaged journals (network namespaces: journal_netns_test.cpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fix_test_util.hpp"
#include "hotline/fix/journal.hpp"

using namespace hotline;
using hotline::test::TempDir;

namespace {

using Fixture = hotline::test::JournalSandbox;
using hotline::test::write_of;

// Injects what a locked-down or read-only kernel does.
class FaultyIo : public KnobIo {
public:
    explicit FaultyIo(KnobIo& inner) : inner_(inner) {}
    std::map<std::string, int> fail_write;  // relpath -> errno
    bool swallow_writes = false;            // accept writes, change nothing
    Result<std::string> read(KnobKind k, const std::string& rel, const std::optional<NetnsRef>& ns) override {
        return inner_.read(k, rel, ns);
    }
    Status write(KnobKind k, const std::string& rel, const std::string& v, const std::optional<NetnsRef>& ns) override {
        if (auto it = fail_write.find(rel); it != fail_write.end())
            return make_error("cannot write \"" + v + "\" to " + rel, it->second);
        if (swallow_writes) return ok_status();
        return inner_.write(k, rel, v, ns);
    }
    Result<NsIdentity> netns_identity(const NetnsRef& ns) override { return inner_.netns_identity(ns); }
    std::optional<NetnsRef> find_netns(const NsIdentity& id) override { return inner_.find_netns(id); }
    Result<std::string> boot_id() override { return inner_.boot_id(); }

private:
    KnobIo& inner_;
};

// Runs apply of both demux knobs (then a restore) in a child that SIGKILLs
// itself at the n-th occurrence of `step`.  Returns the child's wait status.
int crash_child_at(const Fixture& f, const std::string& step, int occurrence) {
    pid_t pid = fork();
    if (pid == 0) {
        int seen = 0;
        JournalOptions o = f.opts;
        o.step_hook = [&](std::string_view s) {
            if (s == step && ++seen == occurrence) raise(SIGKILL);
        };
        FsKnobIo io(f.roots);
        auto j = Journal::open(o, io);
        if (!j) _exit(10);
        if (!(*j)->apply(write_of("net.ipv4.ip_early_demux", "0"))) _exit(11);
        if (!(*j)->apply(write_of("net.ipv4.tcp_early_demux", "0"))) _exit(12);
        (*j)->restore();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

}  // namespace

TEST(Journal, AppliesRecordsDurablyAndRestores) {
    Fixture f;
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j) << j.error().message();
    EXPECT_TRUE((*j)->recovered().empty());
    auto r = (*j)->apply(write_of("net.ipv4.ip_early_demux", "0"));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->status, ApplyStatus::kApplied);
    EXPECT_EQ(r->old_value, "1");
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "0");
    ASSERT_TRUE(f.journal_exists());
    auto doc = nlohmann::json::parse(f.d.read("journal/journal.json"));
    EXPECT_EQ(doc["boot_id"], "aaaa-1111");
    EXPECT_EQ(doc["owner"], "unit test");
    ASSERT_EQ(doc["entries"].size(), 1u);
    EXPECT_EQ(doc["entries"][0]["old"], "1");
    EXPECT_EQ(doc["entries"][0]["new"], "0");
    EXPECT_FALSE(f.d.exists("journal/journal.json.tmp"));

    auto rep = (*j)->restore();
    ASSERT_EQ(rep.items.size(), 1u);
    EXPECT_EQ(rep.items[0].status, RestoreStatus::kRestored);
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    EXPECT_FALSE(f.journal_exists());
    EXPECT_EQ((*j)->pending(), 0u);
    EXPECT_TRUE((*j)->restore().items.empty());  // idempotent
}

TEST(Journal, MultiValueKnobsCompareWithoutWhitespaceNoise) {
    Fixture f;
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(write_of("net.ipv4.tcp_rmem", "4096 131072 6291456"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, ApplyStatus::kAlreadySet);
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, DestructorRestores) {
    Fixture f;
    FsKnobIo io(f.roots);
    {
        auto j = Journal::open(f.opts, io);
        ASSERT_TRUE(j);
        ASSERT_TRUE((*j)->apply(write_of("net.ipv4.ip_early_demux", "0")));
        EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "0");
    }
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, ValueChangedBySomeoneElseIsLeftAlone) {
    Fixture f;
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    ASSERT_TRUE((*j)->apply(write_of("net.ipv4.ip_early_demux", "0")));
    f.d.write("proc/sys/net/ipv4/ip_early_demux", "5\n");  // another actor
    auto rep = (*j)->restore();
    ASSERT_EQ(rep.items.size(), 1u);
    EXPECT_EQ(rep.items[0].status, RestoreStatus::kChangedByOther);
    EXPECT_EQ(rep.items[0].current, "5");
    EXPECT_NE(rep.items[0].detail.find("now \"5\", hotline wrote \"0\", the original was \"1\""), std::string::npos)
        << rep.items[0].detail;
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "5");
    EXPECT_TRUE(rep.clean());
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, SigkillAtEveryStepIsRecoveredByTheNextStart) {
    struct Case {
        const char* step;
        int occurrence;
    };
    // Every point where a crash can land: after the intent is durable, after the
    // kernel write, after the read-back, for each knob, and during the restore.
    for (Case c : {Case{"journaled", 1}, Case{"written", 1}, Case{"verified", 1}, Case{"journaled", 2},
                   Case{"written", 2}, Case{"verified", 2}, Case{"restoring", 1}, Case{"restoring", 2}}) {
        SCOPED_TRACE(std::string(c.step) + " #" + std::to_string(c.occurrence));
        Fixture f;
        int st = crash_child_at(f, c.step, c.occurrence);
        ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "child status " << st;
        ASSERT_TRUE(f.journal_exists());
        FsKnobIo io(f.roots);
        auto j = Journal::open(f.opts, io);  // the next start
        ASSERT_TRUE(j) << j.error().message();
        EXPECT_FALSE((*j)->recovered().empty());
        EXPECT_NE((*j)->recovered().journal_owner.find("unit test"), std::string::npos);
        for (auto& item : (*j)->recovered().items)
            EXPECT_TRUE(item.status == RestoreStatus::kRestored || item.status == RestoreStatus::kAlreadyOriginal)
                << item.knob << ": " << to_string(item.status);
        EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
        EXPECT_EQ(f.val("net/ipv4/tcp_early_demux"), "1");
        EXPECT_FALSE(f.journal_exists());
    }
}

TEST(Journal, HotlineRestoreCompletesAKilledRun) {
    Fixture f;
    int st = crash_child_at(f, "verified", 2);
    ASSERT_TRUE(WIFSIGNALED(st));
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "0");
    FsKnobIo io(f.roots);
    auto rep = recover(f.opts, io);
    ASSERT_TRUE(rep) << rep.error().message();
    ASSERT_EQ(rep->items.size(), 2u);
    EXPECT_EQ(rep->items[0].status, RestoreStatus::kRestored);  // newest first
    EXPECT_NE(rep->items[0].knob.find("tcp_early_demux"), std::string::npos);
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    EXPECT_EQ(f.val("net/ipv4/tcp_early_demux"), "1");
    EXPECT_FALSE(f.journal_exists());
    auto again = recover(f.opts, io);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->empty());
}

TEST(Journal, AJournalFromAnotherBootIsArchivedNotReplayed) {
    Fixture f;
    int st = crash_child_at(f, "verified", 2);
    ASSERT_TRUE(WIFSIGNALED(st));
    f.d.write("boot_id", "bbbb-2222\n");  // "reboot"
    // After a real reboot the kernel has reset the knobs; leave the fixture at
    // hotline's value to prove that nothing is written back.
    FsKnobIo io(f.roots);
    auto rep = recover(f.opts, io);
    ASSERT_TRUE(rep) << rep.error().message();
    EXPECT_TRUE(rep->stale_boot);
    EXPECT_TRUE(rep->items.empty());
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "0");
    EXPECT_FALSE(f.journal_exists());
    ASSERT_FALSE(rep->archived_to.empty());
    EXPECT_TRUE(std::filesystem::exists(rep->archived_to));
    EXPECT_NE(rep->archived_to.find("/journal/archive/"), std::string::npos);
    auto archived = nlohmann::json::parse(f.d.read(rep->archived_to.substr(f.d.path().size() + 1)));
    EXPECT_EQ(archived["boot_id"], "aaaa-1111");
    EXPECT_NE(rep->lines()[0].find("earlier boot"), std::string::npos);
}

TEST(Journal, OneRunAtATime) {
    Fixture f;
    FsKnobIo io(f.roots);
    auto first = Journal::open(f.opts, io);
    ASSERT_TRUE(first);
    auto second = Journal::open(f.opts, io);
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message().find("another hotline run (pid " + std::to_string(getpid()) + ")"),
              std::string::npos)
        << second.error().message();
    EXPECT_FALSE(recover(f.opts, io));
    first->reset();
    EXPECT_TRUE(Journal::open(f.opts, io));
}

TEST(Journal, PolicyRefusalsHappenBeforeAnyWrite) {
    Fixture f;
    f.opts.allow_global = false;
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(write_of("net.ipv4.ip_early_demux", "0", Scope::kGlobal));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("--allow-global"), std::string::npos);
    r = (*j)->apply(write_of("net.ipv4.ip_early_demux", "0", Scope::kNetns));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("--netns"), std::string::npos);
    for (std::string hostile : {"../../../etc/passwd", "net.ipv4.*", "", "/proc/sys/net/ipv4/ip_early_demux"}) {
        KnobWrite w = write_of(hostile, "0", Scope::kGlobal);
        auto h = (*j)->apply(w);
        ASSERT_FALSE(h) << hostile;
        EXPECT_NE(h.error().message().find("refused sysctl name"), std::string::npos) << h.error().message();
    }
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, RefusedWritesAreCouldNotApply) {
    for (int err : {EROFS, EPERM, EACCES, EINVAL}) {
        SCOPED_TRACE(strerrorname_np(err));
        Fixture f;
        FsKnobIo fs_io(f.roots);
        FaultyIo io(fs_io);
        io.fail_write["net/ipv4/ip_early_demux"] = err;
        auto j = Journal::open(f.opts, io);
        ASSERT_TRUE(j);
        auto r = (*j)->apply(write_of("net.ipv4.ip_early_demux", "0"));
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->status, ApplyStatus::kCouldNotApply);
        EXPECT_EQ(r->err, err);
        EXPECT_NE(r->reason.find(strerrorname_np(err)), std::string::npos) << r->reason;
        EXPECT_EQ(to_string(r->status), "could not apply");
        EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
        EXPECT_EQ((*j)->pending(), 0u);
        EXPECT_FALSE(f.journal_exists());
    }
}

TEST(Journal, AWriteThatDoesNotStickIsCouldNotApply) {
    Fixture f;
    FsKnobIo fs_io(f.roots);
    FaultyIo io(fs_io);
    io.swallow_writes = true;
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(write_of("net.ipv4.ip_early_demux", "0"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, ApplyStatus::kCouldNotApply);
    EXPECT_NE(r->reason.find("reads \"1\""), std::string::npos) << r->reason;
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, AnAbsentKnobIsCouldNotApply) {
    Fixture f;
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(write_of("net.ipv4.tcp_low_latency", "1"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, ApplyStatus::kCouldNotApply);
    EXPECT_EQ(r->err, ENOENT);
    EXPECT_NE(r->reason.find("does not exist"), std::string::npos);
}

TEST(Journal, AFailedRestoreKeepsTheJournalForARetry) {
    Fixture f;
    FsKnobIo fs_io(f.roots);
    FaultyIo io(fs_io);
    {
        auto j = Journal::open(f.opts, io);
        ASSERT_TRUE(j);
        ASSERT_TRUE((*j)->apply(write_of("net.ipv4.ip_early_demux", "0")));
        io.fail_write["net/ipv4/ip_early_demux"] = EBUSY;
        auto rep = (*j)->restore();
        ASSERT_EQ(rep.items.size(), 1u);
        EXPECT_EQ(rep.items[0].status, RestoreStatus::kFailed);
        EXPECT_FALSE(rep.clean());
        EXPECT_TRUE(f.journal_exists());
        // The journal must not lose the entry: a second start refuses to pile on.
        j->reset();
    }
    auto blocked = Journal::open(f.opts, io);
    ASSERT_FALSE(blocked);
    EXPECT_NE(blocked.error().message().find("hotline restore"), std::string::npos);
    io.fail_write.clear();
    auto rep = recover(f.opts, io);
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->clean());
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    EXPECT_FALSE(f.journal_exists());
}

TEST(Journal, ADamagedOrTamperedJournalIsSetAside) {
    Fixture f;
    f.d.write("journal/journal.json", "{ not json");
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_FALSE(j);
    EXPECT_NE(j.error().message().find("moved to"), std::string::npos);
    EXPECT_FALSE(f.journal_exists());
    EXPECT_TRUE(Journal::open(f.opts, io));

    nlohmann::json doc{{"schema", "hotline.journal"}, {"version", 1}, {"boot_id", "aaaa-1111"}, {"pid", 1},
                       {"owner", "x"},
                       {"entries", {{{"kind", "sysctl"}, {"name", "../../../etc/shadow"}, {"scope", "global"},
                                     {"old", "x"}, {"new", "y"}, {"netns", nullptr}}}}};
    f.d.write("journal/journal.json", doc.dump());
    auto t = recover(f.opts, io);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message().find("refused sysctl name"), std::string::npos) << t.error().message();
}

TEST(ShutdownSignals, ASecondSignalDoesNotInterruptTheRestore) {
    Fixture f;
    pid_t pid = fork();
    if (pid == 0) {
        ShutdownSignals signals;
        FsKnobIo io(f.roots);
        JournalOptions o = f.opts;
        o.step_hook = [](std::string_view s) {
            if (s == "restoring") kill(getpid(), SIGTERM);  // the impatient second Ctrl-C
        };
        auto j = Journal::open(o, io);
        if (!j || !(*j)->apply(write_of("net.ipv4.ip_early_demux", "0"))) _exit(10);
        kill(getpid(), SIGINT);
        if (signals.wait(5) != SIGINT) _exit(11);
        auto rep = (*j)->restore();
        if (rep.items.size() != 1 || rep.items[0].status != RestoreStatus::kRestored) _exit(12);
        if (signals.poll() != SIGTERM) _exit(13);
        if (signals.received() != SIGINT) _exit(14);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(WEXITSTATUS(st), 0);
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
}

TEST(Journal, OneRunAtATimeAcrossJournalDirectories) {
    Fixture f;
    FsKnobIo io(f.roots);
    auto first = Journal::open(f.opts, io);
    ASSERT_TRUE(first);
    JournalOptions other = f.opts;
    other.dir = f.d / "other-journal";
    auto second = Journal::open(other, io);
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message().find("another hotline run"), std::string::npos) << second.error().message();
}

TEST(Journal, ADamagedEntryDoesNotStopTheValidOnesFromBeingRestored) {
    Fixture f;
    f.d.write("proc/sys/net/ipv4/ip_early_demux", "0\n");  // hotline's value, still in place
    nlohmann::json good{{"kind", "sysctl"}, {"name", "net.ipv4.ip_early_demux"}, {"scope", "global"},
                        {"fix", "x"}, {"old", "1"}, {"new", "0"}, {"netns", nullptr}};
    nlohmann::json bad{{"kind", "sysctl"}, {"name", "../../../etc/shadow"}, {"scope", "global"},
                       {"old", "x"}, {"new", "y"}, {"netns", nullptr}};
    nlohmann::json wrong_type{{"kind", 7}};
    nlohmann::json doc{{"schema", "hotline.journal"}, {"version", 1}, {"boot_id", "aaaa-1111"}, {"pid", 1},
                       {"owner", "x"}, {"entries", {good, bad, wrong_type}}};
    f.d.write("journal/journal.json", doc.dump());
    FsKnobIo io(f.roots);
    auto t = recover(f.opts, io);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message().find("refused sysctl name"), std::string::npos) << t.error().message();
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
    EXPECT_FALSE(f.journal_exists());
    EXPECT_TRUE(Journal::open(f.opts, io));
}

// A field of the wrong type is damage to report, never an exception: the fuzz
// tier found recover() aborting on a journal whose "schema" was a number.
TEST(Journal, WrongTypedFieldsAreDamageNotAnAbort) {
    Fixture f;
    FsKnobIo io(f.roots);
    f.d.write("journal/journal.json",
              R"({"schema":1,"boot_ppp":"hotline.journal","version":1,"tobo_tries":[]})");
    auto t = recover(f.opts, io);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message().find("not a hotline journal"), std::string::npos) << t.error().message();
    EXPECT_FALSE(f.journal_exists());

    nlohmann::json header{{"schema", "hotline.journal"}, {"version", 1}, {"boot_id", 5}, {"pid", "one"},
                          {"owner", 3}, {"entries", nlohmann::json::array()}};
    f.d.write("journal/journal.json", header.dump());
    auto stale = recover(f.opts, io);
    ASSERT_TRUE(stale) << stale.error().message();
    EXPECT_TRUE(stale->stale_boot);
    EXPECT_EQ(stale->journal_owner, "pid 0: ?");

    f.d.write("proc/sys/net/ipv4/ip_early_demux", "0\n");
    nlohmann::json good{{"kind", "sysctl"}, {"name", "net.ipv4.ip_early_demux"}, {"scope", "global"},
                        {"fix", "x"}, {"old", "1"}, {"new", "0"}, {"netns", nullptr}};
    nlohmann::json float_pid{{"kind", "sysctl"}, {"name", "net.ipv4.tcp_ecn"}, {"scope", "netns"}, {"old", "1"},
                             {"new", "0"}, {"netns", {{"name", ""}, {"pid", 1e300}, {"dev", 1}, {"ino", -1.5e300}}}};
    nlohmann::json doc{{"schema", "hotline.journal"}, {"version", 1}, {"boot_id", "aaaa-1111"}, {"pid", 1},
                       {"owner", "x"}, {"entries", {good, float_pid}}};
    f.d.write("journal/journal.json", doc.dump());
    auto r = recover(f.opts, io);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("not an integer in range"), std::string::npos) << r.error().message();
    EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
}

TEST(Journal, APlantedTempFileSymlinkIsNotFollowed) {
    Fixture f;
    f.d.write("victim", "precious\n");
    std::filesystem::create_directories(f.d / "journal");
    std::filesystem::permissions(f.d / "journal", std::filesystem::perms::owner_all);
    std::filesystem::create_symlink(f.d / "victim", f.d / ("journal/journal.json.tmp." + std::to_string(getpid())));
    FsKnobIo io(f.roots);
    auto j = Journal::open(f.opts, io);
    ASSERT_TRUE(j);
    auto r = (*j)->apply(write_of("net.ipv4.ip_early_demux", "0"));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(f.d.read("victim"), "precious\n");
    (*j)->restore();
}

// A journal hotline writes is one it can read back: a fix whose journal would
// pass the read limit is refused before its first change, and a journal too
// large to read is archived with the reason, so it blocks no later run.
TEST(Journal, AJournalTooLargeToReadBackIsRefusedBeforeAndArchivedAfter) {
    Fixture f;
    std::vector<KnobWrite> writes;
    const std::string mask(1000, 'f');  // an rps_cpus-like value of a large machine
    for (int i = 0; i < 1200; ++i) {
        const std::string name = "net.ipv4.conf.veth" + std::to_string(i) + ".rp_filter";
        f.d.write("proc/sys/net/ipv4/conf/veth" + std::to_string(i) + "/rp_filter", "1\n");
        writes.push_back(write_of(name, mask));
    }
    FsKnobIo io(f.roots);
    {
        auto j = Journal::open(f.opts, io);
        ASSERT_TRUE(j) << j.error().message();
        auto fits = (*j)->check_fits(writes);
        ASSERT_FALSE(fits);
        EXPECT_NE(fits.error().message().find("nothing was changed"), std::string::npos) << fits.error().message();
        EXPECT_TRUE((*j)->check_fits({writes.begin(), writes.begin() + 10}));
        EXPECT_EQ(f.val("net/ipv4/conf/veth0/rp_filter"), "1");
        EXPECT_FALSE(f.journal_exists());
    }
    // What a killed older hotline could leave: 1.2 MB of journal.
    nlohmann::json doc{{"schema", "hotline.journal"}, {"version", 1}, {"boot_id", "aaaa-1111"}, {"pid", 1},
                       {"owner", "x"}, {"entries", nlohmann::json::array()}};
    for (int i = 0; i < 12000; ++i)
        doc["entries"].push_back({{"kind", "sysctl"}, {"name", "net.ipv4.conf.veth" + std::to_string(i) + ".rp_filter"},
                                  {"scope", "global"}, {"old", "1"}, {"new", "0"}, {"netns", nullptr}});
    ASSERT_GT(doc.dump().size(), 1u << 20);
    f.d.write("journal/journal.json", doc.dump());
    auto t = recover(f.opts, io);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message().find("more than the 1048576 hotline reads back"), std::string::npos)
        << t.error().message();
    EXPECT_NE(t.error().message().find("moved to"), std::string::npos) << t.error().message();
    EXPECT_FALSE(f.journal_exists());
    EXPECT_TRUE(Journal::open(f.opts, io)) << "the next run is not blocked";
}

// Restore with nothing to restore leaves the directory it was pointed at as it
// was: no lock file, no directory created.
TEST(Journal, RestoreWithNoJournalCreatesNothing) {
    Fixture f;
    TempDir elsewhere;
    elsewhere.write("passwd", "root:x:0:0\n");
    JournalOptions o = f.opts;
    o.dir = elsewhere.path();
    FsKnobIo io(f.roots);
    auto r = recover(o, io);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->items.empty());
    EXPECT_FALSE(elsewhere.exists("lock"));
    o.dir = elsewhere / "not-there";
    ASSERT_TRUE(recover(o, io));
    EXPECT_FALSE(elsewhere.exists("not-there"));
}
