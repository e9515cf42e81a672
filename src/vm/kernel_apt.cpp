// SPDX-License-Identifier: Apache-2.0
// Guest kernels from Debian's archive, without changing the system: a private
// apt configuration per suite (sources, lists and caches under the cache),
// `apt-get download` (which verifies the package against the suite's signed
// Release file), every call an argv.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "boot.hpp"
#include "hotline/base/util.hpp"
#include "kernel_cache.hpp"
#include "process.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg";
constexpr const char* kDefaultMirror = "http://deb.debian.org/debian";

struct Apt {
    std::string dir;  // CACHE/apt/SUITE
    std::string suite;
    StopAsked stop;

    std::vector<std::string> argv(const std::string& tool,
                                  const std::vector<std::string>& args) const {
        std::vector<std::string> a{tool,
                                   "-o",
                                   "Dir::Etc::SourceList=" + dir + "/sources.list",
                                   "-o",
                                   "Dir::Etc::SourceParts=/dev/null",
                                   "-o",
                                   "Dir::State::Lists=" + dir + "/lists",
                                   "-o",
                                   "Dir::Cache=" + dir + "/cache",
                                   "-o",
                                   "Dir::State::status=/dev/null",
                                   "-o",
                                   "Debug::NoLocking=1",
                                   "-o",
                                   "APT::Get::List-Cleanup=0"};
        // apt drops to _apt for downloads, which cannot write into a private
        // cache under root's home; downloading as the caller keeps the files ours.
        if (getuid() == 0) a.insert(a.end(), {"-o", "APT::Sandbox::User=root"});
        a.insert(a.end(), args.begin(), args.end());
        return a;
    }
    Result<std::string> query(const std::vector<std::string>& args) const {
        return run_output(argv("apt-cache", args), -1, stop);
    }
};

std::string first_field_after(const std::string& text, const std::regex& line_re) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, line_re)) return m[1].str();
    }
    return "";
}

// The mirror the system's own sources use, so the download goes where apt
// already goes (HOTLINE_VM_MIRROR overrides).
std::string mirror() {
    if (const char* m = std::getenv("HOTLINE_VM_MIRROR"); m && *m) return m;
    static const std::regex deb822(R"(^URIs:\s+(\S+))");
    static const std::regex one_line(R"(^deb\s+(?:\[[^\]]*\]\s+)?([a-z]+://\S+))");
    for (auto [file, re] : {std::pair{"/etc/apt/sources.list.d/debian.sources", &deb822},
                            std::pair{"/etc/apt/sources.list", &one_line}}) {
        std::istringstream in(read_file_if_present(file).value_or(""));
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (std::regex_search(line, m, *re) && m[1].str().find("security") == std::string::npos)
                return m[1].str();
        }
    }
    return kDefaultMirror;
}

std::string log_tail(const std::string& path) {
    std::istringstream in(read_file_if_present(path).value_or(""));
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::string out;
    for (std::size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
        out += " " + lines[i];
    return out;
}

// The tool's output into LOG; an error quoting its last lines.
Status run_logged(const Apt& apt, const std::vector<std::string>& args, const std::string& log,
                  const std::string& cwd, const std::string& what) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return make_error("cannot write " + log, errno);
    auto rc = run_to_end(apt.argv("apt-get", args), {-1, fd, fd, cwd}, apt.stop);
    close(fd);
    if (!rc) return rc.error();
    if (*rc != 0) return make_error(what + " failed:" + log_tail(log));
    return ok_status();
}

Status update(const Apt& apt) {
    std::error_code ec;
    fs::create_directories(apt.dir + "/lists/partial", ec);
    fs::create_directories(apt.dir + "/cache/archives/partial", ec);
    const std::string signed_by =
        access(kKeyring, R_OK) == 0 ? fmt::format("[signed-by={}] ", kKeyring) : "";
    if (auto s =
            write_file_atomic(apt.dir + "/sources.list",
                              fmt::format("deb {}{} {} main\n", signed_by, mirror(), apt.suite));
        !s)
        return s;
    vm_log(fmt::format("apt-get update for {} (private lists in {})", apt.suite, apt.dir));
    return run_logged(apt, {"-q", "update"}, apt.dir + "/update.log", {},
                      "apt-get update for " + apt.suite);
}

// linux-image-amd64 is the suite's meta package: its dependency names the kernel.
Result<std::string> kernel_package(const Apt& apt) {
    static const std::regex dep(R"(Depends: (linux-image-[0-9]\S*))");
    auto deps = apt.query({"depends", "linux-image-amd64"});
    std::string pkg = deps ? first_field_after(*deps, dep) : "";
    // apt-get update exits 0 when a mirror cannot be reached: its log says why.
    if (pkg.empty())
        return make_error("no linux-image-*-amd64 behind linux-image-amd64 in " + apt.suite +
                          " (apt-get update:" + log_tail(apt.dir + "/update.log") + ")");
    return pkg;
}

// PKG plus its linux-binary-* and linux-modules-* dependencies where the suite
// splits them out (Debian's 7.x packages).
std::vector<std::string> kernel_packages(const Apt& apt, const std::string& pkg) {
    static const std::regex dep(R"(Depends: (linux-(?:binary|modules)-[0-9]\S*))");
    std::vector<std::string> pkgs{pkg};
    auto deps = apt.query({"depends", pkg});
    std::istringstream in(deps ? *deps : "");
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, dep)) pkgs.push_back(m[1].str());
    }
    return pkgs;
}

Status download_unpack(const Apt& apt, const std::string& pkg, const std::string& dir) {
    const std::string dl = dir + ".download";
    std::error_code ec;
    fs::remove_all(dl, ec);
    fs::create_directories(dl, ec);
    const std::vector<std::string> pkgs = kernel_packages(apt, pkg);
    vm_log(fmt::format("downloading {} from {}", shell_words(pkgs), apt.suite));
    std::vector<std::string> args{"-q", "download"};
    args.insert(args.end(), pkgs.begin(), pkgs.end());
    Status s =
        run_logged(apt, args, dl + "/download.log", dl, "apt-get download " + shell_words(pkgs));
    std::vector<std::string> debs;
    for (const auto& p : pkgs)
        for (const auto& e : fs::directory_iterator(dl, ec))
            if (e.path().filename().string().rfind(p + "_", 0) == 0 &&
                e.path().extension() == ".deb")
                debs.push_back(e.path().string());
    if (s && debs.size() != pkgs.size())
        s = make_error("apt-get download left no .deb for " + shell_words(pkgs));
    if (s) s = unpack_debs(dir, debs, apt.stop);
    fs::remove_all(dl, ec);
    return s;
}

}  // namespace

Result<std::string> fetch_archive_kernel(const std::string& cache, const std::string& suite,
                                         const StopAsked& stop) {
    const Apt apt{cache + "/apt/" + suite, suite, stop};
    if (auto s = update(apt); !s) return s.error();
    auto pkg = kernel_package(apt);
    if (!pkg) return pkg.error();
    static const std::regex version(R"(^Version: (\S+))");
    auto shown = apt.query({"show", *pkg});
    std::string ver = shown ? first_field_after(*shown, version) : "";
    std::replace(ver.begin(), ver.end(), ':', '%');
    const std::string name = *pkg + "_" + ver;
    if (ver.empty() || !valid_entry_name(name))
        return make_error("no usable version of " + *pkg + " in " + suite);
    const std::string dir = cache + "/kernels/" + name;
    if (verify_kernel_dir(dir)) return dir;
    if (auto s = download_unpack(apt, *pkg, dir); !s) return s.error();
    if (auto s = verify_kernel_dir(dir); !s)
        return make_error("the kernel unpacked into " + dir +
                          " fails its own sha256sums: " + s.error().message());
    return dir;
}

}  // namespace hotline::vm
