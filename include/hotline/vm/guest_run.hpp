// SPDX-License-Identifier: Apache-2.0
// One `hotline vm` run: a QEMU guest booted with a chosen kernel and NUMA
// shape runs a hotline command line (or test scripts), and its results come
// back to the host.  The booting (kernel cache, initramfs, QEMU started with an
// argv and watched) is src/vm/boot.cpp; everything that comes back from the
// guest is read here (guest_channel.hpp), and the host files it produces go
// through hotline's one output policy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline::vm {

struct GuestRequest {
    std::string kernel;   // debian:ALIAS, or a bzImage, vmlinux or linux-image .deb
    std::string modules;  // modules directory of a kernel image, or "none"
    int nodes = 0;
    int cpus = 0;
    std::string memory;   // "1G", "512M", or MiB
    double timeout_s = 0;
    bool console = false;     // the whole guest console on stderr
    std::string keep;         // keep the run's files in this directory
    std::vector<std::string> scripts;  // shell scripts to run instead of a command line
    std::vector<std::string> args;     // a hotline command line
    bool stdout_to_stderr = false;     // the command's stdout too goes to stderr (ab: stdout is the verdict's)
};

enum class GuestEnd {
    kRan,          // the guest ran everything; `rc` is the command's exit status (0 for scripts)
    kUsage,        // the request cannot run as given (said on stderr)
    kGuestFailed,  // no result: boot, panic, hang past the timeout
    kInterrupted,  // a signal stopped the guest
};

struct GuestOutcome {
    GuestEnd end = GuestEnd::kGuestFailed;
    int rc = 0;
};

// MiB of "1G", "512M" or a plain number of MiB; an error naming the form otherwise.
Result<long> parse_memory_mib(std::string_view text);

// The checks a request passes before anything starts: shape, memory (at least
// kMinMemoryPerNodeMib per node, at most the host's RAM), a kernel image's
// modules, the output paths of the command line.
Status check_guest_request(const GuestRequest& r);

inline constexpr long kMinMemoryPerNodeMib = 128;

// Runs the request; errors are the host's (a directory it cannot create, a
// file it cannot write), the guest's failures are outcomes.
Result<GuestOutcome> run_in_guest(const GuestRequest& r);

}  // namespace hotline::vm
