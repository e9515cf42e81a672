// SPDX-License-Identifier: Apache-2.0
// /proc/kallsyms lines ("ADDR TYPE NAME [MODULE]"): any text parses into a
// table whose look-ups stay inside it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hotline/kernel/kernel.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    hotline::Kallsyms k = hotline::Kallsyms::parse(s);
    (void)k.memory_bytes();
    // Look up every word of the input as a name and every hex number as an address.
    for (std::size_t start = 0; start < s.size();) {
        std::size_t end = s.find_first_of(" \t\n", start);
        if (end == std::string_view::npos) end = s.size();
        std::string_view word = s.substr(start, end - start);
        if (auto r = k.range(word); r && r->end < r->start) __builtin_trap();
        (void)k.contains(word);
        std::uint64_t addr = 0;
        if (word.size() <= 16 && !word.empty()) {
            try {
                addr = std::stoull(std::string(word), nullptr, 16);
            } catch (...) {
            }
        }
        (void)k.symbolize(addr);
        (void)k.symbolize(addr + 1);
        start = end + 1;
    }
    return 0;
}
