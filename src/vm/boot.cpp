// SPDX-License-Identifier: Apache-2.0
#include "boot.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <regex>
#include <sstream>

#include "digest.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"
#include "hotline/vm/kernels.hpp"
#include "initramfs.hpp"
#include "kernel_cache.hpp"
#include "process.hpp"
#include "qemu.hpp"
#include "watch.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

// The hard limit adds the boot (well under a minute under TCG) to the scripts' own.
constexpr long kBootAllowanceS = 90;
constexpr long kDefaultScriptTimeoutS = 120;
constexpr long kMiB = 1 << 20;

long now_ms() { return static_cast<long>(monotonic_ns() / 1000000); }

// The run's temporary directory: removed with everything in it on every exit path.
class WorkDir {
  public:
    static Result<WorkDir> create() {
        std::string tmpl = vm_temp_base() + "/hotline-vm.XXXXXX";
        if (!mkdtemp(tmpl.data()))
            return make_error("cannot create a temporary directory in " + tmpl, errno);
        WorkDir w(tmpl);
        // hotline removes it after a SIGKILL (run_dir.cpp, remove_abandoned_runs).
        if (auto s = write_file_atomic(tmpl + "/" + kOwnerPidFile, fmt::format("{}\n", getpid()));
            !s)
            return s.error();
        return w;
    }
    WorkDir(WorkDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
    WorkDir& operator=(WorkDir&&) = delete;
    ~WorkDir() {
        std::error_code ec;
        if (!path_.empty()) fs::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }

  private:
    explicit WorkDir(std::string p) : path_(std::move(p)) {}
    std::string path_;
};

// A failure before the guest could run: exit 125 through GuestEnd::kGuestFailed.
GuestEnd failed(const Error& e) {
    fmt::print(stderr, "hotline vm: error: {}\n", e.message());
    return GuestEnd::kGuestFailed;
}

Status require_tools() {
    std::string missing;
    for (const char* t :
         {"qemu-system-x86_64", "ldd", "xz", "zstd", "dpkg-deb", "tar", "apt-get"})
        if (!find_program(t)) missing += (missing.empty() ? "" : " ") + std::string(t);
    if (missing.empty()) return ok_status();
    return make_error("missing tools: " + missing, 0,
                      "Debian: apt-get install qemu-system-x86 busybox-static xz-utils zstd");
}

Result<std::string> busybox() {
    std::vector<std::string> candidates{"/bin/busybox", "/usr/bin/busybox"};
    if (const char* b = std::getenv("HOTLINE_VM_BUSYBOX"); b && *b)
        candidates.insert(candidates.begin(), b);
    for (const auto& c : candidates)
        if (access(c.c_str(), X_OK) == 0) return c;
    return make_error("no busybox found", 0, "Debian: apt-get install busybox-static");
}

// iproute2's ip: the scenarios create network namespaces and veth pairs with
// it, which busybox's ip cannot do.  A link (busybox's) is not it.
Result<std::string> iproute2() {
    std::vector<std::string> candidates{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};
    if (auto p = find_program("ip")) candidates.insert(candidates.begin(), *p);
    for (const auto& c : candidates) {
        struct stat st {};
        if (access(c.c_str(), X_OK) == 0 && lstat(c.c_str(), &st) == 0 && !S_ISLNK(st.st_mode))
            return c;
    }
    return make_error("no iproute2 ip found", 0, "Debian: apt-get install iproute2");
}

// What the scenarios run besides hotline and ip, when the host has them.
std::vector<std::string> scenario_tools() {
    std::vector<std::string> tools;
    std::error_code ec;
    for (const char* t : {"qperf", "iperf3"})
        if (auto p = find_program(t)) tools.push_back(fs::canonical(*p, ec).string());
    return tools;
}

// Copies each script (and the lib/ directory beside the first, which scripts
// may source as /hlvm/tests/lib) into DIR with its plan line; the sum of their timeouts.
Result<long> plan_scripts(const std::string& dir, const BootRun& run) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error("cannot create " + dir, ec.value());
    const fs::path lib = fs::path(run.scripts.front()).parent_path() / "lib";
    std::error_code absent;
    if (fs::is_directory(lib, absent)) fs::copy(lib, dir + "/lib", fs::copy_options::recursive, ec);
    if (ec) return make_error("cannot copy " + lib.string(), ec.value());
    std::string plan;
    long total = 0;
    for (const auto& src : run.scripts) {
        auto text = read_file(src);
        if (!text) return make_error("no script " + src);
        const std::string name = fs::path(src).stem().string();
        const long tmo = script_timeout_s(*text);
        if (auto s = write_file_atomic(dir + "/" + name + ".sh", *text, 0644); !s) return s.error();
        plan += fmt::format("{} {} {}\n", name, tmo, run.stream ? "stream" : "script");
        total += tmo;
    }
    if (auto s = write_file_atomic(dir + "/plan", plan); !s) return s.error();
    return total;
}

std::string file_line(const std::string& path) {
    std::string s = read_file_if_present(path).value_or("");
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

Status write_kernel_env(const BootRun& run, const std::string& kdir, const std::string& accel,
                        long memory) {
    const GuestRequest& r = run.request;
    const KernelAlias* alias = find_kernel_alias(r.kernel);
    std::string env = fmt::format(
        "kernel={}\nsuite={}\ndst_refcount_field={}\nrelease={}\npackage={}\nvmlinux={}\n"
        "accel={}\nshape=cpus={} nodes={} memory={}M\n",
        r.kernel, alias ? alias->suite : "local", alias ? alias->dst_field : "unknown",
        file_line(kdir + "/release"), file_line(kdir + "/package"), kdir + "/vmlinux", accel,
        r.cpus, r.nodes, memory);
    return write_file_atomic(run.out + "/kernel.env", env);
}

// Proof that the guest runs the host's build: the guest hashes its copy too.
Status write_binary_digests(const std::string& out, const std::string& hotline) {
    auto digest = sha256_file(hotline);
    if (!digest) return digest.error();
    return write_file_atomic(
        out + "/host-binaries.sha256",
        fmt::format("{}  {}\n", *digest, fs::path(hotline).filename().string()));
}

Result<std::string> guest_init_body() {
    auto dir = libexec_vm_dir();
    if (!dir) return dir.error();
    return read_file(*dir + "/lib/guest-init.sh");
}

void move_into(const std::string& from, const std::string& to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (!ec) return;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    fs::remove(from, ec);
}

long count_done(const std::string& channel) {
    std::istringstream in(read_file_if_present(channel).value_or(""));
    long n = 0;
    for (std::string line; std::getline(in, line);) n += line.rfind("HLVM-DONE", 0) == 0;
    return n;
}

void show_console_tail(const std::string& log) {
    std::istringstream in(read_file_if_present(log).value_or(""));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    vm_log(fmt::format("last 30 lines of the guest console ({}):", log));
    for (std::size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i)
        fmt::print(stderr, "  | {}\n", lines[i]);
}

bool interrupted(ShutdownSignals& signals) {
    while (int sig = signals.poll())
        if (is_shutdown_signal(sig)) break;
    return signals.received() != 0;
}

struct Timing {
    long start = now_ms(), kernel = 0, initramfs = 0, qemu = 0;
};

struct Prepared {
    std::string kdir, accel, initrd;
    long initramfs_mib = 0;
};

// The kernel, the accelerator, kernel.env, the binaries' digests and the initramfs.
Result<Prepared> prepare(const BootRun& run, const std::string& work, long memory, Timing& t,
                         ShutdownSignals& signals) {
    auto ip = iproute2();
    if (!ip) return ip.error();
    auto box = busybox();
    if (!box) return box.error();
    auto init = guest_init_body();
    if (!init) return init.error();
    std::error_code ec;
    const std::string self = fs::canonical("/proc/self/exe", ec).string();
    if (ec) return make_error("cannot find this hotline binary (/proc/self/exe)", ec.value());
    const std::string moddir = run.request.modules == "none" ? "" : run.request.modules;
    auto kdir = kernel_dir(run.request.kernel, moddir, work, signals);
    if (!kdir) return kdir.error();
    Prepared p{*kdir, choose_accel(*kdir + "/vmlinux", cache_dir()), work + "/initramfs.cpio", 0};
    if (p.accel.substr(0, 3) == "kvm")
        vm_log("accelerator: KVM");
    else
        vm_log(
            "accelerator: TCG (no working KVM): counts, handoffs and layouts are exact; nanosecond "
            "figures are "
            "emulated CPU time, not timings");
    t.kernel = now_ms();
    if (auto s = write_kernel_env(run, p.kdir, p.accel, memory); !s) return s.error();
    if (auto s = write_binary_digests(run.out, self); !s) return s.error();
    std::vector<std::string> bins{self, *ip};
    for (auto& tool : scenario_tools()) bins.push_back(tool);
    InitramfsInput in{*box,           bins,
                      *init,          "HLVM_KERNEL=" + run.request.kernel + "\n",
                      work + "/plan", p.kdir + "/modules"};
    if (auto s = build_initramfs(in, p.initrd); !s) return s.error();
    t.initramfs = now_ms();
    p.initramfs_mib = static_cast<long>((fs::file_size(p.initrd, ec) + kMiB - 1) / kMiB);
    return p;
}

GuestEnd boot_and_judge(const BootRun& run, const std::string& work, const Prepared& p, long memory,
                        long tmo, Timing& t, ShutdownSignals& signals) {
    const GuestRequest& r = run.request;
    const std::string release = file_line(p.kdir + "/release");
    vm_log(fmt::format("booting {} under {} ({} CPUs, {} nodes, {} MiB initramfs, timeout {}s)",
                       release, p.accel.substr(0, p.accel.find(',')), r.cpus, r.nodes,
                       p.initramfs_mib, tmo));
    const std::string qwork = work + "/qemu";
    std::error_code ec;
    fs::create_directories(qwork, ec);
    const LiveConsole live = r.console    ? LiveConsole::kAll
                             : run.stream ? LiveConsole::kStream
                                          : LiveConsole::kOff;
    BootSpec spec{p.kdir + "/vmlinux",       p.initrd, qwork, p.accel,
                  {r.nodes, r.cpus, memory}, tmo,      live};
    auto end = boot_guest(spec, signals);
    t.qemu = now_ms();
    for (const char* f :
         {"console.log", "channel.log", "stalled", "stalled-cpus.txt", "monitor.log"})
        if (fs::exists(qwork + "/" + f)) move_into(qwork + "/" + f, run.out + "/" + f);
    if (!end) return failed(end.error());
    if (end->interrupted) return GuestEnd::kInterrupted;
    const std::string channel = run.out + "/channel.log";
    if (!fs::exists(channel)) (void)write_file_atomic(channel, "");
    (void)write_file_atomic(
        run.out + "/timing.env",
        fmt::format("kernel_fetch_ms={}\ninitramfs_ms={}\nqemu_ms={}\ntotal_ms={}\nqemu_rc={}\n",
                    t.kernel - t.start, t.initramfs - t.kernel, t.qemu - t.initramfs,
                    now_ms() - t.start, end->qemu_rc));
    vm_log(fmt::format("{}: kernel ready in {} ms, initramfs {} ms, QEMU {} ms", release,
                       t.kernel - t.start, t.initramfs - t.kernel, t.qemu - t.initramfs));
    const std::string why = failure_cause(run.out, end->qemu_rc, count_done(channel), tmo);
    if (why.empty()) return GuestEnd::kRan;
    (void)write_file_atomic(run.out + "/failure", why + "\n");
    vm_log("FAILED: " + why);
    show_console_tail(run.out + "/console.log");
    return GuestEnd::kGuestFailed;
}

}  // namespace

std::string failure_cause(const std::string& out, int qemu_rc, long done_markers, long timeout_s) {
    auto console = read_file_if_present(out + "/console.log").value_or("");
    if (auto fatal = fatal_console_line(console)) return "guest kernel died: " + *fatal;
    if (std::string stalled = file_line(out + "/stalled"); !stalled.empty())
        return "hang: " + stalled + "; QEMU was stopped (its vCPUs just before: stalled-cpus.txt)";
    if (qemu_rc == 124)
        return fmt::format("hang: the guest did not finish within {}s and QEMU was stopped",
                           timeout_s);
    if (done_markers != 1)
        return fmt::format("guest never reported HLVM-DONE (QEMU exit status {})", qemu_rc);
    return {};
}

void vm_log(const std::string& text) { fmt::print(stderr, "hotline vm: {}\n", text); }

long min_memory_mib(long initramfs_mib) { return 2 * initramfs_mib + 256; }

std::string memory_problem(long memory_mib, long initramfs_mib) {
    if (memory_mib >= min_memory_mib(initramfs_mib)) return {};
    return fmt::format(
        "--memory {}M is too small for this guest: its {} MiB initramfs needs at least {}M (the "
        "archive and its unpacked files, the kernel, hotline)",
        memory_mib, initramfs_mib, min_memory_mib(initramfs_mib));
}

long script_timeout_s(const std::string& text) {
    static const std::regex line(R"(^# hlvm-timeout: *([0-9]+))");
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        std::smatch m;
        if (std::regex_search(l, m, line) && m[1].length() <= 6) return std::stol(m[1].str());
    }
    return kDefaultScriptTimeoutS;
}

std::string vm_temp_base() {
    static const std::regex plain(R"(^/[A-Za-z0-9._/-]*$)");
    const char* t = std::getenv("TMPDIR");
    std::error_code ec;
    if (t && std::regex_match(t, plain) && fs::is_directory(t, ec)) return t;
    return "/tmp";
}

std::string cache_dir() {
    if (const char* c = std::getenv("HOTLINE_VM_CACHE"); c && *c) return c;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/hotline";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : "/root") + "/.cache/hotline";
}

GuestEnd run_boot(const BootRun& run) {
    ShutdownSignals signals({SIGCHLD});
    auto memory = parse_memory_mib(run.request.memory);
    if (!memory) return failed(memory.error());
    if (auto s = require_tools(); !s) return failed(s.error());
    auto work = WorkDir::create();
    if (!work) return failed(work.error());
    auto budget = plan_scripts(work->path() + "/plan", run);
    if (!budget) return failed(budget.error());
    const long tmo = kBootAllowanceS + *budget;
    Timing t;
    auto prepared = prepare(run, work->path(), *memory, t, signals);
    if (interrupted(signals)) {
        vm_log("interrupted: stopping the guest");
        return GuestEnd::kInterrupted;
    }
    if (!prepared) return failed(prepared.error());
    if (std::string why = memory_problem(*memory, prepared->initramfs_mib); !why.empty()) {
        vm_log("error: " + why);
        return GuestEnd::kUsage;
    }
    return boot_and_judge(run, work->path(), *prepared, *memory, tmo, t, signals);
}

void keep_console_log(const RunDir& dir) {
    const std::string log = dir.path() + "/console.log";
    if (dir.kept()) {
        fmt::print(stderr, "hotline vm: guest console log: {}\n", log);
        return;
    }
    auto text = read_file(log);
    if (!text) return;
    const std::string logs = cache_dir() + "/logs";
    std::error_code ec;
    fs::create_directories(logs, ec);
    const std::string dest = fmt::format("{}/console-{:%Y%m%dT%H%M%S}-{}.log", logs,
                                         fmt::localtime(std::time(nullptr)), getpid());
    if (write_file_atomic(dest, *text))
        fmt::print(stderr, "hotline vm: guest console log kept in {}\n", dest);
}

}  // namespace hotline::vm
