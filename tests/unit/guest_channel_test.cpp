// SPDX-License-Identifier: Apache-2.0
// `hotline vm`'s host side against a hostile guest: what comes back over the
// result channel is typed, bounded and written only where the host says.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "files.hpp"
#include "guest_outputs.hpp"
#include "hotline/base/base64.hpp"
#include "hotline/vm/guest_channel.hpp"
#include "hotline/vm/guest_run.hpp"
#include "run_dir.hpp"

using namespace hotline;
using namespace hotline::vm;
using testlib::TempDir;
namespace fs = std::filesystem;

namespace {

std::string base64(const std::string& bytes) {
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
        unsigned v = 0;
        for (std::size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
        for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[v >> (18 - 6 * k) & 63] : '=';
    }
    return out;
}

// A payload's body as guest-init sends it: base64 lines of 76, then HLVM-EOF.
std::string body(const std::string& bytes) {
    const std::string b64 = base64(bytes);
    std::string out;
    for (std::size_t i = 0; i < b64.size(); i += 76) out += b64.substr(i, 76) + "\n";
    return out + "HLVM-EOF\n";
}

std::string payload(const std::string& header, const std::string& bytes) {
    return header + " " + std::to_string(bytes.size()) + "\n" + body(bytes);
}

// `hotline vm -- probe` on the default shape: a request every check accepts.
GuestRequest probe_request() {
    GuestRequest r;
    r.kernel = "debian:6.12";
    r.nodes = 2;
    r.cpus = 4;
    r.memory = "1G";
    r.timeout_s = 60;
    r.args = {"probe"};
    return r;
}

// Every regular file under `dir`, relative to it.
std::set<std::string> files_under(const std::string& dir) {
    std::set<std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
    return out;
}

}  // namespace

TEST(Base64, DecodesCanonicalTextAndRefusesTheRest) {
    EXPECT_EQ(base64_decode("aGVsbG8="), std::optional<std::string>("hello"));
    EXPECT_EQ(base64_decode("aGk="), std::optional<std::string>("hi"));
    EXPECT_EQ(base64_decode("YWJj"), std::optional<std::string>("abc"));
    EXPECT_EQ(base64_decode(""), std::optional<std::string>(""));
    EXPECT_EQ(base64_decode("AP8="), std::optional<std::string>(std::string("\0\xff", 2)));
    for (const char* bad : {"aGk", "a=Gk", "aG=k", "a===", "aGk*", "aGVsbG8=aGk="})
        EXPECT_FALSE(base64_decode(bad)) << bad;
}

TEST(GuestChannel, DecodesThePlannedTestsResultsOutputAndFiles) {
    std::string text = "HLVM-HELLO release=6.12.48+deb13-amd64 uptime=3.21\r\n"
                       "HLVM-START cmd timeout=60\n" +
                       payload("HLVM-OUTPUT cmd", "probe output\n") +
                       payload("HLVM-FILE cmd record.json", std::string(1000, 'x') + "\n") +
                       "HLVM-RESULT cmd rc=3 secs=12.50\nHLVM-DONE uptime=20.5\n";
    GuestChannel ch = decode_channel(text, {"cmd"});
    EXPECT_EQ(ch.release, "6.12.48+deb13-amd64");
    EXPECT_EQ(ch.boot_uptime, 3.21);
    EXPECT_EQ(ch.done_markers, 1);
    ASSERT_EQ(ch.tests.count("cmd"), 1u);
    const GuestTest& t = ch.tests.at("cmd");
    EXPECT_EQ(t.rc, 3);
    EXPECT_EQ(t.secs, 12.5);
    EXPECT_EQ(t.output, std::optional<std::string>("probe output\n"));
    EXPECT_EQ(t.files.at("record.json").size(), 1001u);
    EXPECT_TRUE(t.transfer_errors.empty());
    EXPECT_TRUE(ch.ignored.empty()) << ch.ignored.front();
}

TEST(GuestChannel, AGuestCannotNameAHostPath) {
    TempDir d;
    fs::create_directory(d / "out");
    std::string text = "HLVM-RESULT cmd ../../victim=x rc=0 secs=1\n"
                       "HLVM-RESULT ../../escape rc=0\n" +
                       payload("HLVM-FILE cmd ../../victim", "pwned") + payload("HLVM-FILE cmd a/b", "pwned") +
                       payload("HLVM-FILE other x", "pwned") + payload("HLVM-OUTPUT ../cmd", "pwned") +
                       "HLVM-HELLO release=$(id)\n";
    GuestChannel ch = decode_channel(text, {"cmd"});
    ASSERT_TRUE(write_channel_results(ch, d / "out"));
    EXPECT_EQ(files_under(d.path()), (std::set<std::string>{"out/cmd/rc", "out/cmd/secs", "out/cmd/transfer-errors"}));
    EXPECT_EQ(ch.tests.at("cmd").transfer_errors.size(), 2u);  // the two file names
    EXPECT_TRUE(ch.release.empty());
    EXPECT_FALSE(ch.ignored.empty());
}

TEST(GuestChannel, SizesAreCappedAndCheckedAgainstWhatWasAnnounced) {
    ChannelLimits limits;
    limits.max_file_bytes = 100;
    limits.max_total_bytes = 150;
    limits.max_files_per_test = 2;
    std::string oversized = "HLVM-FILE t big 101\n" + body(std::string(101, 'a'));
    std::string longer = "HLVM-FILE t longer 3\n" + body(std::string(60, 'b'));
    std::string text = oversized + longer + payload("HLVM-FILE t ok1", std::string(90, 'c')) +
                       payload("HLVM-FILE t over-total", std::string(90, 'd')) + "HLVM-FILE t cut 5\naGVsbG8=\n" +
                       payload("HLVM-FILE t late", "x") + payload("HLVM-FILE t four", "y");
    const GuestChannel ch = decode_channel(text, {"t"}, limits);
    const GuestTest& t = ch.tests.at("t");
    EXPECT_EQ(t.files.size(), 2u);
    EXPECT_TRUE(t.files.count("ok1"));
    EXPECT_TRUE(t.files.count("late"));
    std::string errors;
    for (auto& e : t.transfer_errors) errors += e + "\n";
    EXPECT_NE(errors.find("big: announced 101 bytes, more than the limit of 100"), std::string::npos) << errors;
    EXPECT_NE(errors.find("longer: more data than the 3 bytes announced"), std::string::npos) << errors;
    EXPECT_NE(errors.find("over-total: past the limit of 150 bytes"), std::string::npos) << errors;
    EXPECT_NE(errors.find("cut: no HLVM-EOF"), std::string::npos) << errors;
    EXPECT_NE(errors.find("four: more than 2 files"), std::string::npos) << errors;
}

TEST(GuestChannel, ResultFieldsAreTyped) {
    std::string text = "HLVM-RESULT t rc=300 secs=nan\nHLVM-RESULT u rc=-1 secs=-2\nHLVM-RESULT v rc=0x1 secs=1e400\n";
    GuestChannel ch = decode_channel(text, {"t", "u", "v"});
    for (const char* name : {"t", "u", "v"}) {
        EXPECT_FALSE(ch.tests.at(name).rc) << name;
        EXPECT_FALSE(ch.tests.at(name).secs) << name;
    }
}

TEST(GuestOutputs, OutputOptionsAreRenamedAndOnlyThoseComeBack) {
    TempDir d;
    GuestOutputs outputs;
    auto args = outputs.rewrite({"record", "-o", d / "r.json", "--html=" + d / "p.html", "--junit", "-", "--json"});
    ASSERT_EQ(args.size(), 7u);
    EXPECT_EQ(args[2], "hlvm-out-0-r.json");
    EXPECT_EQ(args[3], "--html=hlvm-out-1-p.html");
    EXPECT_EQ(args[5], "-");
    ASSERT_TRUE(outputs.check());
    ASSERT_TRUE(outputs.deliver({{"hlvm-out-0-r.json", "{}"}, {"hlvm-out-9-x", "no"}, {"../x", "no"}}));
    EXPECT_EQ(d.read("r.json"), "{}");
    EXPECT_EQ(files_under(d.path()), (std::set<std::string>{"r.json"}));
    // A link planted where the output goes, after the check: refused, not followed.
    d.write("target", "keep");
    fs::remove(d / "r.json");
    fs::create_symlink(d / "target", d / "r.json");
    auto s = outputs.deliver({{"hlvm-out-0-r.json", "{}"}});
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message().find(d / "r.json"), std::string::npos) << s.error().message();
    EXPECT_EQ(d.read("target"), "keep");
}

TEST(GuestOutputs, AnOutputWhereNoFileCanGoIsRefusedBeforeTheGuestStarts) {
    TempDir d;
    mkfifo((d / "fifo").c_str(), 0600);
    for (const std::string& bad : {d / "missing/r.json", d / "fifo", d.path()}) {
        GuestOutputs outputs;
        outputs.rewrite({"record", "-o", bad});
        EXPECT_FALSE(outputs.check()) << bad;
    }
    EXPECT_FALSE(fs::exists(d / "missing"));
}

TEST(RunDir, AKeptDirectoryIsClearedOfAnEarlierRunOnly) {
    TempDir d;
    const std::string keep = d / "keep";
    {
        auto first = RunDir::open(keep, {"console.log", "t1"});
        ASSERT_TRUE(first) << first.error().message();
        d.write("keep/console.log", "old");
        d.write("keep/t1/rc", "0");
        d.write("keep/notes.txt", "the user's");
    }
    auto second = RunDir::open(keep, {"console.log", "t1"});
    ASSERT_TRUE(second) << second.error().message();
    EXPECT_EQ(files_under(keep), (std::set<std::string>{kRunManifest, "notes.txt"}));
    EXPECT_TRUE(second->kept());
}

TEST(RunDir, AForeignDirectoryOrALinkIsRefusedUntouched) {
    TempDir d;
    d.write("other/kernel.env", "kernel=x");
    d.write("other/data", "precious");
    auto r = RunDir::open(d / "other", {"kernel.env"});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("not empty and not an earlier run's results"), std::string::npos);
    EXPECT_EQ(d.read("other/data"), "precious");
    fs::create_directory(d / "empty");
    fs::create_directory_symlink(d / "empty", d / "link");
    EXPECT_FALSE(RunDir::open(d / "link", {}));
    EXPECT_TRUE(fs::is_empty(d / "empty"));
}

TEST(RunDir, ATemporaryDirectoryGoesWithItsRunAndAnAbandonedOneOnTheNextStart) {
    TempDir tmp;
    std::string path;
    {
        auto r = RunDir::open("", {});
        ASSERT_TRUE(r);
        path = r->path();
        EXPECT_TRUE(fs::is_directory(path));
    }
    EXPECT_FALSE(fs::exists(path));
    // A dead owner (a child that exited), a live one (this process), a directory of another tool.
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, nullptr, 0);
    tmp.write("hotline-vm.dead/owner.pid", std::to_string(child) + "\n");
    tmp.write("hotline-vm.dead/initramfs.cpio", "x");
    tmp.write("hotline-vm.live/owner.pid", std::to_string(getpid()) + "\n");
    tmp.write("hotline-vm.nopid/x", "x");
    tmp.write("other.dead/owner.pid", std::to_string(child) + "\n");
    EXPECT_EQ(remove_abandoned_runs(tmp.path()), 1);
    EXPECT_FALSE(tmp.exists("hotline-vm.dead"));
    EXPECT_TRUE(tmp.exists("hotline-vm.live/owner.pid"));
    EXPECT_TRUE(tmp.exists("hotline-vm.nopid/x"));
    EXPECT_TRUE(tmp.exists("other.dead/owner.pid"));
}

TEST(GuestRequest, MemoryAndKernelImagesAreCheckedBeforeAnythingStarts) {
    EXPECT_EQ(*parse_memory_mib("1G"), 1024);
    EXPECT_EQ(*parse_memory_mib("512M"), 512);
    EXPECT_EQ(*parse_memory_mib("700"), 700);
    for (const char* bad : {"", "G", "1T", "-1G", "1.5G", "99999999999G"}) EXPECT_FALSE(parse_memory_mib(bad)) << bad;
    GuestRequest r = probe_request();
    ASSERT_TRUE(check_guest_request(r));
    auto fails_with = [&](GuestRequest bad, const std::string& what) {
        auto s = check_guest_request(bad);
        ASSERT_FALSE(s) << what;
        EXPECT_NE(s.error().message().find(what), std::string::npos) << s.error().message();
    };
    GuestRequest small = r;
    small.memory = "128M";
    fails_with(small, "at least 128M per node");
    GuestRequest huge = r;
    huge.memory = "100000G";
    fails_with(huge, "more than this host's");
    GuestRequest bare_alias = r;
    bare_alias.kernel = "6.1";
    EXPECT_TRUE(check_guest_request(bare_alias));
    GuestRequest unknown = r;
    unknown.kernel = "debian:6.2";
    fails_with(unknown, "--kernel debian:6.2: not a kernel alias or file: use debian:6.1|debian:6.12");
    TempDir d;
    d.write("bzImage", "an image");
    GuestRequest image = r;
    image.kernel = d / "bzImage";
    fails_with(image, "a kernel image needs --modules DIR");
    image.modules = "none";
    EXPECT_TRUE(check_guest_request(image));
    GuestRequest uneven = r;
    uneven.cpus = 3;
    fails_with(uneven, "a multiple of --nodes 2");
}

TEST(GuestRequest, AKeptDirectoryWithOtherContentIsAUsageErrorBeforeAnythingStarts) {
    TempDir d;
    d.write("other/data", "precious");
    GuestRequest r = probe_request();
    r.keep = d / "other";
    auto s = check_guest_request(r);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message().find("not empty and not an earlier run's results"), std::string::npos);
    r.keep = d / "new";
    EXPECT_TRUE(check_guest_request(r));
    EXPECT_FALSE(fs::exists(d / "new"));
}
