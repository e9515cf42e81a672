// SPDX-License-Identifier: Apache-2.0
// The guest kernel cache (src/vm/kernel_cache.cpp) without a download:
//   - a cached kernel boots only with its digests: tampered, a link, or with
//     sha256sums deleted or malformed, it is unpacked or fetched again;
//   - an alias names a directory of the cache, never a path out of it;
//   - two linux-image .debs of one file name are two cache entries;
//   - a linux-image .deb (built here with dpkg-deb) is unpacked: vmlinux cut
//     out of its bzImage, veth.ko decompressed, digests that verify.
#include "kernel_cache.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "files.hpp"
#include "hotline/base/signals.hpp"
#include "process.hpp"

using namespace hotline;
using namespace hotline::vm;
using testlib::TempDir;
namespace fs = std::filesystem;

namespace {

class KernelCache : public ::testing::Test {
  protected:
    std::string cache() const { return tmp / "cache"; }
    // A cache entry as unpack_debs leaves it.
    std::string entry(const std::string& name) const {
        const std::string rel = "cache/kernels/" + name;
        tmp.write(rel + "/vmlinux", "kernel " + name + "\n");
        tmp.write(rel + "/modules/veth.ko", "veth\n");
        EXPECT_TRUE(write_digests(tmp / rel, {"vmlinux", "modules/veth.ko"}));
        tmp.write(rel + "/ok", fmt::format("format={}\n", kCacheFormat));
        return tmp / rel;
    }
    TempDir tmp;
};

// Runs ARGV; fails the test when it fails.
void run(const std::vector<std::string>& argv) {
    auto out = run_output(argv, STDERR_FILENO);
    ASSERT_TRUE(out) << out.error().message();
}

}  // namespace

TEST_F(KernelCache, OnlyAnEntryMatchingItsDigestsIsVerified) {
    EXPECT_TRUE(verify_kernel_dir(entry("linux-image-6.12_1")));
    const std::string t = entry("tampered");
    tmp.write("cache/kernels/tampered/vmlinux", "evil\n");
    EXPECT_FALSE(verify_kernel_dir(t));
    const std::string m = entry("module-tampered");
    tmp.write("cache/kernels/module-tampered/modules/veth.ko", "evil\n");
    EXPECT_FALSE(verify_kernel_dir(m));
    const std::string n = entry("no-digests");
    fs::remove(n + "/sha256sums");
    EXPECT_FALSE(verify_kernel_dir(n)) << "digests made up from what is there are no proof";
    const std::string e = entry("empty-digests");
    tmp.write("cache/kernels/empty-digests/sha256sums", "");
    EXPECT_FALSE(verify_kernel_dir(e));
    const std::string w = entry("no-vmlinux-digest");
    ASSERT_TRUE(write_digests(w, {"modules/veth.ko"}));
    EXPECT_FALSE(verify_kernel_dir(w));
    const std::string x = entry("escaping-digest");
    tmp.write("elsewhere", "x");
    tmp.write("cache/kernels/escaping-digest/sha256sums",
              tmp.read("cache/kernels/escaping-digest/sha256sums") +
                  "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  "
                  "../../../elsewhere\n");
    EXPECT_FALSE(verify_kernel_dir(x));
    const std::string o = entry("old-format");
    tmp.write("cache/kernels/old-format/ok", "format=1\n");
    EXPECT_FALSE(verify_kernel_dir(o));
}

TEST_F(KernelCache, AVmlinuxThatIsALinkIsNotVerified) {
    const std::string l = entry("linked");
    tmp.write("elsewhere", "evil\n");
    fs::remove(l + "/vmlinux");
    fs::create_symlink(tmp / "elsewhere", l + "/vmlinux");
    ASSERT_TRUE(write_digests(l, {"vmlinux", "modules/veth.ko"}));
    EXPECT_FALSE(verify_kernel_dir(l));
}

TEST_F(KernelCache, AnAliasResolvesOnlyInsideTheCache) {
    const std::string good = entry("linux-image-6.12_1");
    tmp.write("cache/kernels/6.12", "linux-image-6.12_1\n");
    auto dir = alias_dir(cache(), "6.12");
    ASSERT_TRUE(dir);
    EXPECT_EQ(*dir, good);
    fs::create_directories(tmp / "evil");
    tmp.write("cache/kernels/6.1", "../../evil\n");
    EXPECT_FALSE(alias_dir(cache(), "6.1"));
    tmp.write("cache/kernels/5.10", "a\nb");
    EXPECT_FALSE(alias_dir(cache(), "5.10"));
    EXPECT_FALSE(alias_dir(cache(), "latest"));
    tmp.write("cache/kernels/abs", "/etc\n");
    EXPECT_FALSE(alias_dir(cache(), "abs"));
    fs::create_symlink(tmp / "cache/kernels/6.12", tmp / "cache/kernels/linked");
    EXPECT_FALSE(alias_dir(cache(), "linked")) << "an alias file that is a link";
    EXPECT_TRUE(valid_entry_name("linux-image-6.12.95+deb12-amd64_6.12.95-1~bpo12+1"));
    EXPECT_FALSE(valid_entry_name(".."));
    EXPECT_FALSE(valid_entry_name("a/b"));
}

TEST_F(KernelCache, DebsAreKeyedByContent) {
    tmp.write("a/linux-image.deb", "one");
    tmp.write("b/linux-image.deb", "two");
    auto a = deb_cache_dir(cache(), tmp / "a/linux-image.deb");
    auto b = deb_cache_dir(cache(), tmp / "b/linux-image.deb");
    auto a2 = deb_cache_dir(cache(), tmp / "a/linux-image.deb");
    ASSERT_TRUE(a && b && a2);
    EXPECT_NE(*a, *b);
    EXPECT_EQ(*a, *a2);
    EXPECT_EQ(fs::path(*a).parent_path().string(), cache() + "/kernels");
}

TEST_F(KernelCache, ALinuxImageDebIsUnpackedAndVerified) {
    for (const char* tool : {"dpkg-deb", "xz", "zstd", "tar"})
        if (!find_program(tool)) GTEST_SKIP() << "no " << tool;
    // A bzImage stand-in: setup code, a zstd payload (an ELF), trailing data.
    const std::string root = tmp / "pkg";
    tmp.write("elf", std::string("\x7f"
                                 "ELF",
                                 4) +
                         std::string(4096, 'k'));
    run({"zstd", "-q", "-f", tmp / "elf", "-o", tmp / "elf.zst"});
    tmp.write("pkg/boot/vmlinuz-6.99.1-test",
              std::string(512, 's') + tmp.read("elf.zst") + "trailer");
    tmp.write("pkg/boot/config-6.99.1-test", "CONFIG_VETH=m\n");
    tmp.write("pkg/lib/modules/6.99.1-test/kernel/drivers/net/veth.ko", "veth module\n");
    run({"xz", "-f", root + "/lib/modules/6.99.1-test/kernel/drivers/net/veth.ko"});
    tmp.write("pkg/DEBIAN/control",
              "Package: linux-image-6.99.1-test\nVersion: 1\nArchitecture: amd64\n"
              "Maintainer: test <t@localhost>\nDescription: test\n");
    run({"dpkg-deb", "--root-owner-group", "-b", root, tmp / "linux-image-test.deb"});
    ShutdownSignals signals({SIGCHLD});
    setenv("HOTLINE_VM_CACHE", cache().c_str(), 1);
    auto dir = kernel_dir(tmp / "linux-image-test.deb", "", tmp.path(), signals);
    unsetenv("HOTLINE_VM_CACHE");
    ASSERT_TRUE(dir) << dir.error().message();
    EXPECT_EQ(*dir, *deb_cache_dir(cache(), tmp / "linux-image-test.deb"));
    EXPECT_EQ(testlib::slurp(*dir + "/vmlinux"), tmp.read("elf"));
    EXPECT_EQ(testlib::slurp(*dir + "/modules/veth.ko"), "veth module\n");
    EXPECT_EQ(testlib::slurp(*dir + "/release"), "6.99.1-test\n");
    EXPECT_EQ(testlib::slurp(*dir + "/package"), "linux-image-test.deb\n");
    EXPECT_EQ(testlib::slurp(*dir + "/config"), "CONFIG_VETH=m\n");
    EXPECT_TRUE(verify_kernel_dir(*dir));
    EXPECT_FALSE(fs::exists(*dir + "/boot"));
    EXPECT_FALSE(fs::exists(*dir + ".tmp"));
}

TEST_F(KernelCache, ABzImageWithoutAPayloadIsRefused) {
    tmp.write("vmlinuz", std::string(4096, 'x'));
    auto s = extract_vmlinux(tmp / "vmlinuz", tmp / "vmlinux", {});
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message().find("neither xz, zstd nor gzip"), std::string::npos);
    EXPECT_FALSE(fs::exists(tmp / "vmlinux"));
}
