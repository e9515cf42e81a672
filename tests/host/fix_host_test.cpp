// SPDX-License-Identifier: Apache-2.0
// Journaled fixes on the real kernel (root): a per-netns sysctl in a throwaway
// namespace is applied and restored, also after SIGKILL of the applying process,
// the host's own value never moves, and read-only knobs give "could not apply".
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "fix_test_util.hpp"
#include "hotline/model/exit_codes.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/fix/journal.hpp"

using namespace hotline;
using hotline::test::knob;
using hotline::test::TempDir;

namespace {

int sh(const std::string& cmd) {
    int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// A throwaway namespace named hl-test-<pid>-<n>, deleted on every exit path.
class TestNetns {
public:
    TestNetns() {
        static int n = 0;
        name_ = "hl-test-" + std::to_string(getpid()) + "-" + std::to_string(++n);
        ok_ = sh("ip netns add " + name_) == 0;
    }
    ~TestNetns() {
        if (ok_) sh("ip netns del " + name_);
    }
    bool ok() const { return ok_; }
    const std::string& name() const { return name_; }
    NetnsRef ref() const { return NetnsRef{name_, 0}; }

private:
    std::string name_;
    bool ok_ = false;
};

struct Child {
    pid_t pid = -1;
    FILE* out = nullptr;
    ~Child() {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
        if (out) fclose(out);
    }
    // Reads stdout lines until one contains `marker`; false at EOF (the child died).
    bool wait_for(const std::string& marker, std::string* seen) {
        char line[1024];
        while (fgets(line, sizeof line, out)) {
            *seen += line;
            if (std::string(line).find(marker) != std::string::npos) return true;
        }
        return false;
    }
    int reap() {
        int st = 0;
        waitpid(pid, &st, 0);
        pid = -1;
        return st;
    }
};

void spawn(Child& c, const std::vector<std::string>& args) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    c.pid = fork();
    ASSERT_GE(c.pid, 0);
    if (c.pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(fds[1]);
    c.out = fdopen(fds[0], "r");
}

std::string run_capture(const std::string& cmd, int* rc) {
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    char buf[512];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    int st = p ? pclose(p) : -1;
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

class FixHost : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0) GTEST_SKIP() << "needs root";
        host_ip_ = knob("net/ipv4/ip_early_demux");
        host_tcp_ = knob("net/ipv4/tcp_early_demux");
    }
    void TearDown() override {
        if (geteuid() != 0) return;
        // The host's own namespace must be untouched by everything here.
        EXPECT_EQ(knob("net/ipv4/ip_early_demux"), host_ip_);
        EXPECT_EQ(knob("net/ipv4/tcp_early_demux"), host_tcp_);
    }
    std::string host_ip_, host_tcp_;
};

}  // namespace

TEST_F(FixHost, AppliesAPerNetnsSysctlAndRestoresIt) {
    TestNetns ns;
    ASSERT_TRUE(ns.ok());
    ASSERT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    ApplyTarget target;
    target.netns = {ns.ref()};
    auto plan = plan_changes(*cat->find("early-demux-off"), target);
    ASSERT_TRUE(plan) << plan.error().message();
    TempDir jdir;
    JournalOptions jo;
    jo.dir = jdir / "journal";
    FsKnobIo io;
    auto j = Journal::open(jo, io);
    ASSERT_TRUE(j) << j.error().message();
    for (auto& w : plan->writes) {
        auto r = (*j)->apply(w);
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->status, ApplyStatus::kApplied) << r->reason;
    }
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "0");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", ns.ref()), "0");
    EXPECT_EQ(knob("net/ipv4/ip_early_demux"), host_ip_);
    auto rep = (*j)->restore();
    ASSERT_EQ(rep.items.size(), 2u);
    for (auto& i : rep.items) EXPECT_EQ(i.status, RestoreStatus::kRestored) << i.knob << ": " << i.detail;
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", ns.ref()), "1");
}

TEST_F(FixHost, SigkilledApplyIsRestoredByHotlineRestore) {
    TestNetns ns;
    ASSERT_TRUE(ns.ok());
    TempDir jdir;
    std::string journal = jdir / "journal";
    {
        Child c;
        spawn(c, {HOTLINE_BIN, "fixes", "apply", "early-demux-off", "--netns", ns.name(), "--journal-dir", journal});
        std::string seen;
        ASSERT_TRUE(c.wait_for("holding", &seen)) << seen;
        EXPECT_NE(seen.find("applied net.ipv4.ip_early_demux in netns " + ns.name() + ": 1 -> 0"), std::string::npos)
            << seen;
        EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "0");
        kill(c.pid, SIGKILL);
        int st = c.reap();
        ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
    // Killed: nothing ran on the way out, so the change is still there.
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "0");
    EXPECT_TRUE(std::filesystem::exists(journal + "/journal.json"));
    int rc = 0;
    std::string out = run_capture(std::string(HOTLINE_BIN) + " restore --journal-dir " + journal, &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("net.ipv4.ip_early_demux in netns " + ns.name() + ": restored (0 -> 1)"), std::string::npos)
        << out;
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", ns.ref()), "1");
    EXPECT_FALSE(std::filesystem::exists(journal + "/journal.json"));
    out = run_capture(std::string(HOTLINE_BIN) + " restore --journal-dir " + journal, &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_NE(out.find("nothing to restore"), std::string::npos) << out;
}

TEST_F(FixHost, TwoTermSignalsStillRestore) {
    TestNetns ns;
    ASSERT_TRUE(ns.ok());
    TempDir jdir;
    std::string journal = jdir / "journal";
    Child c;
    spawn(c, {HOTLINE_BIN, "fixes", "apply", "early-demux-off", "--netns", ns.name(), "--journal-dir", journal});
    std::string seen;
    ASSERT_TRUE(c.wait_for("holding", &seen)) << seen;
    kill(c.pid, SIGTERM);
    kill(c.pid, SIGTERM);
    kill(c.pid, SIGINT);
    int st = c.reap();
    ASSERT_TRUE(WIFEXITED(st)) << "died by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(WEXITSTATUS(st), 0);
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", ns.ref()), "1");
    EXPECT_FALSE(std::filesystem::exists(journal + "/journal.json"));
}

TEST_F(FixHost, AReadOnlyKnobIsCouldNotApply) {
    // kernel.ostype is mode 0444: even root's write is refused (EACCES).
    std::string before = knob("kernel/ostype");
    TempDir jdir;
    JournalOptions jo;
    jo.dir = jdir / "journal";
    jo.allow_global = true;
    FsKnobIo io;
    auto j = Journal::open(jo, io);
    ASSERT_TRUE(j);
    KnobWrite w;
    w.name = "kernel.ostype";
    w.value = "NotLinux";
    w.scope = Scope::kGlobal;
    w.fix = "host-test";
    auto r = (*j)->apply(w);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->status, ApplyStatus::kCouldNotApply);
    EXPECT_EQ(r->err, EACCES) << r->reason;
    EXPECT_EQ(knob("kernel/ostype"), before);
    EXPECT_FALSE(std::filesystem::exists(jo.dir + "/journal.json"));
}

TEST_F(FixHost, AReadOnlyProcSysIsCouldNotApply) {
    // What a container with a read-only /proc/sys sees: EROFS, in a private
    // mount namespace of a child so the host's mounts never change.
    TestNetns ns;
    ASSERT_TRUE(ns.ok());
    TempDir jdir;
    std::string journal = jdir / "journal";
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
            mount("/proc/sys", "/proc/sys", nullptr, MS_BIND, nullptr) ||
            mount(nullptr, "/proc/sys", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr))
            _exit(20);
        JournalOptions jo;
        jo.dir = journal;
        FsKnobIo io;
        auto j = Journal::open(jo, io);
        if (!j) _exit(21);
        KnobWrite w;
        w.name = "net.ipv4.ip_early_demux";
        w.value = "0";
        w.scope = Scope::kNetns;
        w.netns = NetnsRef{ns.name(), 0};
        auto r = (*j)->apply(w);
        if (!r) _exit(22);
        if (r->status != ApplyStatus::kCouldNotApply) _exit(23);
        if (r->err != EROFS) _exit(24);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "20 setup, 21 journal, 22 error, 23 not could-not-apply, 24 not EROFS";
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
}

TEST_F(FixHost, TcpLowLatencyIsNotApplicableHereAndSaysWhy) {
    auto ks = Kallsyms::load();
    if (ks && ks->contains("tcp_prequeue")) GTEST_SKIP() << "this kernel still has tcp_prequeue";
    TempDir jdir;
    int rc = 0;
    // No --allow-global: even a wrong applicability answer could not change the machine.
    std::string out = run_capture(std::string(HOTLINE_BIN) + " fixes apply tcp-low-latency --journal-dir " +
                                      (jdir / "journal"),
                                  &rc);
    EXPECT_EQ(rc, 3) << out;
    EXPECT_NE(out.find("NOT APPLICABLE"), std::string::npos) << out;
    EXPECT_NE(out.find("tcp_prequeue does not exist on this kernel"), std::string::npos) << out;
    out = run_capture(std::string(HOTLINE_BIN) + " fixes show tcp-low-latency --json", &rc);
    EXPECT_EQ(rc, 0);
    auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["here"]["applicable"], false);
}

TEST_F(FixHost, GlobalChangesNeedAllowGlobal) {
    TempDir jdir;
    int rc = 0;
    // early-demux-off without --netns would change the host's namespace: refused.
    std::string out = run_capture(std::string(HOTLINE_BIN) + " fixes apply early-demux-off --journal-dir " +
                                      (jdir / "journal"),
                                  &rc);
    EXPECT_EQ(rc, hotline::kExitUsage) << out;
    EXPECT_NE(out.find("--allow-global"), std::string::npos) << out;
}

TEST_F(FixHost, ApplyWithADurationRestoresOnItsOwn) {
    TestNetns ns;
    ASSERT_TRUE(ns.ok());
    TempDir jdir;
    std::string journal = jdir / "journal";
    Child c;
    spawn(c, {HOTLINE_BIN, "fixes", "apply", "early-demux-off", "--netns", ns.name(), "-d", "1s", "--journal-dir",
              journal});
    std::string seen;
    ASSERT_TRUE(c.wait_for("restoring in 1s", &seen)) << seen;
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "0") << "held while the duration runs";
    // No signal: the duration alone ends the hold.
    int st = c.reap();
    ASSERT_TRUE(WIFEXITED(st)) << "died by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(WEXITSTATUS(st), 0);
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", ns.ref()), "1");
    EXPECT_FALSE(std::filesystem::exists(journal + "/journal.json"));
    int rc = 0;
    std::string out = run_capture(std::string(HOTLINE_BIN) + " fixes apply early-demux-off --netns " + ns.name() +
                                      " -d 0s --journal-dir " + journal,
                                  &rc);
    EXPECT_EQ(rc, hotline::kExitUsage) << out;
    EXPECT_NE(out.find("--duration must be positive"), std::string::npos) << out;
}

// The systemd unit's ExecStopPost runs a bare `hotline restore`: it must find
// what a killed `fixes apply` left in the default journal directory.
TEST_F(FixHost, RestoreWithoutJournalDirUsesTheDefault) {
    TestNetns ns;
    ASSERT_TRUE(ns.ok());
    const std::string journal = std::string(kDefaultJournalDir) + "/journal.json";
    int rc = 0;
    std::string out = run_capture(std::string(HOTLINE_BIN) + " restore", &rc);
    ASSERT_EQ(rc, 0) << "a journal left in " << kDefaultJournalDir << " could not be restored first:\n" << out;
    {
        Child c;
        spawn(c, {HOTLINE_BIN, "fixes", "apply", "early-demux-off", "--netns", ns.name()});
        std::string seen;
        ASSERT_TRUE(c.wait_for("holding", &seen)) << seen;
        EXPECT_TRUE(std::filesystem::exists(journal)) << "apply did not journal in " << kDefaultJournalDir;
        kill(c.pid, SIGKILL);
        c.reap();
    }
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "0");
    out = run_capture(std::string(HOTLINE_BIN) + " restore", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("net.ipv4.ip_early_demux in netns " + ns.name() + ": restored (0 -> 1)"), std::string::npos)
        << out;
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", ns.ref()), "1");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", ns.ref()), "1");
    EXPECT_FALSE(std::filesystem::exists(journal));
}
