// SPDX-License-Identifier: Apache-2.0
// The guest's result channel (its second serial port), decoded on the host.
// The guest is not trusted: any code in it, or a hostile --kernel, writes
// what it likes there.  So the host says which tests it planned, a test's
// result is read only as the typed fields below, a file's name is one plain
// path component inside the host's own directory for that test, and every
// size is capped.  Protocol lines (guest-init, libexec/vm/guest-init):
//   HLVM-HELLO release=R uptime=S
//   HLVM-START TEST timeout=S
//   HLVM-OUTPUT TEST BYTES          then base64 lines, then HLVM-EOF
//   HLVM-FILE TEST NAME BYTES       the same, for a file the test left
//   HLVM-RESULT TEST rc=N secs=S
//   HLVM-DONE uptime=S
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline::vm {

struct ChannelLimits {
    std::size_t max_file_bytes = std::size_t{64} << 20;    // one file or output: what hotline reads back
    std::size_t max_total_bytes = std::size_t{256} << 20;  // everything decoded in one run
    std::size_t max_files_per_test = 256;
    std::size_t max_line_bytes = 4096;  // guest-init's lines are under 100 bytes
};

struct GuestTest {
    std::optional<int> rc;       // 0-255, from HLVM-RESULT
    std::optional<double> secs;  // the test's guest time
    std::optional<std::string> output;
    std::map<std::string, std::string> files;  // name (one safe component) -> bytes
    std::vector<std::string> transfer_errors;  // payloads dropped, and why
};

struct GuestChannel {
    std::string release;  // empty when the guest never said hello
    std::optional<double> boot_uptime;
    std::optional<double> done_uptime;
    int done_markers = 0;
    std::map<std::string, GuestTest> tests;  // only tests the host planned
    std::vector<std::string> ignored;        // lines refused, with why (the first few)
};

// A test or file name the host accepts from the guest: [A-Za-z0-9._-]{1,128},
// not "." or "..".
bool is_plain_name(std::string_view name);

// Decodes the channel text; never fails, refuses what it cannot accept.
GuestChannel decode_channel(std::string_view text, const std::vector<std::string>& planned_tests,
                            const ChannelLimits& limits = {});

// Writes the decoded results under `out` (created by the host): guest-release,
// guest-uptime, guest-done-uptime, and per test TEST/{rc,secs,output.txt,
// transfer-errors,files/NAME}.  Every path is the host's `out` plus names
// is_plain_name accepted; files are written through write_file_atomic.
Status write_channel_results(const GuestChannel& channel, const std::string& out);

}  // namespace hotline::vm
