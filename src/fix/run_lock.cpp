// SPDX-License-Identifier: Apache-2.0
// The run locks (one machine-wide, one per journal directory) and the
// journal directory's ownership check.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>

#include "hotline/fix/journal.hpp"
#include "journal_dir.hpp"

namespace hotline {

namespace fs = std::filesystem;

// The journal directory holds files that root writes and later trusts: it must
// belong to this user, be no symlink, and be writable by nobody else.  An
// existing directory is checked, never chmodded (it may be /tmp).
Status ensure_private_dir(std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    struct stat st {};
    if (lstat(dir.c_str(), &st) && errno == ENOENT) {
        std::error_code ec;
        if (auto parent = fs::path(dir).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
        if (mkdir(dir.c_str(), 0700) && errno != EEXIST)
            return make_error("cannot create the journal directory " + dir, errno,
                              "run as root, or choose another directory with --journal-dir");
    }
    return check_private_dir(dir);
}

Status check_private_dir(std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    struct stat st {};
    if (lstat(dir.c_str(), &st)) return make_error("cannot use the journal directory " + dir, errno);
    std::string why;
    if (S_ISLNK(st.st_mode)) why = "it is a symbolic link";
    else if (!S_ISDIR(st.st_mode)) why = "it is not a directory";
    else if (st.st_uid != geteuid()) why = fmt::format("it belongs to uid {}, not to uid {}", st.st_uid, geteuid());
    else if (st.st_mode & 022) why = fmt::format("others can write it (mode {:04o})", st.st_mode & 07777);
    if (why.empty()) return ok_status();
    return make_error(fmt::format("refusing the journal directory {}: {}", dir, why), 0,
                      "give --journal-dir a directory only you can write, or a new path (created 0700)");
}

Status check_lock_file(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st)) return errno == ENOENT ? ok_status() : make_error("cannot use " + path, errno);
    if (S_ISREG(st.st_mode) && st.st_uid == geteuid()) return ok_status();
    return make_error(fmt::format("refusing the lock file {}: it is {}", path,
                                  S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file of uid " +
                                                                               std::to_string(geteuid())),
                      0, "remove it; hotline creates its own");
}

namespace {

// Opens (creating) a lock file without following a link to somewhere else.
Result<int> open_lock_file(const std::string& path) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) {
        int e = errno;
        std::string hint = e == ELOOP ? "it is a symbolic link: remove it"
                           : e == EACCES || e == EPERM ? "changing knobs needs root: run it with sudo"
                                                       : "";
        return make_error("cannot open the lock file " + path, e, hint);
    }
    struct stat st {};
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        return make_error(fmt::format("refusing the lock file {}: it is not a regular file of uid {}", path, geteuid()),
                          0, "remove it; hotline creates its own");
    }
    return fd;
}

Result<int> lock_exclusively(const std::string& path) {
    auto fd = open_lock_file(path);
    if (!fd) return fd.error();
    if (flock(*fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        char buf[32] = {};
        ssize_t n = pread(*fd, buf, sizeof buf - 1, 0);
        close(*fd);
        std::string holder = n > 0 ? normalize_value(std::string(buf, std::size_t(n))) : "?";
        if (e == EWOULDBLOCK)
            return make_error(fmt::format("another hotline run (pid {}) is changing knobs: {} is locked", holder, path),
                              0, "wait for it to finish; only one run may apply fixes at a time");
        return make_error("cannot lock " + path, e);
    }
    std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(*fd, 0) == 0) {
        ssize_t w = pwrite(*fd, pid.data(), pid.size(), 0);
        (void)w;  // the pid is only for the message above
    }
    return *fd;
}

}  // namespace

RunLock::~RunLock() {
    if (fd_ >= 0) close(fd_);  // closing the last descriptor drops the flock
}

Result<RunLock> RunLock::acquire(const std::string& dir) {
    if (auto st = ensure_private_dir(dir); !st) return st.error();
    auto fd = lock_exclusively(dir + "/lock");
    if (!fd) return fd.error();
    return RunLock(*fd);
}

Result<RunLock> RunLock::acquire_file(const std::string& path) {
    auto fd = lock_exclusively(path);
    if (!fd) return fd.error();
    return RunLock(*fd);
}

Result<RunLocks> RunLocks::acquire(const JournalOptions& opts) {
    auto machine = RunLock::acquire_file(opts.machine_lock);
    if (!machine) return machine.error();
    auto dir = RunLock::acquire(opts.dir);
    if (!dir) return dir.error();
    return RunLocks{std::move(*machine), std::move(*dir)};
}

}  // namespace hotline
