// SPDX-License-Identifier: Apache-2.0
// `hotline serve --config FILE`: the TOML reader and the config's schema.  An
// error must name the file; an accepted config must hold values in range.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "serve_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto cfg = hotline::parse_serve_config(s, "serve.toml");
    if (!cfg) {
        if (cfg.error().message().find("serve.toml") == std::string::npos) __builtin_trap();
        return 0;
    }
    const auto& h = cfg->http;
    if (h.workers < 1 || h.queued < 0 || !(h.read_timeout > 0) || !(h.keep_alive_timeout >= 0)) __builtin_trap();
    if (cfg->listen.port < 0 || cfg->listen.port > 65535) __builtin_trap();
    return 0;
}
