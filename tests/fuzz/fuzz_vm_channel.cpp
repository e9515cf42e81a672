// SPDX-License-Identifier: Apache-2.0
// `hotline vm`: the guest's result channel, which any code in the guest (or a
// hostile kernel) writes.  Whatever it sends, only the planned tests come
// back, every file name is one plain component, and no payload passes the caps.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/vm/guest_channel.hpp"

using namespace hotline::vm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    ChannelLimits limits;
    limits.max_file_bytes = 4096;
    limits.max_total_bytes = 8192;
    limits.max_files_per_test = 4;
    GuestChannel ch = decode_channel(text, {"cmd", "t1"}, limits);
    std::size_t total = 0;
    for (const auto& [name, t] : ch.tests) {
        if (name != "cmd" && name != "t1") __builtin_trap();
        if (t.files.size() > limits.max_files_per_test) __builtin_trap();
        if (t.rc && (*t.rc < 0 || *t.rc > 255)) __builtin_trap();
        for (const auto& [file, bytes] : t.files) {
            if (!is_plain_name(file) || bytes.size() > limits.max_file_bytes) __builtin_trap();
            total += bytes.size();
        }
        if (t.output) total += t.output->size();
    }
    if (total > limits.max_total_bytes) __builtin_trap();
    return 0;
}
