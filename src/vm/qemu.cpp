// SPDX-License-Identifier: Apache-2.0
#include "qemu.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "hotline/base/util.hpp"
#include "process.hpp"
#include "watch.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kQemu = "qemu-system-x86_64";
constexpr double kProbeSeconds = 15;

bool kvm_usable() {
    struct stat st {};
    if (stat("/dev/kvm", &st) != 0 || !S_ISCHR(st.st_mode)) return false;
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    close(fd);
    return true;
}

// A probe boot under KVM: true when the kernel's banner shows within 15 s.
bool kvm_boots(const std::string& vmlinux) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto pid = spawn({kQemu, "-accel", "kvm", "-cpu", "host", "-m", "256M", "-nodefaults",
                      "-display", "none", "-no-reboot", "-serial", "stdio", "-kernel", vmlinux,
                      "-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1"},
                     {-1, fds[1], null, {}});
    close(fds[1]);
    if (null >= 0) close(null);
    std::string seen;
    const double end = monotonic_seconds() + kProbeSeconds;
    bool banner = false;
    while (pid && !banner && monotonic_seconds() < end) {
        pollfd p{fds[0], POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        char buf[4096];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0) break;
        seen.append(buf, static_cast<std::size_t>(n));
        banner = seen.find("Linux version") != std::string::npos;
        if (seen.size() > (1u << 20)) seen.erase(0, seen.size() - 64);
    }
    close(fds[0]);
    if (pid) stop_child(*pid, 2);
    return banner;
}

// The console filter: every line into console.log, some to stderr (ConsoleRoute).
void filter_console(int fd, const std::string& log_path, LiveConsole live) {
    std::ofstream log(log_path, std::ios::binary | std::ios::app);
    ConsoleRoute route(live);
    std::string pending;
    auto emit = [&](std::string_view line) {
        log << line << '\n';
        log.flush();
        if (route.shown(line)) {
            std::fwrite(line.data(), 1, line.size(), stderr);
            std::fputc('\n', stderr);
            std::fflush(stderr);
        }
    };
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] == '\r') continue;
            if (buf[i] != '\n') {
                pending += buf[i];
                continue;
            }
            emit(pending);
            pending.clear();
        }
    }
    if (!pending.empty()) emit(pending);
    close(fd);
}

std::vector<std::string> qemu_argv(const BootSpec& s) {
    std::vector<std::string> argv{kQemu};
    for (auto& a : machine_args(s.accel, s.shape)) argv.push_back(std::move(a));
    for (const char* a : {"-kernel"}) argv.push_back(a);
    argv.insert(argv.end(), {s.vmlinux, "-initrd", s.initrd, "-append", kKernelCmdline, "-serial",
                             "stdio", "-serial", "file:" + s.work + "/channel.log", "-monitor",
                             "pipe:" + s.work + "/monitor"});
    return argv;
}

}  // namespace

BootEnd watch_guest(pid_t pid, const BootSpec& spec, ShutdownSignals& signals) {
    const double start = monotonic_seconds();
    const double deadline = start + static_cast<double>(spec.timeout_s);
    const double poll_s = watch_poll_s();
    double next_poll = start + poll_s;
    ProgressWatch progress(step_limit_base_s(), start);
    const std::string channel = spec.work + "/channel.log";
    for (;;) {
        if (auto rc = wait_child(pid, 0)) return {*rc, false};
        const double now = monotonic_seconds();
        if (now >= deadline) {
            stop_child(pid, 5);
            return {124, false};
        }
        if (!progress.done() && now >= next_poll) {
            next_poll = now + poll_s;
            auto text = read_file_if_present(channel);
            if (auto why = progress.check(text.value_or(""), now)) {
                (void)write_file_atomic(spec.work + "/stalled", *why + "\n");
                (void)write_file_atomic(spec.work + "/stalled-cpus.txt",
                                        dump_cpus(spec.work + "/monitor", spec.shape.cpus));
                return {stop_child(pid, 10), false};
            }
        }
        const int sig = signals.wait(std::clamp(std::min(next_poll, deadline) - now, 0.01, 0.5));
        if (is_shutdown_signal(sig)) {
            fmt::print(stderr, "hotline vm: interrupted: stopping the guest\n");
            return {stop_child(pid, 10), true};
        }
    }
}

std::string choose_accel(const std::string& vmlinux, const std::string& cache) {
    if (const char* a = std::getenv("HOTLINE_VM_ACCEL"); a && *a) return a;
    if (!kvm_usable()) return kTcgAccel;
    const std::string boot{
        trim(read_file_if_present("/proc/sys/kernel/random/boot_id").value_or("unknown"))};
    const std::string memo = cache + "/kvm-probe";
    auto text = read_file_if_present(memo).value_or("");
    if (text.rfind(boot + "\n", 0) != 0) {
        std::error_code ec;
        fs::create_directories(cache, ec);
        text = boot + "\n" + (kvm_boots(vmlinux) ? "kvm" : "tcg") + "\n";
        (void)write_file_atomic(memo, text);
    }
    // A memo of an older harness says which TCG; the choice is kTcgAccel's.
    return text.substr(boot.size() + 1) == "kvm\n" ? "kvm" : kTcgAccel;
}

std::vector<std::string> machine_args(const std::string& accel, const GuestShape& shape) {
    const int per_node = shape.cpus / shape.nodes;
    const long mem = shape.memory_mib / shape.nodes;
    const bool kvm = accel.substr(0, accel.find(',')) == "kvm";
    std::vector<std::string> args{
        "-accel",
        accel,
        "-cpu",
        kvm ? "host" : "max",
        "-m",
        fmt::format("{}M", mem * shape.nodes),
        "-smp",
        fmt::format("{},sockets={},cores={},threads=1", shape.cpus, shape.nodes, per_node),
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot"};
    for (int n = 0; n < shape.nodes; ++n) {
        args.insert(args.end(),
                    {"-object", fmt::format("memory-backend-ram,id=m{},size={}M", n, mem), "-numa",
                     fmt::format("node,nodeid={},cpus={}-{},memdev=m{}", n, n * per_node,
                                 (n + 1) * per_node - 1, n)});
    }
    return args;
}

bool ConsoleRoute::shown(std::string_view line) {
    static const std::regex kernel_line(R"(^\[ *[0-9]+\.[0-9]+\])");
    if (live_ == LiveConsole::kAll) return true;
    auto starts = [&](std::string_view p) { return line.substr(0, p.size()) == p; };
    if (starts("hlvm: stream-start")) {
        streaming_ = true;
        return false;
    }
    if (starts("hlvm: stream-end")) {
        streaming_ = false;
        return false;
    }
    if (starts("hlvm: guest ") && live_ == LiveConsole::kStream) return true;
    return streaming_ && !std::regex_search(line.begin(), line.end(), kernel_line);
}

Result<BootEnd> boot_guest(const BootSpec& spec, ShutdownSignals& signals) {
    const std::string mon = spec.work + "/monitor";
    for (const char* end : {".in", ".out"}) {
        std::string fifo = mon + end;
        unlink(fifo.c_str());
        if (mkfifo(fifo.c_str(), 0600) != 0) return make_error("cannot create " + fifo, errno);
    }
    fs::remove(spec.work + "/console.log");
    fs::remove(spec.work + "/channel.log");
    fs::remove(spec.work + "/stalled");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return make_error("pipe", errno);
    auto pid = spawn(qemu_argv(spec), {-1, fds[1], fds[1], {}});
    close(fds[1]);
    std::thread filter(filter_console, fds[0], spec.work + "/console.log", spec.live);
    BootEnd end{255, false};
    if (pid) end = watch_guest(*pid, spec, signals);
    filter.join();  // ends when QEMU's side of the pipe closes
    for (const char* e : {".in", ".out"}) unlink((mon + e).c_str());
    if (!pid) return pid.error();
    return end;
}

}  // namespace hotline::vm
