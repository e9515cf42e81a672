// SPDX-License-Identifier: Apache-2.0
// Runs a user command next to a recording and reports how it ended.
#include <fcntl.h>
#include <sched.h>
#include <linux/mempolicy.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "hotline/workload/workload.hpp"

namespace hotline {

static int decode_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv) {
    return spawn(argv, SpawnOptions{});
}

namespace {

// The environment the child gets: ours, with opts.env entries added or replaced.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
        std::string_view kv(*e);
        auto key = kv.substr(0, kv.find('=') + 1);
        bool replaced = false;
        for (auto& x : extra)
            if (std::string_view(x).substr(0, x.find('=') + 1) == key) replaced = true;
        if (!replaced) env.emplace_back(kv);
    }
    for (auto& x : extra) env.push_back(x);
    return env;
}

// What the child applies to itself, built before fork.
struct ChildPlacement {
    cpu_set_t cpus;
    // MPOL_BIND's node mask; 1024 nodes, the most a recording describes.
    static constexpr int kMaxNodes = 1024;
    unsigned long nodes[kMaxNodes / (8 * sizeof(unsigned long))] = {};
    bool bind_memory = false;
};

Result<ChildPlacement> child_placement(const SpawnOptions& opts) {
    ChildPlacement p;
    CPU_ZERO(&p.cpus);
    for (int c : opts.cpus) CPU_SET(c, &p.cpus);
    constexpr int kBits = 8 * sizeof(unsigned long);
    for (int n : opts.mem_nodes) {
        if (n < 0 || n >= ChildPlacement::kMaxNodes)
            return make_error("memory node " + std::to_string(n) + " is out of range", EINVAL);
        p.nodes[n / kBits] |= 1ul << (n % kBits);
        p.bind_memory = true;
    }
    return p;
}

}  // namespace

[[noreturn]] static void report_and_exit(int err_fd, int e) {
    ssize_t w = write(err_fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

// The child between fork and exec: only async-signal-safe calls (other threads
// of the parent may hold malloc locks).  An errno before exec goes to err_fd.
[[noreturn]] static void exec_child(const SpawnOptions& opts, char* const* args, char* const* envp,
                                    const ChildPlacement& place, pid_t parent, int err_fd) {
    auto die = [&](int e) { report_and_exit(err_fd, e); };
    if (opts.die_with_parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);  // the owner died before prctl took effect
    }
    if (opts.own_process_group) setpgid(0, 0);
    // The recorder blocks its signals to wait for them; the command gets a clean slate.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    if (opts.netns_fd >= 0 && setns(opts.netns_fd, CLONE_NEWNET)) die(errno);
    if (!opts.cpus.empty() && sched_setaffinity(0, sizeof place.cpus, &place.cpus)) die(errno);
    // Inherited across exec: the command's pages come from these nodes only.
    // maxnode counts one past the last bit the kernel reads (it subtracts one).
    if (place.bind_memory && syscall(SYS_set_mempolicy, MPOL_BIND, place.nodes, ChildPlacement::kMaxNodes + 1))
        die(errno);
    if (opts.stdout_fd >= 0) {
        if (dup2(opts.stdout_fd, 1) < 0) die(errno);
        if (opts.stderr_fd < 0 && dup2(opts.stdout_fd, 2) < 0) die(errno);
    }
    if (opts.stderr_fd >= 0 && dup2(opts.stderr_fd, 2) < 0) die(errno);
    if (opts.env.empty()) execvp(args[0], args);
    else execvpe(args[0], args, envp);
    report_and_exit(err_fd, errno);
}

// The errno the child sent before exec, 0 when exec succeeded (EOF on the pipe).
static int exec_errno(int fd) {
    int e = 0;
    ssize_t n;
    do n = read(fd, &e, sizeof e);
    while (n < 0 && errno == EINTR);
    return n == sizeof e ? e : 0;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv, const SpawnOptions& opts) {
    if (argv.empty()) return make_error("no command given after --", EINVAL);
    // Everything the child needs is built before fork.
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env_store = child_environment(opts.env);
    std::vector<char*> envp;
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    auto place = child_placement(opts);
    if (!place) return place.error();
    pid_t parent = getpid();

    // exec errors travel back over a close-on-exec pipe: EOF means exec succeeded.
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) return make_error("pipe", errno);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return make_error("fork", e);
    }
    if (pid == 0) {
        close(fds[0]);
        exec_child(opts, args.data(), envp.data(), *place, parent, fds[1]);
    }
    close(fds[1]);
    int e = exec_errno(fds[0]);
    close(fds[0]);
    if (e) {
        int st;
        waitpid(pid, &st, 0);
        return make_error("cannot run \"" + argv[0] + "\"", e, e == ENOENT ? "check the command name and PATH" : "");
    }
    return ChildProcess(pid, opts.own_process_group);
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0) {
        signal(SIGTERM);
        wait();
    }
}

bool ChildProcess::poll(int* status) {
    if (pid_ <= 0) return true;
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
        *status = decode_status(st);
        pid_ = -1;
        return true;
    }
    return false;
}

int ChildProcess::wait() {
    if (pid_ <= 0) return 0;
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return decode_status(st);
}

void ChildProcess::signal(int sig) {
    if (pid_ <= 0) return;
    // A process group id equals the leader's pid; the group may outlive the leader.
    if (group_) kill(-pid_, sig);
    else kill(pid_, sig);
}

}  // namespace hotline
