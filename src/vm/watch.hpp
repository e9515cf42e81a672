// SPDX-License-Identifier: Apache-2.0
// Watching a booted guest: its progress on the result channel (a step without
// a new marker past its limit stops QEMU), what its vCPUs were doing then (the
// QEMU monitor), and whether its console says the kernel died.
//
// The channel protocol (one item per line, ASCII, on ttyS1; guest-init.sh):
//   HLVM-HELLO release=R uptime=S
//   HLVM-START TEST timeout=S
//   HLVM-OUTPUT TEST BYTES         the test's output, as base64 lines, then HLVM-EOF
//   HLVM-FILE TEST NAME BYTES      a file the test left in its directory, the same way
//   HLVM-RESULT TEST rc=N secs=S
//   HLVM-DONE uptime=S
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hotline::vm {

// A step's base limit: booting to HLVM-HELLO or moving between tests
// (VM_STEP_LIMIT_S).  A guest whose kernel livelocks runs no timer, so its own
// per-test timeout never fires and only the hard timeout (the sum of every
// test's) would end the run.
inline constexpr long kDefaultStepLimitS = 300;
long step_limit_base_s();  // VM_STEP_LIMIT_S or the default
double watch_poll_s();     // VM_WATCH_POLL_S or 5

// The seconds the guest may spend after MARKER (a channel line, "" before the
// first) before the next one: a test from its HLVM-START to its HLVM-RESULT
// gets twice its own timeout plus the base, for a busy host and its files.
long step_limit_s(std::string_view marker, long base_s);

// The last HLVM-HELLO/START/RESULT/DONE line of the channel's text ("" if none).
std::string last_marker(std::string_view channel);

// The guest's progress, judged at each poll.
class ProgressWatch {
  public:
    ProgressWatch(long base_s, double now) : base_s_(base_s), since_(now) {}
    // The channel's text at time NOW (seconds): why the guest is stalled, if it is.
    std::optional<std::string> check(std::string_view channel, double now);
    bool done() const { return done_; }  // HLVM-DONE seen: nothing more to watch

  private:
    long base_s_;
    double since_;
    std::string marker_;
    bool done_ = false;
};

// A string from the guest, shown without control characters (at most 200).
std::string printable(std::string_view s);

// The monitor's answers as one line per CPU and sample: RIP, RSP and the
// kernel text addresses on top of its stack (a return-address trail).
std::string monitor_summary(std::string_view monitor_text);

// What each vCPU of a stalled guest is doing, through the QEMU monitor on the
// FIFOs BASE.in and BASE.out: three samples a second apart of every CPU's
// registers and the 48 words on top of its stack.  Leaves BASE's directory's
// monitor.log (the raw answers) and returns the summary.
std::string dump_cpus(const std::string& base, int cpus);

// The first console line saying the guest kernel died, if any.
std::optional<std::string> fatal_console_line(std::string_view console);

}  // namespace hotline::vm
