// Fault injection for tests only: fails the Nth write, fsync or rename on a
// matching path, or the Nth BPF attach, with a chosen errno.  It interposes
// libc's functions (linked into a test binary, or LD_PRELOAD for the real
// hotline), so production code carries no test hooks.
//
// The rule comes from HL_FAULT at start-up or from hl_fault_set():
//   OP:PATTERN:NTH:ERRNO   e.g. "fsync:journal.json:1:EIO", "bpf_attach::3:EPERM"
// OP is write (write and pwrite), fsync, rename or bpf_attach
// (BPF_LINK_CREATE and BPF_RAW_TRACEPOINT_OPEN); PATTERN is a substring of the file's path (of
// either path for rename; ignored for bpf_attach); NTH counts matching calls
// from 1, 0 failing every one.  hl_fault_hits() tells how many calls failed.
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
