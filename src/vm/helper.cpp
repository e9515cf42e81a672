// SPDX-License-Identifier: Apache-2.0
#include "helper.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

namespace {

// $HOTLINE_VM_HELPER, else installed beside the binary
// (PREFIX/libexec/hotline/vm), else the source tree the binary was built from.
Result<std::string> helper_path() {
    if (const char* env = std::getenv("HOTLINE_VM_HELPER"); env && *env) return std::string(env);
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec) candidates.push_back(self.parent_path().parent_path() / "libexec/hotline/vm/hotline-vm");
    candidates.push_back(fs::path(HOTLINE_SOURCE_DIR) / "libexec/vm/hotline-vm");
    for (auto& c : candidates)
        if (access(c.c_str(), X_OK) == 0) return c.string();
    return make_error(fmt::format("the VM helper is not installed (looked for {} and {}): set HOTLINE_VM_HELPER",
                                  candidates.front().string(), candidates.back().string()));
}

Result<std::vector<std::string>> helper_argv(const HelperRun& run) {
    const GuestRequest& r = run.request;
    auto helper = helper_path();
    if (!helper) return helper.error();
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return make_error("cannot find this hotline binary (/proc/self/exe)", ec.value());
    auto mib = parse_memory_mib(r.memory);
    if (!mib) return mib.error();
    std::vector<std::string> argv{*helper, "--hotline", self.string(), "--kernel", r.kernel,
                                  "--nodes", std::to_string(r.nodes), "--cpus", std::to_string(r.cpus),
                                  "--memory", std::to_string(*mib), "--timeout",
                                  std::to_string(static_cast<long>(r.timeout_s)), "--out", run.out};
    if (!r.modules.empty() && r.modules != "none") argv.insert(argv.end(), {"--modules", r.modules});
    if (r.console) argv.push_back("--console");
    if (run.stream) argv.push_back("--stream");
    for (const auto& s : run.scripts) argv.insert(argv.end(), {"--script", s});
    return argv;
}

[[noreturn]] void exec_helper(const std::vector<std::string>& argv, bool stdout_to_stderr, pid_t parent) {
    // Its own process group: a terminal's Ctrl-C reaches hotline, which passes
    // it on once (a second SIGINT would cut the helper's cleanup short).
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(kHelperInterrupted);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
}

GuestEnd end_of(int status, bool signalled) {
    if (signalled || (WIFEXITED(status) && WEXITSTATUS(status) == kHelperInterrupted) || WIFSIGNALED(status))
        return GuestEnd::kInterrupted;
    if (!WIFEXITED(status)) return GuestEnd::kGuestFailed;
    switch (WEXITSTATUS(status)) {
        case 0: return GuestEnd::kRan;
        case kHelperUsage: return GuestEnd::kUsage;
        default: return GuestEnd::kGuestFailed;
    }
}

std::string cache_dir() {
    if (const char* c = std::getenv("HOTLINE_VM_CACHE"); c && *c) return c;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/hotline";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : "/root") + "/.cache/hotline";
}

}  // namespace

GuestEnd run_helper(const HelperRun& run) {
    auto argv = helper_argv(run);
    if (!argv) {
        fmt::print(stderr, "hotline vm: error: {}\n", argv.error().message());
        return GuestEnd::kUsage;
    }
    ShutdownSignals signals({SIGCHLD});
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fmt::print(stderr, "hotline vm: error: fork failed: {}\n", std::strerror(errno));
        return GuestEnd::kGuestFailed;
    }
    if (pid == 0) exec_helper(*argv, run.request.stdout_to_stderr, parent);
    int status = 0;
    bool signalled = false;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        int sig = signals.wait(1.0);
        if (!is_shutdown_signal(sig) || signalled) continue;
        signalled = true;
        kill(pid, sig);  // the helper stops the guest and removes its files
    }
    return end_of(status, signalled);
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
    const std::string dest = fmt::format("{}/console-{:%Y%m%dT%H%M%S}-{}.log", logs, fmt::localtime(std::time(nullptr)),
                                         getpid());
    if (write_file_atomic(dest, *text)) fmt::print(stderr, "hotline vm: guest console log kept in {}\n", dest);
}

}  // namespace hotline::vm
