// SPDX-License-Identifier: Apache-2.0
// `hotline serve --web.config.file`: exporter-toolkit YAML.  Any text gives a
// configuration or an error, never an exception or a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "serve_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    hotline::ServeConfig cfg;
    auto st = hotline::apply_web_config_text(s, "/nonexistent/web.yml", cfg);
    if (st) {
        for (const auto& u : cfg.users)
            if (u.name.empty() || u.kind != hotline::AuthUser::Hash::kBcrypt) __builtin_trap();
    }
    return 0;
}
