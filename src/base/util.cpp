// SPDX-License-Identifier: Apache-2.0
// Duration and list parsing, whole-file reads, atomic file writes, error exits.
#include <cctype>
#include <fcntl.h>
#include <sysexits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>

#include "hotline/base/util.hpp"

namespace hotline {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

namespace {

constexpr double kMaxDurationSeconds = 366.0 * 24 * 3600;

}  // namespace

Result<double> parse_duration(std::string_view s) {
    std::string str(s);
    if (str.empty()) return make_error("empty duration", EINVAL, "use e.g. 5s, 250ms or 2m");
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(str.c_str(), &end);
    if (end == str.c_str() || errno || !std::isfinite(v) || v < 0)
        return make_error("bad duration \"" + str.substr(0, 40) + "\"", EINVAL, "use e.g. 5s, 250ms or 2m");
    std::string unit(end);
    double mul = 0;
    if (unit.empty() || unit == "s") mul = 1;
    else if (unit == "ms") mul = 1e-3;
    else if (unit == "us") mul = 1e-6;
    else if (unit == "m" || unit == "min") mul = 60;
    else if (unit == "h") mul = 3600;
    else return make_error("bad duration unit \"" + unit + "\" in \"" + str + "\"", EINVAL, "units: ms, s, m, h");
    // Every use converts to time_t, timespec or chrono: bounded here, once.
    double secs = v * mul;
    if (!(secs <= kMaxDurationSeconds))
        return make_error(fmt::format("duration \"{}\" is out of range", str.substr(0, 40)), 0,
                          "give at most 366 days (8784h)");
    return secs;
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

std::string shell_words(const std::vector<std::string>& argv) {
    std::string out;
    for (auto& w : argv) {
        const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:=,+-@%").find(c) != std::string_view::npos;
        });
        std::string q = plain ? w : "'";
        if (!plain) {
            for (char c : w)  // a control character is shown, never sent to the terminal
                q += c == '\'' ? std::string("'\\''") : std::iscntrl(static_cast<unsigned char>(c)) ? "?" : std::string(1, c);
            q += "'";
        }
        out += (out.empty() ? "" : " ") + q;
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

namespace {

// Edit distance counting a swap of two neighbouring letters as one edit (optimal
// string alignment), the commonest typo after a missing or extra letter.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

}  // namespace

std::string closest_name(std::string_view name, std::string_view known) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(1, name.size() / 3) + 1;
    for (auto& cand : split_list(known)) {
        std::size_t d = edit_distance(name, cand);
        // A prefix ("prob" of "probe") is as likely a typo as one wrong letter.
        if (cand.size() > name.size() && cand.compare(0, name.size(), name) == 0 && name.size() >= 3) d = 1;
        if (d < best_d) {
            best_d = d;
            best = cand;
        }
    }
    return best;
}

std::string unknown_name_message(std::string_view kind, std::string_view name, std::string_view known) {
    std::string msg = fmt::format("unknown {} \"{}\"", kind, name);
    if (auto c = closest_name(name, known); !c.empty()) msg += fmt::format("; did you mean \"{}\"?", c);
    return msg;
}

std::string plain_number(double v, int significant) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (std::fabs(v) < 1e-12) return "0";
    const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
    const int decimals = std::clamp(significant - 1 - magnitude, 0, 12);
    // Rounded to `significant` digits first, so 45012.7 reads 45010, as %g would.
    const double scale = std::pow(10.0, magnitude - significant + 1);
    const double rounded = decimals == 0 ? std::round(v / scale) * scale : v;
    std::string s = fmt::format("{:.{}f}", rounded, decimals);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s == "-0" ? "0" : s;
}

int fail(const Error& e, int exit_code) {
    // A usage error's EINVAL says only that the input was wrong, which the
    // message already does; a system call's errno (ENOENT of a file named on
    // the command line) stays.
    Error shown = e;
    if (exit_code == EX_USAGE && shown.err == EINVAL) shown.err = 0;
    fmt::print(stderr, "hotline: {}\n", shown.message());
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

struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
};

}  // namespace

namespace {

std::string parent_dir(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

Error refused_output(const std::string& path, const std::string& why) {
    return make_error(fmt::format("refusing to write {}: {}", path, why), 0,
                      "output goes through a new file renamed into place, which would replace it; "
                      "give the path of a regular file or a new name");
}

// What is at `path` now, if anything, may be replaced by a renamed file.
Status check_replaceable(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st)) {
        if (errno == ENOENT) return ok_status();
        return make_error("cannot inspect " + path, errno);
    }
    if (S_ISLNK(st.st_mode)) return refused_output(path, "it is a symbolic link (neither it nor its target is replaced)");
    if (S_ISDIR(st.st_mode)) return refused_output(path, "it is a directory");
    if (!S_ISREG(st.st_mode)) return refused_output(path, "it is not a regular file (a device, FIFO or socket)");
    if ((st.st_mode & 0222) == 0 || faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS))
        return refused_output(path, fmt::format("it is read-only (mode {:04o})", st.st_mode & 07777));
    return ok_status();
}

// What to do when a file cannot be created beside the output, by the errno.
const char* creation_hint(int e) {
    switch (e) {
    case ENOSPC:
    case EDQUOT: return "free space on its file system, or choose another directory";
    case EROFS: return "its file system is mounted read-only; choose another directory";
    case EACCES:
    case EPERM: return "check that the directory is writable";
    default: return "";
    }
}

}  // namespace

Status check_output_path(const std::string& path) {
    if (path.empty()) return make_error("empty output path", 0, "give a file name");
    // Not standard output (as perf's `-o -` would be): a file named "-" would
    // be written silently where the user expected the document on the terminal.
    if (path == "-")
        return make_error("output path '-': documents are written to files, never to standard output", 0,
                          "give a file name, or --json to print the JSON document on standard output");
    std::string dir = parent_dir(path);
    struct stat st {};
    if (stat(dir.c_str(), &st))
        return make_error(fmt::format("cannot write {}: the directory {} does not exist or cannot be reached", path, dir),
                          errno, "create the directory first, or choose another path");
    if (!S_ISDIR(st.st_mode)) return make_error(fmt::format("cannot write {}: {} is not a directory", path, dir), 0);
    if (faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS))
        return make_error(fmt::format("cannot write {}: no permission to create files in {}", path, dir), errno,
                          "choose a directory you can write, or run as its owner");
    return check_replaceable(path);
}

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return make_error("cannot read " + path, errno);
    FdCloser closer{fd};
    struct stat st {};
    if (fstat(fd, &st)) return make_error("cannot read " + path, errno);
    if (S_ISDIR(st.st_mode)) return make_error(fmt::format("cannot read {}: it is a directory", path), 0, "give a file");
    if (!S_ISREG(st.st_mode))
        return make_error(fmt::format("cannot read {}: it is not a regular file (a device, FIFO or socket)", path), 0,
                          "give a regular file");
    auto too_large = [&] {
        return make_error(fmt::format("cannot read {}: it is larger than the limit of {} bytes", path, max_bytes), EFBIG,
                          "docs/limits.md lists the input limits");
    };
    if (std::uint64_t(st.st_size) > max_bytes) return too_large();
    std::string out;
    char buf[65536];
    while (true) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return make_error("cannot read " + path, errno);
        if (n == 0) break;
        if (out.size() + std::size_t(n) > max_bytes) return too_large();
        out.append(buf, std::size_t(n));
    }
    return out;
}

std::optional<std::string> read_file_if_present(const std::string& path) {
    auto r = read_file(path);
    if (!r.ok()) return std::nullopt;
    return std::move(r).value();
}

Status write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
    if (auto st = check_output_path(path); !st) return st;
    // An unpredictable name created exclusively: a link planted in the
    // directory cannot redirect the write.
    std::string tmp = path + ".tmp.XXXXXX";
    int fd = mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return make_error("cannot create a temporary file beside " + path, e, creation_hint(e));
    }
    // Any failure removes the temporary file; what was at `path` is untouched.
    auto fail_with = [&](const char* step, int e) {
        unlink(tmp.c_str());
        return make_error(fmt::format("cannot write {}: {} its temporary file {} failed, {} is unchanged", path, step,
                                      tmp, path),
                          e);
    };
    if (fchmod(fd, mode)) {
        int e = errno;
        close(fd);
        return fail_with("setting the mode of", e);
    }
    if (auto st = write_all(fd, data); !st) {
        close(fd);
        return fail_with("writing", st.error().err);
    }
    if (fsync(fd)) {
        int e = errno;
        close(fd);
        return fail_with("syncing", e);
    }
    if (close(fd)) return fail_with("closing", errno);
    if (rename(tmp.c_str(), path.c_str())) return fail_with("renaming", errno);
    if (auto st = fsync_dir(parent_dir(path)); !st)
        return make_error(fmt::format("wrote {}, but syncing its directory failed: it may not survive a crash", path),
                          st.error().err);
    return ok_status();
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
