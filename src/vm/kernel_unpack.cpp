// SPDX-License-Identifier: Apache-2.0
// A kernel's packages unpacked into the cache: only boot/ (or, from Debian's
// 7.x packages on, usr/lib/modules/RELEASE/vmlinuz and config) and the guest's
// modules, the ELF vmlinux cut out of the bzImage (QEMU boots it through its
// PVH entry, skipping the in-guest decompressor, and its .BTF section is the
// guest's BTF), the digests written.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hotline/base/util.hpp"
#include "kernel_cache.hpp"
#include "process.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

struct Compression {
    const char* tool;
    std::string_view magic;
};

// Trailing data after the payload makes the decompressor fail: the output judges.
constexpr std::array<Compression, 3> kPayloads{{{"xz",
                                                 {"\xfd"
                                                  "7zXZ\x00",
                                                  6}},
                                                {"zstd", {"\x28\xb5\x2f\xfd", 4}},
                                                {"gzip", {"\x1f\x8b\x08", 3}}}};
constexpr std::size_t kMaxTriesPerMagic = 8;

bool starts_with_elf(const std::string& path) {
    char head[4] = {};
    std::ifstream in(path, std::ios::binary);
    return in.read(head, 4) && std::memcmp(head,
                                           "\x7f"
                                           "ELF",
                                           4) == 0;
}

std::vector<std::size_t> offsets_of(const std::string& data, std::string_view magic) {
    std::vector<std::size_t> at;
    for (std::size_t p = data.find(magic); p != std::string::npos && at.size() < kMaxTriesPerMagic;
         p = data.find(magic, p + 1))
        at.push_back(p);
    return at;
}

// TOOL -dc of FILE from OFFSET into OUT; its exit status does not count.
Status decompress_from(const char* tool, const std::string& file, std::size_t offset,
                       const std::string& out, const StopAsked& stop) {
    int in = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || o < 0 || lseek(in, static_cast<off_t>(offset), SEEK_SET) < 0) {
        if (in >= 0) close(in);
        if (o >= 0) close(o);
        return make_error("cannot read " + file + " or write " + out, errno);
    }
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto rc = run_to_end({tool, "-dc"}, {in, o, null, {}}, stop);
    close(in);
    close(o);
    if (null >= 0) close(null);
    if (!rc) return rc.error();
    return ok_status();
}

// The unpacked packages' vmlinuz: boot/vmlinuz-RELEASE up to 6.x,
// usr/lib/modules/RELEASE/vmlinuz from 7.x on; the highest version.
std::string find_vmlinuz(const std::string& tmp) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tmp + "/boot", ec))
        if (e.path().filename().string().rfind("vmlinuz-", 0) == 0)
            found.push_back(e.path().string());
    for (const auto& e : fs::directory_iterator(tmp + "/usr/lib/modules", ec))
        if (fs::is_regular_file(e.path() / "vmlinuz"))
            found.push_back((e.path() / "vmlinuz").string());
    std::sort(found.begin(), found.end(),
              [](auto& a, auto& b) { return strverscmp(a.c_str(), b.c_str()) < 0; });
    return found.empty() ? "" : found.back();
}

std::string release_of(const std::string& vmlinuz) {
    const fs::path p(vmlinuz);
    if (p.filename() == "vmlinuz") return p.parent_path().filename().string();
    return p.filename().string().substr(std::strlen("vmlinuz-"));
}

void copy_config(const std::string& tmp) {
    std::error_code ec;
    std::vector<fs::path> configs;
    for (const auto& e : fs::directory_iterator(tmp + "/boot", ec))
        if (e.path().filename().string().rfind("config-", 0) == 0) configs.push_back(e.path());
    for (const auto& e : fs::directory_iterator(tmp + "/usr/lib/modules", ec))
        if (fs::is_regular_file(e.path() / "config")) configs.push_back(e.path() / "config");
    if (!configs.empty())
        fs::copy_file(configs.front(), tmp + "/config", fs::copy_options::overwrite_existing, ec);
}

std::vector<std::string> tar_patterns() {
    std::vector<std::string> p{"./boot/*"};
    for (const auto& m : kGuestModules) {
        p.push_back("./lib/modules/*/kernel/" + m + "*");
        p.push_back("./usr/lib/modules/*/kernel/" + m + "*");
    }
    p.push_back("./usr/lib/modules/*/vmlinuz");
    p.push_back("./usr/lib/modules/*/config");
    return p;
}

Status unpack_modules(const std::string& tmp, const std::vector<std::string>& debs,
                      const StopAsked& stop) {
    for (const auto& m : kGuestModules) {
        std::string found = find_module(tmp + "/lib", m);
        if (found.empty()) found = find_module(tmp + "/usr", m);
        if (found.empty())
            return make_error(
                fmt::format("{} have no lib/modules/*/kernel/{}", shell_words(debs), m));
        if (auto s =
                decompress_module(found, tmp + "/modules/" + fs::path(m).filename().string(), stop);
            !s)
            return s;
    }
    return ok_status();
}

// What the packages hold, in TMP: vmlinux, release, config, modules/.
Status unpack_into(const std::string& tmp, const std::vector<std::string>& debs,
                   const StopAsked& stop) {
    std::vector<std::string> tar{"tar", "-x", "-C", tmp, "--wildcards"};
    for (auto& p : tar_patterns()) tar.push_back(p);
    for (const auto& deb : debs) {
        // tar fails on a pattern the package lacks: what is missing is judged below.
        auto rc = run_pipeline({"dpkg-deb", "--fsys-tarfile", deb}, tar, stop);
        if (!rc) return rc.error();
    }
    if (auto s = unpack_modules(tmp, debs, stop); !s) return s;
    const std::string vmlinuz = find_vmlinuz(tmp);
    if (vmlinuz.empty())
        return make_error(fmt::format(
            "{} have no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz: is it a linux-image "
            "package?",
            shell_words(debs)));
    if (auto s = extract_vmlinux(vmlinuz, tmp + "/vmlinux", stop); !s) return s;
    if (auto s = write_file_atomic(tmp + "/release", release_of(vmlinuz) + "\n"); !s) return s;
    copy_config(tmp);
    return ok_status();
}

}  // namespace

std::string find_module(const std::string& root, const std::string& module) {
    auto ends_with = [](const std::string& s, const std::string& t) {
        return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
    };
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string p = it->path().string();
        for (const char* ext : {"", ".xz", ".zst", ".gz"})
            if (ends_with(p, "/" + module + ext) && it->is_regular_file()) return p;
    }
    return "";
}

Status decompress_module(const std::string& file, const std::string& out, const StopAsked& stop) {
    const std::string ext = fs::path(file).extension().string();
    const char* tool = ext == ".xz"    ? "xz"
                       : ext == ".zst" ? "zstd"
                       : ext == ".gz"  ? "gzip"
                                       : nullptr;
    std::error_code ec;
    if (!tool) {
        fs::copy_file(file, out, fs::copy_options::overwrite_existing, ec);
        return ec ? make_error("cannot copy " + file, ec.value()) : ok_status();
    }
    int in = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    auto rc = in >= 0 && o >= 0 ? run_to_end({tool, "-dc"}, {in, o, -1, {}}, stop) : Result<int>(1);
    if (in >= 0) close(in);
    if (o >= 0) close(o);
    if (!rc || *rc != 0) return make_error("cannot decompress " + file);
    return ok_status();
}

Status extract_vmlinux(const std::string& vmlinuz, const std::string& out, const StopAsked& stop) {
    auto image = read_file(vmlinuz, std::size_t{256} << 20);
    if (!image) return image.error();
    for (const auto& c : kPayloads) {
        for (std::size_t off : offsets_of(*image, c.magic)) {
            if (auto s = decompress_from(c.tool, vmlinuz, off, out, stop); !s) return s;
            if (starts_with_elf(out)) return ok_status();
        }
    }
    std::error_code ec;
    fs::remove(out, ec);
    return make_error("cannot extract an ELF vmlinux from " + vmlinuz +
                      " (neither xz, zstd nor gzip payload)");
}

Status unpack_debs(const std::string& dir, const std::vector<std::string>& debs,
                   const StopAsked& stop) {
    const std::string tmp = dir + ".tmp";
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp + "/modules", ec);
    if (ec) return make_error("cannot create " + tmp, ec.value());
    Status s = unpack_into(tmp, debs, stop);
    for (const char* d : {"lib", "usr", "boot"}) fs::remove_all(tmp + "/" + d, ec);
    std::vector<std::string> files{"vmlinux"};
    for (const auto& m : kGuestModules)
        files.push_back("modules/" + fs::path(m).filename().string());
    if (s)
        s = write_file_atomic(tmp + "/package", fs::path(debs.front()).filename().string() + "\n");
    if (s) s = write_digests(tmp, files);
    if (s) s = write_file_atomic(tmp + "/ok", fmt::format("format={}\n", kCacheFormat));
    if (!s) {
        fs::remove_all(tmp, ec);
        return s;
    }
    fs::remove_all(dir, ec);
    fs::rename(tmp, dir, ec);
    if (ec) return make_error("cannot move " + tmp + " to " + dir, ec.value());
    return ok_status();
}

}  // namespace hotline::vm
