// SPDX-License-Identifier: Apache-2.0
// Fault injection for tests only: fails the Nth file creation, write, fsync or
// rename on a matching path, the Nth socket call, or the Nth BPF attach, with a
// chosen errno.  It interposes
// libc's functions (linked into a test binary, or LD_PRELOAD for the real
// hotline), so production code carries no test hooks.
//
// The rule comes from HL_FAULT at start-up or from hl_fault_set():
//   OP:PATTERN:NTH:ERRNO   e.g. "fsync:journal.json:1:EIO", "bpf_attach::3:EPERM"
// OP is one of
//   create   open/openat/creat that may create (O_CREAT, O_TMPFILE) and the
//            mkstemp family; PATTERN matches the path or the template
//   write    write and pwrite
//   fsync, rename (either path matches)
//   send, recv, connect, accept (accept and accept4); PATTERN matches the
//            socket's "socket:[inode]", so an empty one is usual
//   bpf_attach   BPF_LINK_CREATE and BPF_RAW_TRACEPOINT_OPEN; PATTERN ignored
// PATTERN is a substring of the file's path; NTH counts matching calls from 1,
// 0 failing every one.  hl_fault_hits() tells how many calls failed.
//
// glibc's mkostemp and fopen reach open through internal calls that cannot be
// interposed, so the mkstemp family is interposed itself.
// The interposed names are defined here, so none may be a fortified inline.
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <string>

namespace {

struct Rule {
    std::string op, pattern;
    long nth = -1;  // -1: no rule
    int err = 0;
    long seen = 0, hits = 0;
};

std::mutex mu;
Rule rule;

int errno_by_name(const std::string& name) {
    for (int e = 1; e < 200; ++e)
        if (const char* n = strerrorname_np(e); n && name == n) return e;
    return atoi(name.c_str());
}

void parse(const char* spec) {
    rule = Rule{};
    if (!spec || !*spec) return;
    std::string s = spec;
    auto a = s.find(':'), b = s.find(':', a + 1), c = s.find(':', b + 1);
    if (a == std::string::npos || b == std::string::npos || c == std::string::npos) {
        fprintf(stderr, "HL_FAULT: expected OP:PATTERN:NTH:ERRNO, got \"%s\"\n", spec);
        abort();
    }
    rule.op = s.substr(0, a);
    rule.pattern = s.substr(a + 1, b - a - 1);
    rule.nth = atol(s.substr(b + 1, c - b - 1).c_str());
    rule.err = errno_by_name(s.substr(c + 1));
}

// The rule is this process's: programs it runs (ip, the scenario's commands)
// inherit LD_PRELOAD but not the rule.
struct EnvRule {
    EnvRule() {
        parse(getenv("HL_FAULT"));
        unsetenv("HL_FAULT");
    }
} env_rule;

std::string fd_path(int fd) {
    char link[64], buf[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    return n < 0 ? std::string() : std::string(buf, size_t(n));
}

// Whether this call fails; sets errno when it does.
bool should_fail(const char* op, const std::string& path, const std::string& path2 = "") {
    std::lock_guard<std::mutex> g(mu);
    if (rule.nth < 0 || rule.op != op) return false;
    bool match = rule.pattern.empty() || path.find(rule.pattern) != std::string::npos ||
                 (!path2.empty() && path2.find(rule.pattern) != std::string::npos);
    if (!match) return false;
    ++rule.seen;
    if (rule.nth != 0 && rule.seen != rule.nth) return false;
    ++rule.hits;
    errno = rule.err;
    return true;
}

bool armed(const char* op) {
    std::lock_guard<std::mutex> g(mu);
    return rule.nth >= 0 && rule.op == op;
}

template <class F>
F real(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// --- file creation -----------------------------------------------------------------------

bool creates(int flags) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

// open's mode argument is there only when the flags may create a file.
mode_t mode_arg(int flags, va_list ap) {
    return creates(flags) ? mode_t(va_arg(ap, int)) : 0;
}

bool create_fails(int flags, const char* path) {
    return creates(flags) && armed("create") && should_fail("create", path ? path : "");
}


}  // namespace

extern "C" {

void hl_fault_set(const char* spec) {
    std::lock_guard<std::mutex> g(mu);
    parse(spec);
}

long hl_fault_hits() {
    std::lock_guard<std::mutex> g(mu);
    return rule.hits;
}

// Fortified callers reach __open_2 and friends, which never create (no mode).
#define HL_OPEN(name)                                                            \
    int name(const char* path, int flags, ...) {                                 \
        static auto next = real<int (*)(const char*, int, ...)>(#name);         \
        va_list ap;                                                              \
        va_start(ap, flags);                                                     \
        mode_t mode = mode_arg(flags, ap);                                       \
        va_end(ap);                                                              \
        if (create_fails(flags, path)) return -1;                                \
        return next(path, flags, mode);                                          \
    }
#define HL_OPENAT(name)                                                          \
    int name(int dirfd, const char* path, int flags, ...) {                      \
        static auto next = real<int (*)(int, const char*, int, ...)>(#name);    \
        va_list ap;                                                              \
        va_start(ap, flags);                                                     \
        mode_t mode = mode_arg(flags, ap);                                       \
        va_end(ap);                                                              \
        if (create_fails(flags, path)) return -1;                                \
        return next(dirfd, path, flags, mode);                                   \
    }
HL_OPEN(open)
HL_OPEN(open64)
HL_OPENAT(openat)
HL_OPENAT(openat64)

int creat(const char* path, mode_t mode) {
    static auto next = real<int (*)(const char*, mode_t)>("creat");
    if (create_fails(O_CREAT, path)) return -1;
    return next(path, mode);
}

int creat64(const char* path, mode_t mode) {
    static auto next = real<int (*)(const char*, mode_t)>("creat64");
    if (create_fails(O_CREAT, path)) return -1;
    return next(path, mode);
}

// The template names the file (its XXXXXX still unfilled); on failure it is
// left as given, as glibc leaves it.
int mkstemp(char* tmpl) {
    static auto next = real<int (*)(char*)>("mkstemp");
    if (create_fails(O_CREAT, tmpl)) return -1;
    return next(tmpl);
}

int mkostemp(char* tmpl, int flags) {
    static auto next = real<int (*)(char*, int)>("mkostemp");
    if (create_fails(O_CREAT, tmpl)) return -1;
    return next(tmpl, flags);
}

int mkstemps(char* tmpl, int suffixlen) {
    static auto next = real<int (*)(char*, int)>("mkstemps");
    if (create_fails(O_CREAT, tmpl)) return -1;
    return next(tmpl, suffixlen);
}

int mkostemps(char* tmpl, int suffixlen, int flags) {
    static auto next = real<int (*)(char*, int, int)>("mkostemps");
    if (create_fails(O_CREAT, tmpl)) return -1;
    return next(tmpl, suffixlen, flags);
}

// --- sockets (the generators' connections) ---------------------------------------------------

ssize_t send(int fd, const void* buf, size_t n, int flags) {
    static auto next = real<ssize_t (*)(int, const void*, size_t, int)>("send");
    if (armed("send") && should_fail("send", fd_path(fd))) return -1;
    return next(fd, buf, n, flags);
}

ssize_t recv(int fd, void* buf, size_t n, int flags) {
    static auto next = real<ssize_t (*)(int, void*, size_t, int)>("recv");
    if (armed("recv") && should_fail("recv", fd_path(fd))) return -1;
    return next(fd, buf, n, flags);
}

// What a fortified recv with a buffer of known size calls.
ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags) {
    static auto next = real<ssize_t (*)(int, void*, size_t, size_t, int)>("__recv_chk");
    if (armed("recv") && should_fail("recv", fd_path(fd))) return -1;
    return next(fd, buf, n, buflen, flags);
}

int connect(int fd, const struct sockaddr* addr, socklen_t len) {
    static auto next = real<int (*)(int, const struct sockaddr*, socklen_t)>("connect");
    if (armed("connect") && should_fail("connect", fd_path(fd))) return -1;
    return next(fd, addr, len);
}

int accept(int fd, struct sockaddr* addr, socklen_t* len) {
    static auto next = real<int (*)(int, struct sockaddr*, socklen_t*)>("accept");
    if (armed("accept") && should_fail("accept", fd_path(fd))) return -1;
    return next(fd, addr, len);
}

int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
    static auto next = real<int (*)(int, struct sockaddr*, socklen_t*, int)>("accept4");
    if (armed("accept") && should_fail("accept", fd_path(fd))) return -1;
    return next(fd, addr, len, flags);
}

// --- writes ----------------------------------------------------------------------------------

ssize_t write(int fd, const void* buf, size_t n) {
    static auto next = real<ssize_t (*)(int, const void*, size_t)>("write");
    if (armed("write") && should_fail("write", fd_path(fd))) return -1;
    return next(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
    static auto next = real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
    if (armed("write") && should_fail("write", fd_path(fd))) return -1;
    return next(fd, buf, n, off);
}

int fsync(int fd) {
    static auto next = real<int (*)(int)>("fsync");
    if (armed("fsync") && should_fail("fsync", fd_path(fd))) return -1;
    return next(fd);
}

int rename(const char* from, const char* to) {
    static auto next = real<int (*)(const char*, const char*)>("rename");
    if (armed("rename") && should_fail("rename", from, to)) return -1;
    return next(from, to);
}

// libbpf makes its bpf() calls through syscall(2).
long syscall(long nr, ...) {
    static auto next = real<long (*)(long, ...)>("syscall");
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (long& x : a) x = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_bpf && armed("bpf_attach")) {
        int cmd = int(a[0]);
        // A link_create on fd -1 is libbpf probing a feature, not an attach.
        auto* attr = reinterpret_cast<const union bpf_attr*>(a[1]);
        bool attach = cmd == BPF_RAW_TRACEPOINT_OPEN ||
                      (cmd == BPF_LINK_CREATE && attr && int(attr->link_create.target_fd) != -1);
        if (attach && should_fail("bpf_attach", "")) return -1;
    }
    return next(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

}  // extern "C"
