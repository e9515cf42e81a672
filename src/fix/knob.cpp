// SPDX-License-Identifier: Apache-2.0
// Knob names, values and filesystem access: names are validated before any
// path is built, opens stay beneath their root (openat2 RESOLVE_BENEATH), and
// netns-scoped I/O runs in a helper thread that setns()es into the namespace.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <cstdlib>
#include <thread>

#include "hotline/fix/journal.hpp"

namespace hotline {

std::string_view to_string(KnobKind k) {
    switch (k) {
    case KnobKind::kSysctl: return "sysctl";
    case KnobKind::kSysfs: return "sysfs";
    case KnobKind::kIrqAffinity: return "irq_affinity";
    }
    return "?";
}

std::string_view to_string(Scope s) { return s == Scope::kNetns ? "netns" : "global"; }

namespace {

bool component_char(char c, KnobKind kind) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') return true;
    // sysfs names carry PCI addresses and the like ("0000:00:1f.2", "rx-0").
    if (kind == KnobKind::kSysfs) return c == '.' || c == ':' || c == ',' || c == '+' || c == '@';
    return c == '.';  // a sysctl in slash form may hold a dotted interface name (eth0.100)
}

Error bad_name(KnobKind kind, std::string_view name, const std::string& why) {
    std::string shown;
    for (char c : name) shown += std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    std::string hint = kind == KnobKind::kSysctl   ? "name a sysctl like net.ipv4.ip_early_demux"
                       : kind == KnobKind::kSysfs ? "name a file relative to /sys, like class/net/eth0/queues/rx-0/rps_cpus"
                                                   : "name an IRQ by its number";
    return make_error(fmt::format("refused {} name \"{}\": {}", to_string(kind), shown, why), EINVAL, hint);
}

}  // namespace

Result<std::string> knob_relpath(KnobKind kind, std::string_view name) {
    if (name.empty()) return bad_name(kind, name, "it is empty");
    if (name.size() > 512) return bad_name(kind, name.substr(0, 64), "it is too long");
    for (char c : name) {
        unsigned char u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || c == ' ') return bad_name(kind, name, "it contains whitespace or control characters");
        if (std::string_view("*?[]{}\\~$`'\"").find(c) != std::string_view::npos)
            return bad_name(kind, name, fmt::format("'{}' is not allowed (no globs or shell syntax)", c));
    }
    if (name.front() == '/') return bad_name(kind, name, "absolute paths are not allowed");
    if (kind == KnobKind::kIrqAffinity) {
        for (char c : name)
            if (!std::isdigit(static_cast<unsigned char>(c))) return bad_name(kind, name, "an IRQ is a number");
        if (name.size() > 6) return bad_name(kind, name, "no such IRQ number");
        return std::string(name) + "/smp_affinity_list";
    }
    // Dotted sysctl names become paths; slash forms are taken as paths.
    bool slash = name.find('/') != std::string_view::npos || kind == KnobKind::kSysfs;
    char sep = slash ? '/' : '.';
    std::string out;
    std::size_t start = 0;
    while (true) {
        std::size_t end = name.find(sep, start);
        std::string_view comp = name.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (comp.empty()) return bad_name(kind, name, "it has an empty component");
        if (comp == "." || comp == "..") return bad_name(kind, name, "\".\" and \"..\" components are not allowed");
        for (char c : comp)
            if (!component_char(c, kind)) return bad_name(kind, name, fmt::format("'{}' is not allowed", c));
        if (comp.find_first_not_of('.') == std::string_view::npos)
            return bad_name(kind, name, "a component made of dots is not allowed");
        if (!out.empty()) out += '/';
        out += comp;
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return out;
}

bool knob_can_be_per_netns(KnobKind kind, std::string_view name) {
    if (kind != KnobKind::kSysctl) return false;  // sysfs and /proc/irq show the mounter's view: the host's
    auto rel = knob_relpath(kind, name);
    return rel && rel->rfind("net/", 0) == 0;
}

std::string knob_display(KnobKind kind, std::string_view name) {
    std::string s(name);
    if (kind == KnobKind::kSysctl && s.find('/') != std::string::npos && s.find('.') == std::string::npos)
        for (auto& c : s)
            if (c == '/') c = '.';
    return s;
}

std::string normalize_value(std::string_view v) {
    std::string out;
    bool space = false;
    for (char c : v) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

std::string NetnsRef::path(const KnobRoots& r) const {
    if (pid > 0) return fmt::format("{}/{}/ns/net", r.proc, pid);
    return r.netns_dir + "/" + name;
}

std::string NetnsRef::describe() const {
    if (pid > 0) return fmt::format("netns of pid {}", pid);
    return "netns " + name;
}

Result<NetnsRef> parse_netns(std::string_view spec) {
    NetnsRef ns;
    if (spec.rfind("pid:", 0) == 0) {
        std::string num(spec.substr(4));
        char* end = nullptr;
        long v = std::strtol(num.c_str(), &end, 10);
        if (num.empty() || *end || v <= 0 || v > INT_MAX)
            return make_error(fmt::format("bad namespace \"{}\"", spec.substr(0, 64)), EINVAL, "use pid:N with a process id");
        ns.pid = pid_t(v);
        return ns;
    }
    bool ok = !spec.empty() && spec.size() <= 255 && spec != "." && spec != "..";
    for (char c : spec) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
    if (!ok)
        return make_error(fmt::format("bad namespace name \"{}\"", spec.substr(0, 64)), EINVAL,
                          "give an `ip netns` name (letters, digits, - _ .) or pid:N");
    ns.name = std::string(spec);
    return ns;
}

namespace {

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

const std::string& root_of(const KnobRoots& r, KnobKind kind) {
    switch (kind) {
    case KnobKind::kSysctl: return r.proc_sys;
    case KnobKind::kSysfs: return r.sys;
    case KnobKind::kIrqAffinity: return r.proc_irq;
    }
    return r.proc_sys;
}

// Opens root/rel without leaving root, even through symlinks.
Result<int> open_beneath(const std::string& root, const std::string& rel, int flags) {
    Fd dir(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) return make_error("cannot open " + root, errno);
    open_how how{};
    how.flags = std::uint64_t(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, dir.get(), rel.c_str(), &how, sizeof how);
    if (fd >= 0) return int(fd);
    int e = errno;
    if (e == EXDEV || e == ELOOP)
        return make_error(fmt::format("refused {}/{}: it resolves outside {}", root, rel, root), e,
                          "knobs must stay beneath their root; a symlink leads elsewhere");
    if (e != ENOSYS) return make_error(fmt::format("cannot open {}/{}", root, rel), e);
    // Kernels before 5.6: resolve by hand and check the prefix.
    char rroot[PATH_MAX], rpath[PATH_MAX];
    if (!realpath(root.c_str(), rroot)) return make_error("cannot resolve " + root, errno);
    std::string full = root + "/" + rel;
    if (!realpath(full.c_str(), rpath)) return make_error("cannot open " + full, errno);
    std::string rr(rroot), rp(rpath);
    if (rp.compare(0, rr.size() + 1, rr + "/") != 0)
        return make_error(fmt::format("refused {}: it resolves outside {}", full, root), EXDEV,
                          "knobs must stay beneath their root; a symlink leads elsewhere");
    int f = open(rpath, flags | O_CLOEXEC);
    if (f < 0) return make_error("cannot open " + full, errno);
    return f;
}

Result<std::string> read_beneath(const std::string& root, const std::string& rel) {
    auto fd = open_beneath(root, rel, O_RDONLY);
    if (!fd) return fd.error();
    Fd f(*fd);
    std::string out;
    char buf[4096];
    while (true) {
        ssize_t n = read(f.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return make_error(fmt::format("cannot read {}/{}", root, rel), errno);
        }
        if (n == 0) break;
        out.append(buf, std::size_t(n));
        if (out.size() > (1u << 20)) return make_error(fmt::format("{}/{} is too large for a knob", root, rel), EFBIG);
    }
    return out;
}

Status write_beneath(const std::string& root, const std::string& rel, const std::string& value) {
    auto fd = open_beneath(root, rel, O_WRONLY);
    if (!fd) return fd.error();
    Fd f(*fd);
    // One write() call: procfs and sysfs parse each write on its own.
    ssize_t n;
    do n = write(f.get(), value.data(), value.size());
    while (n < 0 && errno == EINTR);
    if (n < 0) return make_error(fmt::format("cannot write \"{}\" to {}/{}", value, root, rel), errno);
    if (std::size_t(n) != value.size())
        return make_error(fmt::format("short write of \"{}\" to {}/{}", value, root, rel), EIO);
    return ok_status();
}

// Runs f in a thread that has joined the namespace; the calling thread's
// namespace never changes, whatever f does.
template <class T, class F>
Result<T> in_netns(const KnobRoots& roots, const NetnsRef& ns, F&& f) {
    std::string p = ns.path(roots);
    Fd nsfd(open(p.c_str(), O_RDONLY | O_CLOEXEC));
    if (nsfd.get() < 0)
        return make_error(fmt::format("cannot open {} ({})", ns.describe(), p), errno,
                          ns.pid ? "is the process still running?" : "does `ip netns list` show it?");
    Result<T> result = make_error("netns helper did not run", EINVAL);
    std::thread t([&] {
        if (setns(nsfd.get(), CLONE_NEWNET)) {
            result = make_error("cannot enter " + ns.describe(), errno,
                                errno == EPERM ? "entering a network namespace needs CAP_SYS_ADMIN" : "");
            return;
        }
        result = f();
    });
    t.join();
    return result;
}

}  // namespace

Result<std::string> FsKnobIo::read(KnobKind kind, const std::string& relpath, const std::optional<NetnsRef>& ns) {
    const std::string& root = root_of(roots_, kind);
    if (!ns) return read_beneath(root, relpath);
    return in_netns<std::string>(roots_, *ns, [&] { return read_beneath(root, relpath); });
}

Status FsKnobIo::write(KnobKind kind, const std::string& relpath, const std::string& value,
                       const std::optional<NetnsRef>& ns) {
    const std::string& root = root_of(roots_, kind);
    if (!ns) return write_beneath(root, relpath, value);
    return in_netns<Ok>(roots_, *ns, [&] { return write_beneath(root, relpath, value); });
}

Result<NsIdentity> FsKnobIo::netns_identity(const NetnsRef& ns) {
    struct stat st {};
    std::string p = ns.path(roots_);
    if (stat(p.c_str(), &st)) return make_error(fmt::format("cannot find {} ({})", ns.describe(), p), errno);
    return NsIdentity{std::uint64_t(st.st_dev), std::uint64_t(st.st_ino)};
}

std::optional<NetnsRef> FsKnobIo::find_netns(const NsIdentity& id) {
    auto holds = [&](const NetnsRef& r) {
        auto got = netns_identity(r);
        return got && *got == id;
    };
    namespace fs = std::filesystem;
    std::error_code ec;
    for (fs::directory_iterator it(roots_.netns_dir, ec), end; !ec && it != end; it.increment(ec))
        if (auto r = parse_netns(it->path().filename().string()); r && r->pid == 0 && holds(*r)) return *r;
    for (fs::directory_iterator it(roots_.proc, ec), end; !ec && it != end; it.increment(ec)) {
        std::string n = it->path().filename().string();
        if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 9) continue;
        NetnsRef r{"", pid_t(std::stol(n))};
        if (r.pid > 0 && holds(r)) return r;
    }
    return std::nullopt;
}

Result<std::string> FsKnobIo::boot_id() {
    Fd f(open(roots_.boot_id.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.get() < 0) return make_error("cannot read the boot id from " + roots_.boot_id, errno);
    char buf[128] = {};
    ssize_t n = ::read(f.get(), buf, sizeof buf - 1);
    if (n <= 0) return make_error("cannot read the boot id from " + roots_.boot_id, n < 0 ? errno : EIO);
    std::string id = normalize_value(std::string_view(buf, std::size_t(n)));
    if (id.empty()) return make_error("empty boot id in " + roots_.boot_id, EIO);
    return id;
}

}  // namespace hotline
