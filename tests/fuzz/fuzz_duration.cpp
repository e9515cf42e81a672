// SPDX-License-Identifier: Apache-2.0
// Durations and comma lists from the command line and config files.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/base/util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    if (auto d = hotline::parse_duration(s); d) {
        // Whatever is accepted must convert to the types it is used as.
        if (!(*d >= 0 && *d <= 366.0 * 24 * 3600)) __builtin_trap();
        volatile long ms = long(*d * 1000);
        (void)ms;
    }
    (void)hotline::split_list(s);
    (void)hotline::trim(s);
    return 0;
}
