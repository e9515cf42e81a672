// SPDX-License-Identifier: Apache-2.0
// One guest run on the host: the kernel from the cache, the initramfs, the
// boot, and the files it leaves in the run directory (console.log,
// channel.log, kernel.env, timing.env, host-binaries.sha256, failure, and a
// stalled guest's stalled, stalled-cpus.txt and monitor.log).  Everything
// temporary lives in one directory removed on every exit path; a run killed
// outright leaves it for the next start (run_dir.hpp, remove_abandoned_runs).
#pragma once

#include <string>
#include <vector>

#include "hotline/vm/guest_run.hpp"
#include "run_dir.hpp"

namespace hotline::vm {

struct BootRun {
    const GuestRequest& request;
    std::string out;                   // the run directory
    std::vector<std::string> scripts;  // what the guest runs
    bool stream = false;               // the scripts' stderr shown as it comes, stdout sent back
};

// Runs the guest to its end: kRan when it ran the whole plan and its kernel did not die.
GuestEnd run_boot(const BootRun& run);

// The guest needs its initramfs twice (the archive and the files unpacked from
// it) beside the kernel and hotline's own work: with less, the kernel dies
// before init runs, which looks like a broken kernel.  Measured: docs/vm.md.
long min_memory_mib(long initramfs_mib);
// Why MEMORY_MIB is too little for an initramfs of INITRAMFS_MIB, or "" when it is enough.
std::string memory_problem(long memory_mib, long initramfs_mib);

// Why a finished run failed, from what it left in OUT (console.log, stalled),
// QEMU's exit code (124: the hard timeout) and the HLVM-DONE markers seen; ""
// when it did not.
std::string failure_cause(const std::string& out, int qemu_rc, long done_markers, long timeout_s);

// The script's stated timeout ("# hlvm-timeout: S" line), else 120.
long script_timeout_s(const std::string& text);

// Where the run's temporary directory goes: TMPDIR when its path is plain
// characters (QEMU parses option values: a comma starts a new parameter), else /tmp.
std::string vm_temp_base();

// "hotline vm: TEXT" on stderr: what the run is doing and why it failed.
void vm_log(const std::string& text);

// HOTLINE_VM_CACHE, else XDG_CACHE_HOME/hotline, else ~/.cache/hotline.
std::string cache_dir();

// After a failed guest: its console log stays where the user can read it (the
// kept directory, else the cache's logs/).
void keep_console_log(const RunDir& dir);

}  // namespace hotline::vm
