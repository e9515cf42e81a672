// SPDX-License-Identifier: Apache-2.0
#include "kernel_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "boot.hpp"
#include "digest.hpp"
#include "hotline/base/util.hpp"
#include "hotline/vm/kernels.hpp"
#include "watch.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kAliasFileMax = 256;

// Serialises the cache so that parallel runs share one download.
class CacheLock {
  public:
    static Result<CacheLock> take(const std::string& path) {
        int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return make_error("cannot open the cache lock " + path, errno);
        while (flock(fd, LOCK_EX) != 0)
            if (errno != EINTR) {
                close(fd);
                return make_error("cannot lock " + path, errno);
            }
        return CacheLock(fd);
    }
    CacheLock(CacheLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    CacheLock& operator=(CacheLock&&) = delete;
    ~CacheLock() {
        if (fd_ >= 0) close(fd_);
    }

  private:
    explicit CacheLock(int fd) : fd_(fd) {}
    int fd_;
};

bool is_hex_digest(std::string_view s) {
    return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// A digest line's name: a relative path without `..`, as write_digests writes them.
bool safe_relative(const std::string& name) {
    if (name.empty() || name.front() == '/') return false;
    for (const auto& part : fs::path(name))
        if (part == ".." || part == ".") return false;
    return true;
}

bool is_regular_not_link(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status check_digest_line(const std::string& dir, const std::string& line) {
    if (line.size() < 67 || line.compare(64, 2, "  ") != 0 || !is_hex_digest(line.substr(0, 64)))
        return make_error("a malformed line in " + dir + "/sha256sums");
    const std::string name = line.substr(66);
    if (!safe_relative(name) || !is_regular_not_link(dir + "/" + name))
        return make_error(dir + "/" + name + " is not a plain file of the entry");
    auto digest = sha256_file(dir + "/" + name);
    if (!digest || *digest != line.substr(0, 64))
        return make_error(dir + "/" + name + " does not match its digest");
    return ok_status();
}

Result<std::string> local_image_dir(const std::string& image, const std::string& moddir,
                                    const std::string& work, const StopAsked& stop) {
    const std::string dir = work + "/kernel";
    std::error_code ec;
    fs::create_directories(dir + "/modules", ec);
    fs::create_symlink(fs::canonical(image, ec), dir + "/vmlinux", ec);
    if (ec) return make_error("cannot link " + image + " into " + dir, ec.value());
    if (auto s = write_file_atomic(dir + "/release", "local\n"); !s) return s.error();
    if (auto s = write_file_atomic(dir + "/package", fs::path(image).filename().string() + "\n");
        !s)
        return s.error();
    for (const auto& m : kGuestModules) {
        const std::string name = fs::path(m).filename().string();
        const std::string found = moddir.empty() ? "" : find_module(moddir, m);
        if (found.empty()) {
            vm_log(
                fmt::format("no {} under {}: the guest runs without it (scenarios need veth, "
                            "unless the kernel has it "
                            "built in)",
                            name, moddir.empty() ? "(no --modules given)" : moddir));
            continue;
        }
        if (auto s = decompress_module(found, dir + "/modules/" + name, stop); !s) return s.error();
    }
    return dir;
}

Result<std::string> local_deb_dir(const std::string& cache, const std::string& deb,
                                  const StopAsked& stop) {
    auto dir = deb_cache_dir(cache, deb);
    if (!dir) return dir.error();
    if (verify_kernel_dir(*dir)) return *dir;
    if (auto s = unpack_debs(*dir, {deb}, stop); !s) return s.error();
    if (auto s = verify_kernel_dir(*dir); !s) return s.error();
    return *dir;
}

Result<std::string> archive_kernel_dir(const std::string& cache, const KernelAlias& alias,
                                       const StopAsked& stop) {
    const std::string kernels = cache + "/kernels";
    std::error_code ec;
    fs::create_directories(kernels, ec);
    if (ec) return make_error("cannot create " + kernels, ec.value());
    auto lock = CacheLock::take(kernels + "/.lock");
    if (!lock) return lock.error();
    const std::string key(alias.name);
    const char* refresh = std::getenv("HOTLINE_VM_REFRESH");
    if (!(refresh && std::string(refresh) == "1")) {
        if (auto dir = alias_dir(cache, key)) {
            auto ok = verify_kernel_dir(*dir);
            if (ok) return *dir;
            vm_log(fmt::format(
                "the cached kernel in {} does not match its sha256sums: fetching it again ({})",
                *dir, ok.error().message()));
        }
    }
    auto dir = fetch_archive_kernel(cache, std::string(alias.suite), stop);
    if (!dir) return dir.error();
    if (auto s = write_file_atomic(kernels + "/" + key, fs::path(*dir).filename().string() + "\n");
        !s)
        return s.error();
    return *dir;
}

}  // namespace

Result<std::string> libexec_vm_dir() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec) candidates.push_back(self.parent_path().parent_path() / "libexec/hotline/vm");
    candidates.push_back(fs::path(HOTLINE_SOURCE_DIR) / "libexec/vm");
    for (auto& c : candidates)
        if (access((c / "lib/guest-init.sh").c_str(), R_OK) == 0) return c.string();
    return make_error(fmt::format("the guest's init is not installed (looked for {} and {})",
                                  (candidates.front() / "lib/guest-init.sh").string(),
                                  (candidates.back() / "lib/guest-init.sh").string()));
}

bool valid_entry_name(const std::string& name) {
    static const std::regex plain("[A-Za-z0-9][A-Za-z0-9._+~%-]*");
    return std::regex_match(name, plain);
}

Result<std::string> alias_dir(const std::string& cache, const std::string& key) {
    const std::string file = cache + "/kernels/" + key;
    if (!is_regular_not_link(file)) return make_error("no alias file " + file);
    auto text = read_file(file, kAliasFileMax);
    std::string name = text ? *text : "";
    while (!name.empty() && name.back() == '\n') name.pop_back();
    if (!valid_entry_name(name)) return make_error(file + " does not name an entry of the cache");
    return cache + "/kernels/" + name;
}

Status write_digests(const std::string& dir, const std::vector<std::string>& files) {
    std::string sums;
    for (const auto& f : files) {
        auto d = sha256_file(dir + "/" + f);
        if (!d) return d.error();
        sums += *d + "  " + f + "\n";
    }
    return write_file_atomic(dir + "/sha256sums", sums);
}

Status verify_kernel_dir(const std::string& dir) {
    if (read_file_if_present(dir + "/ok").value_or("") != fmt::format("format={}\n", kCacheFormat))
        return make_error(dir + " is not a complete entry of this cache format");
    if (!is_regular_not_link(dir + "/vmlinux"))
        return make_error(dir + "/vmlinux is not a plain file");
    // No digests is no proof: such an entry is unpacked again, never booted.
    auto sums = read_file_if_present(dir + "/sha256sums");
    if (!sums || sums->empty()) return make_error(dir + " has no sha256sums");
    bool names_vmlinux = false;
    std::istringstream in(*sums);
    for (std::string line; std::getline(in, line);) {
        if (auto s = check_digest_line(dir, line); !s) return s;
        names_vmlinux |= line.substr(64) == "  vmlinux";
    }
    if (!names_vmlinux) return make_error(dir + "/sha256sums does not name vmlinux");
    return ok_status();
}

Result<std::string> deb_cache_dir(const std::string& cache, const std::string& deb) {
    auto digest = sha256_file(deb);
    if (!digest) return digest.error();
    return cache + "/kernels/local-" + digest->substr(0, 32);
}

Result<std::string> kernel_dir(const std::string& kernel, const std::string& moddir,
                               const std::string& work, ShutdownSignals& signals) {
    const StopAsked stop = [&signals] {
        while (int sig = signals.poll())
            if (is_shutdown_signal(sig)) return true;
        return signals.received() != 0;
    };
    std::error_code ec;
    if (fs::is_regular_file(kernel, ec)) {
        if (fs::path(kernel).extension() == ".deb") return local_deb_dir(cache_dir(), kernel, stop);
        return local_image_dir(kernel, moddir, work, stop);
    }
    const KernelAlias* alias = find_kernel_alias(kernel);
    if (!alias)
        return make_error(fmt::format(
            "unknown kernel \"{}\": use {} or a path to a kernel image or linux-image .deb",
            printable(kernel), kernel_alias_list()));
    return archive_kernel_dir(cache_dir(), *alias, stop);
}

}  // namespace hotline::vm
