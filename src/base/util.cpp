// Duration and list parsing, atomic file writes.
#include <cctype>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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
        std::string_view part = s.substr(0, c);
        while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
        while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
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

Status write_file_atomic(const std::string& path, std::string_view data) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return make_error("cannot create " + tmp, errno, "check that the directory exists and is writable");
    std::size_t off = 0;
    while (off < data.size()) {
        ssize_t n = write(fd, data.data() + off, data.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp.c_str());
            return make_error("cannot write " + tmp, e);
        }
        off += std::size_t(n);
    }
    if (fsync(fd) || close(fd)) {
        int e = errno;
        unlink(tmp.c_str());
        return make_error("cannot sync " + tmp, e);
    }
    if (rename(tmp.c_str(), path.c_str())) {
        int e = errno;
        unlink(tmp.c_str());
        return make_error("cannot rename " + tmp + " to " + path, e);
    }
    return ok_status();
}

}  // namespace hotline

namespace hotline {

double monotonic_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

}  // namespace hotline
