// SPDX-License-Identifier: Apache-2.0
// The shipped helper that boots the guest (libexec/vm/hotline-vm): found,
// started with an argv in its own process group, tied to hotline's life
// (PR_SET_PDEATHSIG), and stopped through its own cleanup on a signal.
#pragma once

#include <string>
#include <vector>

#include "hotline/vm/guest_run.hpp"
#include "run_dir.hpp"

namespace hotline::vm {

struct HelperRun {
    const GuestRequest& request;
    std::string out;                   // the run directory
    std::vector<std::string> scripts;  // what the guest runs
    bool stream = false;               // the scripts' stderr shown as it comes, stdout sent back
};

// The helper's own exit statuses (libexec/vm/hotline-vm).
inline constexpr int kHelperUsage = 2;
inline constexpr int kHelperGuestFailed = 125;
inline constexpr int kHelperInterrupted = 130;

// Runs the helper to its end: kRan when the guest ran the whole plan.
GuestEnd run_helper(const HelperRun& run);

// After a failed guest: its console log stays where the user can read it (the
// kept directory, else the cache's logs/).
void keep_console_log(const RunDir& dir);

}  // namespace hotline::vm
