// Runs a user command next to a recording and reports how it ended.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hotline/workload.hpp"

namespace hotline {

static int decode_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv) {
    if (argv.empty()) return make_error("no command given after --", EINVAL);
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
        // The recorder blocks its signals to wait for them; the command gets a clean slate.
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGHUP, SIG_DFL);
        ::signal(SIGPIPE, SIG_DFL);
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        int e = errno;
        ssize_t w = write(fds[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(fds[1]);
    int e = 0;
    ssize_t n;
    do n = read(fds[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    if (n == sizeof e) {
        int st;
        waitpid(pid, &st, 0);
        return make_error("cannot run \"" + argv[0] + "\"", e, "check the command name and PATH");
    }
    return ChildProcess(pid);
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0) {
        kill(pid_, SIGTERM);
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
    if (pid_ > 0) kill(pid_, sig);
}

}  // namespace hotline
