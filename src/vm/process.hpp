// SPDX-License-Identifier: Apache-2.0
// The child processes of a guest run (QEMU and the tools the kernel cache and
// the initramfs need): always an argv, never a shell command line; each in its
// own process group, so a terminal's Ctrl-C reaches hotline alone, which stops
// them; each killed with hotline (PR_SET_PDEATHSIG SIGKILL).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline::vm {

// Where a child's standard streams go: an open fd, or -1 for /dev/null
// (stdin) and hotline's own (stdout, stderr).
struct ChildIo {
    int in = -1;
    int out = -1;
    int err = -1;
    std::string cwd;  // its working directory, when not empty
};

// Started with the calling thread as its parent: PR_SET_PDEATHSIG fires when
// that thread ends, so children are spawned from the main thread only.
Result<pid_t> spawn(const std::vector<std::string>& argv, const ChildIo& io = {});

// An exit as a shell reports it: the exit code, or 128 + the signal.
int exit_code(int wait_status);

// Waits for PID up to `seconds` (forever when negative); the exit code, or
// nothing when it still runs.
std::optional<int> wait_child(pid_t pid, double seconds);

// SIGTERM to the child's process group, SIGKILL after `grace_s`; its exit code.
int stop_child(pid_t pid, double grace_s);

// Runs ARGV to its end; its stdout, or an error naming the command and its
// exit status.  Stderr goes to `err_fd` (-1: /dev/null).  STOP, asked every
// 200 ms, ends the child early (an error).
Result<std::string> run_output(const std::vector<std::string>& argv, int err_fd = -1,
                               const std::function<bool()>& stop = {});

// Runs ARGV with IO to its end; its exit code, or an error when STOP ended it.
Result<int> run_to_end(const std::vector<std::string>& argv, const ChildIo& io,
                       const std::function<bool()>& stop);

// `FIRST | SECOND`: two children and a pipe; SECOND's exit code.
Result<int> run_pipeline(const std::vector<std::string>& first,
                         const std::vector<std::string>& second, const std::function<bool()>& stop);

// The executable NAME on PATH, or nothing.
std::optional<std::string> find_program(const std::string& name);

}  // namespace hotline::vm
