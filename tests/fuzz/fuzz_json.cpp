// SPDX-License-Identifier: Apache-2.0
// JSON read from files (recordings for diff/report, the knob journal): the
// depth-limited parser, then a dump of what it accepted.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/base/json_limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto doc = hotline::parse_json_limited(s);
    if (doc) (void)doc->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return 0;
}
