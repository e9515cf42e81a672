// SPDX-License-Identifier: Apache-2.0
// ENOSPC, EIO and EROFS at each write, fsync and rename of output files and of
// the knob journal, and ENOSPC, EIO, EROFS and EACCES at the creation of their
// files, injected by tests/lib/faultfs.cpp (linked into this binary):
// the operation fails naming the file and the errno, the previous file stays
// whole, no temporary file is left, and a changed knob is always journaled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "fix_test_util.hpp"
#include "hotline/fix/journal.hpp"
#include "hotline/base/util.hpp"

extern "C" void hl_fault_set(const char* spec);
extern "C" long hl_fault_hits();

using namespace hotline;
using hotline::test::TempDir;

namespace {

const char* const kOps[] = {"write", "fsync", "rename"};
const char* const kErrnos[] = {"ENOSPC", "EIO", "EROFS"};
// Creating a file also meets a directory the caller may not write.
const char* const kCreateErrnos[] = {"ENOSPC", "EIO", "EROFS", "EACCES"};

struct Fault {
    Fault(const std::string& op, const std::string& pattern, int nth, const std::string& err) {
        hl_fault_set((op + ":" + pattern + ":" + std::to_string(nth) + ":" + err).c_str());
    }
    ~Fault() { hl_fault_set(""); }
};

int errno_from_name(const std::string& name) {
    for (int e = 1; e < 200; ++e)
        if (const char* n = strerrorname_np(e); n && name == n) return e;
    return 0;
}

std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST(FaultInjection, TheInterposerFailsOnlyTheNthMatchingCall) {
    TempDir d;
    {
        Fault f("write", "b.txt", 2, "EIO");
        EXPECT_TRUE(write_file_atomic(d / "a.txt", "a"));  // other paths pass
        EXPECT_TRUE(write_file_atomic(d / "b.txt", "1"));  // first match passes
        auto st = write_file_atomic(d / "b.txt", "2");
        ASSERT_FALSE(st);
        EXPECT_EQ(st.error().err, EIO);
        EXPECT_EQ(hl_fault_hits(), 1);
    }
    EXPECT_TRUE(write_file_atomic(d / "b.txt", "3"));  // disarmed
    EXPECT_EQ(d.read("b.txt"), "3");
}

namespace {

// One fault while replacing d/out.json: the error names the file and the
// errno, and out.json still holds its previous contents with nothing beside it.
template <class Error>
std::string expect_previous_out_json_kept(const Error& e, TempDir& d, const char* err) {
    EXPECT_EQ(hl_fault_hits(), 1);
    EXPECT_EQ(e.err, errno_from_name(err));
    std::string msg = e.message();
    EXPECT_NE(msg.find(d / "out.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(err), std::string::npos) << msg;
    EXPECT_EQ(d.read("out.json"), "previous\n");
    EXPECT_EQ(entries(d.path()), std::vector<std::string>{"out.json"});
    return msg;
}

}  // namespace

TEST(FaultInjection, AnOutputFileFaultLeavesThePreviousFileAndNoTemporary) {
    for (const char* op : kOps)
        for (const char* err : kErrnos) {
            SCOPED_TRACE(std::string(op) + " " + err);
            TempDir d;
            d.write("out.json", "previous\n");
            Fault f(op, "out.json", 1, err);
            auto st = write_file_atomic(d / "out.json", "new contents\n");
            ASSERT_FALSE(st);
            expect_previous_out_json_kept(st.error(), d, err);
        }
}

TEST(FaultInjection, ANewOutputFileFaultLeavesNothingBehind) {
    for (const char* op : kOps) {
        SCOPED_TRACE(op);
        TempDir d;
        Fault f(op, "new.json", 1, "ENOSPC");
        ASSERT_FALSE(write_file_atomic(d / "new.json", "x"));
        EXPECT_TRUE(entries(d.path()).empty());
    }
}

TEST(FaultInjection, TheInterposerFailsOnlyCallsThatCreate) {
    TempDir d;
    d.write("kept.txt", "kept\n");
    Fault f("create", "kept.txt", 0, "EROFS");
    auto kept = read_file(d / "kept.txt");  // opening to read is no creation
    ASSERT_TRUE(kept) << kept.error().message();
    EXPECT_EQ(*kept, "kept\n");
    EXPECT_EQ(hl_fault_hits(), 0);
    EXPECT_FALSE(write_file_atomic(d / "kept.txt", "new\n"));  // its temporary file is created by mkostemp
    EXPECT_EQ(hl_fault_hits(), 1);
}

// The temporary file cannot be created (a full or read-only file system, a
// directory this user may not write): the error names the file and the errno,
// and the previous file is untouched.
TEST(FaultInjection, AnOutputFileCreationFaultLeavesThePreviousFileAndNothingElse) {
    for (const char* err : kCreateErrnos) {
        SCOPED_TRACE(err);
        TempDir d;
        d.write("out.json", "previous\n");
        Fault f("create", "out.json", 1, err);
        auto st = write_file_atomic(d / "out.json", "new contents\n");
        ASSERT_FALSE(st);
        std::string msg = expect_previous_out_json_kept(st.error(), d, err);
        // The hint fits the cause: a full disk is not a permission problem.
        const std::map<std::string, std::string> hint = {{"ENOSPC", "free space"}, {"EROFS", "read-only"},
                                                         {"EACCES", "writable"}};
        if (hint.count(err)) {
            EXPECT_NE(msg.find(hint.at(err)), std::string::npos) << msg;
        }
        if (std::string(err) != "EACCES") {
            EXPECT_EQ(msg.find("writable"), std::string::npos) << msg;
        }
    }
}

TEST(FaultInjection, ANewOutputFileCreationFaultLeavesNothingBehind) {
    for (const char* err : kCreateErrnos) {
        SCOPED_TRACE(err);
        TempDir d;
        Fault f("create", "new.json", 1, err);
        auto st = write_file_atomic(d / "new.json", "x");
        ASSERT_FALSE(st);
        EXPECT_NE(st.error().message().find(d / "new.json"), std::string::npos) << st.error().message();
        EXPECT_TRUE(entries(d.path()).empty());
    }
}

// The directory is synced after the rename: its failure is reported, and the
// file is then the new one, whole.
TEST(FaultInjection, AFailedDirectorySyncIsReportedAfterACompleteReplace) {
    TempDir d;
    std::filesystem::create_directory(d / "sub");
    std::string out = d / "sub/out.json";
    std::ofstream(out) << "previous\n";
    Fault f("fsync", "/sub", 2, "EIO");  // the first fsync is the temp file's (under /sub too)
    auto st = write_file_atomic(out, "new\n");
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message().find(d / "sub"), std::string::npos) << st.error().message();
    EXPECT_EQ(d.read("sub/out.json"), "new\n");
    EXPECT_EQ(entries(d / "sub"), std::vector<std::string>{"out.json"});
}

namespace {

struct JournalFixture : hotline::test::JournalSandbox {
    JournalFixture() : JournalSandbox("fault test") {}
    // The knobs the journal on disk records as changed.
    std::vector<std::string> journaled() const {
        std::vector<std::string> out;
        if (!d.exists("journal/journal.json")) return out;
        auto doc = nlohmann::json::parse(d.read("journal/journal.json"));
        for (auto& e : doc["entries"]) out.push_back(e["name"].get<std::string>());
        return out;
    }
    std::vector<std::string> journal_dir() const {
        auto all = entries(d / "journal");
        std::erase(all, "lock");
        return all;
    }
};

KnobWrite demux_off(const std::string& name) {
    KnobWrite w;
    w.kind = KnobKind::kSysctl;
    w.name = name;
    w.value = "0";
    w.scope = Scope::kGlobal;
    w.fix = "fault-test";
    return w;
}

}  // namespace

// The intent cannot be journaled: the knob is not touched, and the knob
// changed before stays journaled.
TEST(FaultInjection, AJournalFaultAtApplyLeavesTheKnobAndKeepsTheEarlierRecord) {
    for (const char* op : kOps)
        for (const char* err : kErrnos) {
            SCOPED_TRACE(std::string(op) + " " + err);
            JournalFixture f;
            FsKnobIo io(f.roots);
            auto j = Journal::open(f.opts, io);
            ASSERT_TRUE(j) << j.error().message();
            ASSERT_TRUE((*j)->apply(demux_off("net.ipv4.ip_early_demux")));
            {
                Fault fault(op, "journal.json", 1, err);
                auto r = (*j)->apply(demux_off("net.ipv4.tcp_early_demux"));
                ASSERT_FALSE(r);
                EXPECT_EQ(hl_fault_hits(), 1);
                std::string msg = r.error().message();
                EXPECT_NE(msg.find("journal.json"), std::string::npos) << msg;
                EXPECT_NE(msg.find(err), std::string::npos) << msg;
            }
            EXPECT_EQ(f.val("net/ipv4/tcp_early_demux"), "1");
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "0");
            EXPECT_EQ(f.journaled(), std::vector<std::string>{"net.ipv4.ip_early_demux"});
            EXPECT_EQ(f.journal_dir(), std::vector<std::string>{"journal.json"});
            (*j)->restore();
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
        }
}

// The journal file cannot be created, for the first change or a later one:
// the knob is not touched, an earlier record stays, and no file is left.
TEST(FaultInjection, AJournalCreationFaultAtApplyLeavesTheKnobAndKeepsTheEarlierRecord) {
    for (const char* err : kCreateErrnos)
        for (bool earlier : {false, true}) {
            SCOPED_TRACE(std::string(err) + (earlier ? " after an earlier change" : " at the first change"));
            JournalFixture f;
            FsKnobIo io(f.roots);
            auto j = Journal::open(f.opts, io);
            ASSERT_TRUE(j) << j.error().message();
            if (earlier) {
                ASSERT_TRUE((*j)->apply(demux_off("net.ipv4.ip_early_demux")));
            }
            std::string before = earlier ? f.d.read("journal/journal.json") : "";
            {
                Fault fault("create", "journal.json", 1, err);
                auto r = (*j)->apply(demux_off("net.ipv4.tcp_early_demux"));
                ASSERT_FALSE(r);
                EXPECT_EQ(hl_fault_hits(), 1);
                std::string msg = r.error().message();
                EXPECT_NE(msg.find(f.d / "journal/journal.json"), std::string::npos) << msg;
                EXPECT_NE(msg.find(err), std::string::npos) << msg;
            }
            EXPECT_EQ(f.val("net/ipv4/tcp_early_demux"), "1");
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), earlier ? "0" : "1");
            if (earlier) {
                EXPECT_EQ(f.d.read("journal/journal.json"), before);
                EXPECT_EQ(f.journal_dir(), std::vector<std::string>{"journal.json"});
            } else {
                EXPECT_TRUE(f.journal_dir().empty());
            }
            (*j)->restore();
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
        }
}

// The run lock cannot be created: nothing is applied, the error names the
// lock file and the errno, and no journal file appears.
TEST(FaultInjection, ALockFileCreationFaultRefusesTheRunAndNamesTheFile) {
    for (const char* err : kCreateErrnos)
        for (const char* lock : {"machine.lock", "journal/lock"}) {
            SCOPED_TRACE(std::string(err) + " " + lock);
            JournalFixture f;
            FsKnobIo io(f.roots);
            Fault fault("create", lock, 1, err);
            auto j = Journal::open(f.opts, io);
            ASSERT_FALSE(j);
            EXPECT_EQ(hl_fault_hits(), 1);
            std::string msg = j.error().message();
            EXPECT_NE(msg.find(f.d / lock), std::string::npos) << msg;
            EXPECT_NE(msg.find(err), std::string::npos) << msg;
            EXPECT_FALSE(f.d.exists(lock));
            EXPECT_FALSE(f.journal_exists());
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
        }
}

// The knobs are put back even when the journal cannot be rewritten; what is
// left on disk only names knobs already at their original value, which the
// next start settles without touching them.
TEST(FaultInjection, AJournalFaultAtRestoreStillRestoresAndTheNextStartSettles) {
    for (const char* op : kOps)
        for (const char* err : kErrnos) {
            SCOPED_TRACE(std::string(op) + " " + err);
            JournalFixture f;
            FsKnobIo io(f.roots);
            {
                auto j = Journal::open(f.opts, io);
                ASSERT_TRUE(j);
                ASSERT_TRUE((*j)->apply(demux_off("net.ipv4.ip_early_demux")));
                ASSERT_TRUE((*j)->apply(demux_off("net.ipv4.tcp_early_demux")));
                // Removing the journal at the end is an unlink and a directory sync.
                Fault fault(op, std::string(op) == "fsync" ? "/journal" : "journal.json", 0, err);
                (*j)->restore();
            }
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
            EXPECT_EQ(f.val("net/ipv4/tcp_early_demux"), "1");
            for (auto& name : f.journal_dir()) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
            auto again = Journal::open(f.opts, io);
            ASSERT_TRUE(again) << again.error().message();
            EXPECT_TRUE((*again)->recovered().clean());
            EXPECT_EQ(f.val("net/ipv4/ip_early_demux"), "1");
        }
}

// Whatever step of the second apply fails, every knob that is changed on the
// fixture is in the journal on disk at that moment.
TEST(FaultInjection, EveryChangedKnobIsJournaledWhicheverJournalCallFails) {
    for (const char* op : kOps)
        for (int nth = 1; nth <= 3; ++nth) {
            SCOPED_TRACE(std::string(op) + " #" + std::to_string(nth));
            JournalFixture f;
            FsKnobIo io(f.roots);
            auto j = Journal::open(f.opts, io);
            ASSERT_TRUE(j);
            Fault fault(op, "journal", nth, "EIO");
            for (auto* name : {"net.ipv4.ip_early_demux", "net.ipv4.tcp_early_demux"}) {
                (void)(*j)->apply(demux_off(name));
                auto on_disk = f.journaled();
                for (auto* knob : {"ip_early_demux", "tcp_early_demux"}) {
                    if (f.val(std::string("net/ipv4/") + knob) != "0") continue;
                    EXPECT_NE(std::find(on_disk.begin(), on_disk.end(), std::string("net.ipv4.") + knob), on_disk.end())
                        << knob << " changed but not journaled";
                }
            }
        }
}
