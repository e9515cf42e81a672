// SPDX-License-Identifier: Apache-2.0
#include "process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hotline/base/util.hpp"

namespace hotline::vm {

namespace {

// Between fork and exec only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* argv, const ChildIo& io, pid_t parent) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // hotline died before the prctl
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    int in = io.in >= 0 ? io.in : null;
    if (in >= 0) dup2(in, STDIN_FILENO);
    if (io.out >= 0) dup2(io.out, STDOUT_FILENO);
    if (io.err >= 0) dup2(io.err, STDERR_FILENO);
    if (!io.cwd.empty() && chdir(io.cwd.c_str()) != 0) _exit(127);
    execvp(argv[0], argv);
    _exit(127);
}

}  // namespace

Result<pid_t> spawn(const std::vector<std::string>& argv, const ChildIo& io) {
    if (argv.empty()) return make_error("spawn: an empty argv");
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return make_error("cannot start " + argv[0], errno);
    if (pid == 0) exec_child(cargv.data(), io, parent);
    setpgid(pid, pid);  // also from here: no race with a kill of the group
    return pid;
}

int exit_code(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return 255;
}

std::optional<int> wait_child(pid_t pid, double seconds) {
    const double end = monotonic_seconds() + seconds;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return exit_code(status);
        if (r < 0 && errno != EINTR) return 255;
        if (seconds >= 0 && monotonic_seconds() >= end) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

int stop_child(pid_t pid, double grace_s) {
    kill(-pid, SIGTERM);
    if (auto rc = wait_child(pid, grace_s)) return *rc;
    kill(-pid, SIGKILL);
    return wait_child(pid, -1).value_or(255);
}

Result<std::string> run_output(const std::vector<std::string>& argv, int err_fd,
                               const std::function<bool()>& stop) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return make_error("pipe", errno);
    int null = err_fd >= 0 ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto pid = spawn(argv, {-1, fds[1], err_fd >= 0 ? err_fd : null, {}});
    close(fds[1]);
    if (null >= 0) close(null);
    if (!pid) {
        close(fds[0]);
        return pid.error();
    }
    std::string out;
    bool stopped = false;
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        if (poll(&p, 1, 200) == 0) {
            if (stop && stop()) {
                stopped = true;
                break;
            }
            continue;
        }
        char buf[65536];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    int rc = stopped ? stop_child(*pid, 5) : wait_child(*pid, -1).value_or(255);
    if (stopped) return make_error(argv[0] + " was stopped");
    if (rc != 0)
        return make_error(fmt::format("{} failed (exit status {})", shell_words(argv), rc));
    return out;
}

Result<int> run_to_end(const std::vector<std::string>& argv, const ChildIo& io,
                       const std::function<bool()>& stop) {
    auto pid = spawn(argv, io);
    if (!pid) return pid.error();
    for (;;) {
        if (auto rc = wait_child(*pid, 0.2)) return *rc;
        if (stop && stop()) {
            stop_child(*pid, 5);
            return make_error(argv[0] + " was stopped");
        }
    }
}

Result<int> run_pipeline(const std::vector<std::string>& first,
                         const std::vector<std::string>& second,
                         const std::function<bool()>& stop) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return make_error("pipe", errno);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto writer = spawn(first, {-1, fds[1], null, {}});
    close(fds[1]);
    auto reader =
        writer ? run_to_end(second, {fds[0], null, null, {}}, stop) : Result<int>(writer.error());
    close(fds[0]);
    if (null >= 0) close(null);
    // The writer ends once its reader has: SIGPIPE, or its own end.
    if (writer && !wait_child(*writer, 5)) stop_child(*writer, 1);
    return reader;
}

std::optional<std::string> find_program(const std::string& name) {
    if (name.find('/') != std::string::npos)
        return access(name.c_str(), X_OK) == 0 ? std::optional<std::string>(name) : std::nullopt;
    const char* env = std::getenv("PATH");
    std::string_view path = env && *env ? env : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
    while (!path.empty()) {
        auto colon = path.find(':');
        std::string dir(path.substr(0, colon));
        path.remove_prefix(colon == std::string_view::npos ? path.size() : colon + 1);
        std::string p = (dir.empty() ? "." : dir) + "/" + name;
        if (access(p.c_str(), X_OK) == 0) return p;
    }
    return std::nullopt;
}

}  // namespace hotline::vm
