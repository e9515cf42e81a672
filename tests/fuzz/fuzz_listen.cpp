// SPDX-License-Identifier: Apache-2.0
// `serve --listen` and the config's listen = "...": an accepted address has a
// port in range and prints back to an address that parses the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "serve_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto a = hotline::parse_listen_address(s);
    if (!a) return 0;
    if (a->port < 0 || a->port > 65535) __builtin_trap();
    (void)a->all_addresses();
    (void)a->loopback();
    auto again = hotline::parse_listen_address(a->to_string());
    if (!again || again->host != a->host || again->port != a->port) __builtin_trap();
    return 0;
}
