// SPDX-License-Identifier: Apache-2.0
// CPU lists (--cpus, --workload-cpus, sysfs cpulist files): an accepted list is
// sorted, unique, in range, and prints back to a list that parses the same.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/model/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto cpus = hotline::parse_cpulist(s);
    if (!cpus) return 0;
    if (!std::is_sorted(cpus->begin(), cpus->end())) __builtin_trap();
    if (std::adjacent_find(cpus->begin(), cpus->end()) != cpus->end()) __builtin_trap();
    if (!cpus->empty() && (cpus->front() < 0 || cpus->back() > 65535)) __builtin_trap();
    auto again = hotline::parse_cpulist(hotline::format_cpulist(*cpus));
    if (!again || *again != *cpus) __builtin_trap();
    return 0;
}
