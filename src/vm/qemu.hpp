// SPDX-License-Identifier: Apache-2.0
// Booting the guest: the accelerator, QEMU's argv for the guest's shape, the
// console filter, and one boot watched to its end.
//
// Two serial ports: ttyS0 is the kernel console (boot log, progress, panics);
// ttyS1 carries only the guest runner's result protocol (watch.hpp), so a
// kernel message can never split a marker or a payload line.  QEMU's own exit
// status says nothing about the guest (a panic exits 0 too): only the channel's
// markers count, and QEMU runs under a hard timeout.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/signals.hpp"

namespace hotline::vm {

// CPUs and memory are split evenly over the nodes, CPUs numbered node by node
// (4 CPUs, 2 nodes: 0-1 on node 0, 2-3 on node 1), one socket per node.
struct GuestShape {
    int nodes = 1;
    int cpus = 1;
    long memory_mib = 0;
};

// TCG runs single-threaded: with a thread per vCPU (QEMU 7.2), a vCPU can keep
// running a translation of kernel text made while another vCPU patched it (a
// tracepoint's static branch, a kprobe's int3), trapping on the int3 for ever
// (tests/vm/README.md, "A hung guest").
inline constexpr const char* kTcgAccel = "tcg,thread=single";

// panic=-1 + oops=panic + -no-reboot: any oops ends the run at once.
// Watchdogs and RCU stall warnings are off because an emulated CPU starved by
// a busy host is not a kernel bug; no_timer_check for the same reason (the
// emulated IO-APIC timer can miss the boot-time check).  loglevel=7: the
// hung-task detector prints at KERN_INFO.  nokaslr: a stalled guest's CPU dump
// can be read against the System.map of the kernel's -dbg package.
inline constexpr const char* kKernelCmdline =
    "console=ttyS0 panic=-1 oops=panic loglevel=7 mitigations=off nokaslr nowatchdog "
    "rcupdate.rcu_cpu_stall_suppress=1 no_timer_check";

// KVM when it boots a kernel, TCG otherwise.  /dev/kvm opening is not enough:
// under some hypervisors a KVM guest spins without printing a line, so a 15 s
// probe boot of VMLINUX must show the kernel's banner; the answer is kept for
// this host boot in CACHE/kvm-probe.  HOTLINE_VM_ACCEL overrides.
std::string choose_accel(const std::string& vmlinux, const std::string& cache);

// QEMU's machine arguments (no program name) for ACCEL and SHAPE.
std::vector<std::string> machine_args(const std::string& accel, const GuestShape& shape);

// Which console lines go to stderr besides console.log.
enum class LiveConsole {
    kOff,     // none
    kAll,     // every line (--console)
    kStream,  // a command line's stderr: between the runner's stream markers, no kernel messages
};

class ConsoleRoute {
  public:
    explicit ConsoleRoute(LiveConsole live) : live_(live) {}
    bool shown(std::string_view line);  // LINE (no \r\n) goes to stderr

  private:
    LiveConsole live_;
    bool streaming_ = false;
};

struct BootSpec {
    std::string vmlinux;
    std::string initrd;
    std::string work;  // console.log, channel.log, monitor FIFOs, stalled*, here
    std::string accel;
    GuestShape shape;
    long timeout_s = 0;  // the hard limit
    LiveConsole live = LiveConsole::kOff;
};

struct BootEnd {
    int qemu_rc = 0;           // 124: the hard timeout stopped it
    bool interrupted = false;  // a shutdown signal stopped it
};

// Waits for PID (QEMU, or a stand-in in the tests) to end, stopping it on the
// hard timeout, a stalled step (SPEC.work's stalled and stalled-cpus.txt,
// written from its channel.log and monitor FIFOs) or a shutdown signal.
BootEnd watch_guest(pid_t pid, const BootSpec& spec, ShutdownSignals& signals);

// Boots once and waits for the end: QEMU exits, the hard timeout, a stalled
// step (WORK/stalled and stalled-cpus.txt), or a shutdown signal.
Result<BootEnd> boot_guest(const BootSpec& spec, ShutdownSignals& signals);

}  // namespace hotline::vm
