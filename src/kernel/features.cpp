// SPDX-License-Identifier: Apache-2.0
// Machine facts for `hotline probe` and the planner: release, BTF, lockdown,
// capabilities, tracefs, kprobe support and a hardware PMU.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hotline/kernel/kernel.hpp"
#include "hotline/base/util.hpp"
#include "hotline/base/perf_event.hpp"

namespace hotline {

namespace fs = std::filesystem;

KernelBtf::~KernelBtf() {
    if (btf_) btf__free(btf_);
}

KernelBtf& KernelBtf::operator=(KernelBtf&& o) noexcept {
    if (this != &o) {
        if (btf_) btf__free(btf_);
        btf_ = std::exchange(o.btf_, nullptr);
    }
    return *this;
}

namespace {

// Parses raw BTF from a read-only mapping of the file (kernels since 6.16 map
// /sys/kernel/btf/vmlinux): no read buffer of its size to fault in and copy from.
struct btf* parse_mapped(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st {};
    void* p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < INT32_MAX)
        p = mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return nullptr;
    struct btf* b = btf__new(p, std::uint32_t(st.st_size));  // copies what it keeps
    munmap(p, std::size_t(st.st_size));
    return b;
}

}  // namespace

Result<KernelBtf> KernelBtf::load(const std::string& path) {
    struct btf* b = parse_mapped(path);
    if (!b) b = btf__parse(path.c_str(), nullptr);  // not mappable, or ELF
    if (!b) return make_error("cannot load kernel BTF from " + path, errno,
                              "hotline needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
    KernelBtf k;
    k.btf_ = b;
    return k;
}

std::map<std::string, int> KernelBtf::func_ids(const std::vector<std::string>& names) const {
    std::vector<int> found(names.size(), 0);
    if (btf_ && !names.empty()) {
        // One walk over every type for all names: each name lookup is a walk of its own.
        std::size_t left = names.size();
        int n = int(btf__type_cnt(btf_));
        for (int id = 1; id < n && left; ++id) {
            const struct btf_type* t = btf__type_by_id(btf_, id);
            if (!btf_is_func(t)) continue;
            const char* tn = btf__name_by_offset(btf_, t->name_off);
            for (std::size_t i = 0; i < names.size(); ++i)
                if (!found[i] && tn[0] == names[i][0] && names[i] == tn) {
                    found[i] = id;
                    --left;
                }
        }
    }
    std::map<std::string, int> ids;
    for (std::size_t i = 0; i < names.size(); ++i) ids[names[i]] = found[i];
    return ids;
}

int KernelBtf::func_id(std::string_view name) const {
    if (!btf_) return 0;
    std::string n(name);
    int id = btf__find_by_name_kind(btf_, n.c_str(), BTF_KIND_FUNC);
    return id > 0 ? id : 0;
}

int probe_tracing_load(int btf_func_id, bool exit, std::string* log) {
    const bpf_insn insns[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},                   // return r0
    };
    char buf[4096] = {};
    LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = exit ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY,
                .attach_btf_id = std::uint32_t(btf_func_id), .log_level = 1, .log_size = sizeof buf,
                .log_buf = buf);
    int fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, exit ? "hl_probe_fexit" : "hl_probe_fentry", "GPL", insns, 2, &o);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    int err = -errno;
    if (log && (err == -EINVAL || err == -EACCES)) {
        std::string_view v(buf, strnlen(buf, sizeof buf));
        while (!v.empty() && v.back() == '\n') v.remove_suffix(1);
        *log = std::string(v.substr(v.size() > 600 ? v.size() - 600 : 0));
    }
    return err;
}

bool KernelBtf::has_member(std::string_view type, std::string_view member) const {
    if (!btf_) return false;
    std::string tn(type);
    int id = btf__find_by_name_kind(btf_, tn.c_str(), BTF_KIND_STRUCT);
    if (id <= 0) return false;
    const struct btf_type* t = btf__type_by_id(btf_, id);
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m)
        if (member == btf__name_by_offset(btf_, m->name_off)) return true;
    return false;
}

std::string KernelBtf::member_type(std::string_view type, std::string_view member) const {
    if (!btf_) return {};
    std::string tn(type);
    int id = btf__find_by_name_kind(btf_, tn.c_str(), BTF_KIND_STRUCT);
    if (id <= 0) return {};
    const struct btf_type* t = btf__type_by_id(btf_, id);
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
        if (member != btf__name_by_offset(btf_, m->name_off)) continue;
        const struct btf_type* mt = btf__type_by_id(btf_, m->type);
        while (mt && (btf_is_typedef(mt) || btf_is_const(mt) || btf_is_volatile(mt))) mt = btf__type_by_id(btf_, mt->type);
        if (!mt || !(btf_is_struct(mt) || btf_is_union(mt))) return {};
        return btf__name_by_offset(btf_, mt->name_off);
    }
    return {};
}

namespace {

struct CapName {
    int cap;
    const char* name;
    bool needed;
};
constexpr CapName kCaps[] = {
    {21, "CAP_SYS_ADMIN", false}, {39, "CAP_BPF", true},          {38, "CAP_PERFMON", true},
    {12, "CAP_NET_ADMIN", false}, {24, "CAP_SYS_RESOURCE", false},
};

// Reads the lockdown file from a private mount namespace so that securityfs
// is never mounted on the host's view of the system.
std::string lockdown_via_private_mount() {
    int fds[2];
    if (pipe(fds)) return "unknown (pipe failed)";
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return "unknown (fork failed)";
    }
    if (pid == 0) {
        close(fds[0]);
        std::string out = "unknown (securityfs not mounted)";
        if (unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
            mount("securityfs", "/sys/kernel/security", "securityfs", 0, nullptr) == 0) {
            int fd = open("/sys/kernel/security/lockdown", O_RDONLY);
            if (fd >= 0) {
                char buf[256] = {};
                ssize_t n = read(fd, buf, sizeof buf - 1);
                if (n > 0) out = std::string(buf, n);
                close(fd);
            } else {
                out = "none (no lockdown LSM)";
            }
        }
        ssize_t w = write(fds[1], out.data(), out.size());
        (void)w;
        _exit(0);
    }
    close(fds[1]);
    std::string text;
    char buf[256];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, n);
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (text.rfind("unknown", 0) == 0 || text.rfind("none (", 0) == 0) return text;
    return parse_lockdown(text);
}

bool hardware_pmu_present() {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    int fd = open_perf_event(attr, 0, -1, 0);
    if (fd < 0) return false;
    close(fd);
    return true;
}

}  // namespace

std::string parse_lockdown(std::string_view text) {
    auto lb = text.find('[');
    auto rb = text.find(']');
    if (lb == std::string_view::npos || rb == std::string_view::npos || rb < lb)
        return "unknown (unreadable lockdown state)";
    return std::string(text.substr(lb + 1, rb - lb - 1));
}

bool Capabilities::can_bpf() const {
    auto has = [&](const char* n) {
        for (auto& h : held)
            if (h == n) return true;
        return false;
    };
    return has("CAP_BPF") || has("CAP_SYS_ADMIN");
}

bool Capabilities::can_perfmon() const {
    for (auto& h : held)
        if (h == "CAP_PERFMON" || h == "CAP_SYS_ADMIN") return true;
    return false;
}

Capabilities read_capabilities() {
    Capabilities c;
    c.root = geteuid() == 0;
    __user_cap_header_struct hdr{};
    hdr.version = _LINUX_CAPABILITY_VERSION_3;
    hdr.pid = 0;
    __user_cap_data_struct data[2]{};
    bool ok = syscall(SYS_capget, &hdr, data) == 0;
    bool sys_admin = false;
    for (auto& cn : kCaps) {
        bool held = ok && (data[cn.cap / 32].effective & (1u << (cn.cap % 32)));
        if (held) c.held.push_back(cn.name);
        if (cn.cap == 21) sys_admin = held;
    }
    for (auto& cn : kCaps) {
        if (!cn.needed) continue;
        bool held = false;
        for (auto& h : c.held) held |= h == cn.name;
        if (!held && !sys_admin) c.missing.push_back(cn.name);
    }
    return c;
}

KernelInfo probe_kernel(const std::string& root) {
    KernelInfo k;
    struct utsname u {};
    if (uname(&u) == 0) {
        k.release = u.release;
        k.machine = u.machine;
    }
    fs::path r = root.empty() ? fs::path("/") : fs::path(root);
    std::error_code ec;
    k.btf = fs::exists(r / "sys/kernel/btf/vmlinux", ec);
    if (auto t = read_file_if_present(r / "sys/kernel/security/lockdown")) {
        k.lockdown = parse_lockdown(*t);
    } else if (root.empty() && geteuid() == 0) {
        k.lockdown = lockdown_via_private_mount();
    } else {
        k.lockdown = "unknown (securityfs not mounted)";
    }
    if (auto m = read_file_if_present(r / "proc/mounts")) k.tracefs_mounted = m->find(" tracefs ") != std::string::npos;
    k.kprobes = fs::exists(r / "sys/bus/event_source/devices/kprobe", ec);
    k.pmu = root.empty() ? hardware_pmu_present() : fs::exists(r / "sys/bus/event_source/devices/cpu/events/cpu-cycles", ec);
    k.caps = read_capabilities();
    return k;
}

}  // namespace hotline
