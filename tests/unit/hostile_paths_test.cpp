// SPDX-License-Identifier: Apache-2.0
// Output files, input files and the journal directory against hostile or
// careless paths: device nodes, FIFOs, symlinks, read-only files, directories,
// and files too large to be what they claim.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "fix_test_util.hpp"
#include "hotline/fix/journal.hpp"
#include "hotline/base/json_limits.hpp"
#include "hotline/base/util.hpp"

using namespace hotline;
using hotline::test::TempDir;

namespace {

bool is_regular_no_follow(const std::string& p) {
    struct stat st{};
    return lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

TEST(OutputFile, ACharacterDeviceIsRefusedAndLeftAlone) {
    if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
    TempDir d;
    std::string dev = d / "null";
    ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    auto st = write_file_atomic(dev, "data");
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().what.find("not a regular file"), std::string::npos) << st.error().message();
    struct stat sb{};
    ASSERT_EQ(lstat(dev.c_str(), &sb), 0);
    EXPECT_TRUE(S_ISCHR(sb.st_mode));
}

TEST(OutputFile, AFifoIsRefusedAndLeftAlone) {
    TempDir d;
    std::string fifo = d / "fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_FALSE(write_file_atomic(fifo, "data"));
    struct stat sb{};
    ASSERT_EQ(lstat(fifo.c_str(), &sb), 0);
    EXPECT_TRUE(S_ISFIFO(sb.st_mode));
}

TEST(OutputFile, ASymlinkIsRefusedAndNeitherItNorItsTargetChanges) {
    TempDir d;
    d.write("target", "precious\n");
    std::string link = d / "link";
    ASSERT_EQ(symlink((d / "target").c_str(), link.c_str()), 0);
    auto st = write_file_atomic(link, "data");
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().what.find("symbolic link"), std::string::npos) << st.error().message();
    struct stat sb{};
    ASSERT_EQ(lstat(link.c_str(), &sb), 0);
    EXPECT_TRUE(S_ISLNK(sb.st_mode));
    EXPECT_EQ(d.read("target"), "precious\n");
}

TEST(OutputFile, ADanglingSymlinkIsRefused) {
    TempDir d;
    std::string link = d / "dangling";
    ASSERT_EQ(symlink((d / "nowhere").c_str(), link.c_str()), 0);
    EXPECT_FALSE(write_file_atomic(link, "data"));
    EXPECT_FALSE(d.exists("nowhere"));
}

TEST(OutputFile, AReadOnlyFileIsRefused) {
    TempDir d;
    d.write("ro", "keep\n");
    ASSERT_EQ(chmod((d / "ro").c_str(), 0444), 0);
    auto st = write_file_atomic(d / "ro", "data");
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().what.find("read-only"), std::string::npos) << st.error().message();
    EXPECT_EQ(d.read("ro"), "keep\n");
}

TEST(OutputFile, ADirectoryIsRefused) {
    TempDir d;
    std::filesystem::create_directories(d / "dir");
    EXPECT_FALSE(write_file_atomic(d / "dir", "data"));
    EXPECT_TRUE(std::filesystem::is_directory(d / "dir"));
}

TEST(OutputFile, ARegularFileIsReplacedAndNoTempFileIsLeft) {
    TempDir d;
    d.write("out.json", "old\n");
    ASSERT_TRUE(write_file_atomic(d / "out.json", "new\n"));
    EXPECT_EQ(d.read("out.json"), "new\n");
    EXPECT_TRUE(is_regular_no_follow(d / "out.json"));
    int n = 0;
    for (auto& e : std::filesystem::directory_iterator(d.path())) n += e.path().filename() != "out.json";
    EXPECT_EQ(n, 0);
}

TEST(OutputFile, APlantedSymlinkAtTheOldTempNameIsNotFollowed) {
    TempDir d;
    d.write("victim", "precious\n");
    std::string planted = d / ("out.json.tmp." + std::to_string(getpid()));
    ASSERT_EQ(symlink((d / "victim").c_str(), planted.c_str()), 0);
    ASSERT_TRUE(write_file_atomic(d / "out.json", "new\n"));
    EXPECT_EQ(d.read("victim"), "precious\n");
}

TEST(OutputFile, AMissingDirectoryIsFoundBeforeAnyWork) {
    TempDir d;
    auto st = check_output_path(d / "missing/out.json");
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message().find("missing"), std::string::npos);
    EXPECT_TRUE(check_output_path(d / "fine.json"));
}

TEST(OutputFile, DashIsRefusedNotWrittenAsAFileNamedDash) {
    auto dash = check_output_path("-");
    ASSERT_FALSE(dash);
    EXPECT_NE(dash.error().message().find("standard output"), std::string::npos) << dash.error().message();
    EXPECT_FALSE(write_file_atomic("-", "x")) << "a file named '-' written in the working directory";
}

TEST(InputFile, AFifoIsRefusedWithoutBlocking) {
    TempDir d;
    std::string fifo = d / "fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    auto r = read_file(fifo);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("not a regular file"), std::string::npos) << r.error().message();
}

TEST(InputFile, ADirectoryIsRefused) {
    TempDir d;
    auto r = read_file(d.path());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what.find("directory"), std::string::npos) << r.error().message();
}

TEST(InputFile, AnEndlessDeviceIsRefused) {
    auto r = read_file("/dev/zero");
    EXPECT_FALSE(r);
}

TEST(InputFile, AFileOverTheLimitIsRefusedWithTheLimitNamed) {
    TempDir d;
    d.write("big", std::string(2000, 'x'));
    auto r = read_file(d / "big", 1000);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("1000"), std::string::npos) << r.error().message();
    EXPECT_TRUE(read_file(d / "big", 4000));
}

namespace {

JournalOptions journal_in(const std::string& dir, const TempDir& d) {
    d.write("proc/sys/net/ipv4/ip_early_demux", "1\n");
    d.write("boot_id", "aaaa-1111\n");
    JournalOptions o;
    o.dir = dir;
    o.machine_lock = d / "machine.lock";
    o.roots.proc_sys = d / "proc/sys";
    o.roots.boot_id = d / "boot_id";
    o.roots.netns_dir = d / "netns";
    o.allow_global = true;
    o.owner = "unit test";
    return o;
}

}  // namespace

TEST(JournalDir, AnExistingSharedDirectoryIsRefusedAndNotChmodded) {
    TempDir d;
    std::string shared = d / "shared";
    std::filesystem::create_directories(shared);
    ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
    auto lock = RunLock::acquire(shared);
    EXPECT_FALSE(lock);
    struct stat sb{};
    ASSERT_EQ(stat(shared.c_str(), &sb), 0);
    EXPECT_EQ(sb.st_mode & 07777, 01777u);
    EXPECT_FALSE(d.exists("shared/lock"));
}

TEST(JournalDir, ASymlinkedDirectoryIsNotFollowed) {
    TempDir d;
    std::filesystem::create_directories(d / "real");
    ASSERT_EQ(chmod((d / "real").c_str(), 0755), 0);
    ASSERT_EQ(symlink((d / "real").c_str(), (d / "link").c_str()), 0);
    EXPECT_FALSE(RunLock::acquire(d / "link"));
    EXPECT_FALSE(d.exists("real/lock"));
    struct stat sb{};
    ASSERT_EQ(stat((d / "real").c_str(), &sb), 0);
    EXPECT_EQ(sb.st_mode & 07777, 0755u);
}

TEST(JournalDir, ANewDirectoryIsCreatedPrivate) {
    TempDir d;
    ASSERT_TRUE(RunLock::acquire(d / "new/journal"));
    struct stat sb{};
    ASSERT_EQ(stat((d / "new/journal").c_str(), &sb), 0);
    EXPECT_EQ(sb.st_mode & 07777, 0700u);
}

TEST(JournalDir, APlantedLockSymlinkIsNotFollowed) {
    TempDir d;
    std::string jdir = d / "journal";
    std::filesystem::create_directories(jdir);
    ASSERT_EQ(chmod(jdir.c_str(), 0700), 0);
    d.write("victim", "precious\n");
    ASSERT_EQ(symlink((d / "victim").c_str(), (jdir + "/lock").c_str()), 0);
    EXPECT_FALSE(RunLock::acquire(jdir));
    EXPECT_EQ(d.read("victim"), "precious\n");
}

TEST(JournalDir, APlantedJournalSymlinkIsNeitherReadNorReplaced) {
    TempDir d;
    std::string jdir = d / "journal";
    std::filesystem::create_directories(jdir);
    ASSERT_EQ(chmod(jdir.c_str(), 0700), 0);
    d.write("victim", "precious\n");
    ASSERT_EQ(symlink((d / "victim").c_str(), (jdir + "/journal.json").c_str()), 0);
    auto o = journal_in(jdir, d);
    FsKnobIo io(o.roots);
    auto j = Journal::open(o, io);
    EXPECT_FALSE(j);
    EXPECT_EQ(d.read("victim"), "precious\n");
}

TEST(JsonLimits, DeepNestingIsRefusedWithoutRecursion) {
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    auto r = parse_json_limited(deep);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find(std::to_string(kMaxJsonDepth)), std::string::npos) << r.error().message();
    std::string obj;
    for (int i = 0; i < 70000; ++i) obj += "{\"a\":";
    obj += "1" + std::string(70000, '}');
    EXPECT_FALSE(parse_json_limited(obj));
    EXPECT_TRUE(parse_json_limited("{\"a\":[[[1]]]}"));
}

TEST(JsonLimits, TypedFieldReadsNeverThrowNorOverflow) {
    auto j = nlohmann::json::parse(
        R"({"s":"x","n":7,"neg":-2,"big":18446744073709551615,"f":1e300,"b":true,"o":{}})");
    EXPECT_EQ(string_or(j, "s", "d"), "x");
    EXPECT_EQ(string_or(j, "n", "d"), "d");
    EXPECT_EQ(string_or(nlohmann::json::array(), "s", "d"), "d");
    EXPECT_TRUE(bool_or(j, "b", false));
    EXPECT_FALSE(bool_or(j, "s", false));
    EXPECT_EQ(int_field(j, "n"), 7);
    EXPECT_EQ(int_field(j, "neg"), -2);
    EXPECT_EQ(int_field(j, "big"), std::nullopt);
    EXPECT_EQ(int_field(j, "f"), std::nullopt);
    EXPECT_EQ(int_field(j, "missing"), std::nullopt);
    EXPECT_EQ(uint_field(j, "big"), UINT64_MAX);
    EXPECT_EQ(uint_field(j, "neg"), std::nullopt);
    EXPECT_EQ(uint_field(j, "o"), std::nullopt);
}

TEST(JsonLimits, SyntaxErrorsAreErrorsNotExceptions) {
    for (const char* s : {"", "{", "[1,", "{\"a\":}", "\xff", "nul"}) EXPECT_FALSE(parse_json_limited(s)) << s;
}
