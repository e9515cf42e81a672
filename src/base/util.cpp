// Duration and list parsing, whole-file reads, atomic file writes, error exits.
#include <cctype>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "hotline/util.hpp"

namespace hotline {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

Result<double> parse_duration(std::string_view s) {
    std::string str(s);
    if (str.empty()) return make_error("empty duration", EINVAL, "use e.g. 5s, 250ms or 2m");
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(str.c_str(), &end);
    if (end == str.c_str() || errno || !std::isfinite(v) || v < 0)
        return make_error("bad duration \"" + str + "\"", EINVAL, "use e.g. 5s, 250ms or 2m");
    std::string unit(end);
    double mul = 0;
    if (unit.empty() || unit == "s") mul = 1;
    else if (unit == "ms") mul = 1e-3;
    else if (unit == "us") mul = 1e-6;
    else if (unit == "m" || unit == "min") mul = 60;
    else if (unit == "h") mul = 3600;
    else return make_error("bad duration unit \"" + unit + "\" in \"" + str + "\"", EINVAL, "units: ms, s, m, h");
    return v * mul;
}

std::vector<std::string> split_list(std::string_view s) {
    std::vector<std::string> out;
    while (true) {
        auto c = s.find(',');
        std::string_view part = trim(s.substr(0, c));
        if (!part.empty()) out.emplace_back(part);
        if (c == std::string_view::npos) break;
        s.remove_prefix(c + 1);
    }
    return out;
}

std::string own_command_line() {
    std::string s;
    if (FILE* f = fopen("/proc/self/cmdline", "r")) {
        int c;
        while ((c = fgetc(f)) != EOF) s += c ? char(c) : ' ';
        fclose(f);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error("cannot read " + path, errno ? errno : ENOENT);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int fail(const Error& e, int exit_code) {
    fmt::print(stderr, "hotline: {}\n", e.message());
    return exit_code;
}

Status fsync_dir(const std::string& dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot open " + dir + " to sync it", errno);
    int r = fsync(fd);
    int e = errno;
    close(fd);
    if (r) return make_error("cannot sync " + dir, e);
    return ok_status();
}

namespace {

Status write_all(int fd, std::string_view data) {
    std::size_t off = 0;
    while (off < data.size()) {
        ssize_t n = write(fd, data.data() + off, data.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return make_error("cannot write", n < 0 ? errno : EIO);
        off += std::size_t(n);
    }
    return ok_status();
}

std::string parent_dir(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return make_error("cannot create " + tmp, errno, "check that the directory exists and is writable");
    auto fail_with = [&](std::string what, int e) {
        unlink(tmp.c_str());
        return make_error(std::move(what), e);
    };
    if (auto st = write_all(fd, data); !st) {
        close(fd);
        return fail_with("cannot write " + tmp, st.error().err);
    }
    if (fsync(fd)) {
        int e = errno;
        close(fd);
        return fail_with("cannot sync " + tmp, e);
    }
    if (close(fd)) return fail_with("cannot close " + tmp, errno);
    if (rename(tmp.c_str(), path.c_str())) return fail_with("cannot rename " + tmp + " to " + path, errno);
    return fsync_dir(parent_dir(path));
}

}  // namespace hotline

namespace hotline {

double monotonic_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

std::uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

}  // namespace hotline
