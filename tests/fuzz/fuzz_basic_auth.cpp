// SPDX-License-Identifier: Apache-2.0
// The Authorization header of every request to `hotline serve`.  Users with a
// SHA-256 and a bcrypt hash, so both password checks run; only the right
// credentials may pass, in whatever valid encoding.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve_config.hpp"

using namespace hotline;

namespace {
// "secret" hashed both ways; "admin:secret" and "ops:secret" are the only passes.
const std::vector<AuthUser>& users() {
    static const std::vector<AuthUser> u{
        {"admin", sha256_hex("secret"), AuthUser::Hash::kSha256},
        {"ops", "$2b$04$CCw1aM.irBHh.ni90jmXhut8Q5El.YJFlVgqMj2n0b7cFsuGZQ1WK", AuthUser::Hash::kBcrypt},
    };
    return u;
}

// The credentials a header carries, decoded independently of the server
// (lenient on the unused bits of the last group, as Go's decoder that
// exporter-toolkit uses is); empty when it is no basic-auth header.
std::string credentials(std::string_view h) {
    static const std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (h.size() < 6) return {};
    for (std::size_t i = 0; i < 5; ++i)
        if (std::tolower(static_cast<unsigned char>(h[i])) != "basic"[i]) return {};
    std::string out;
    unsigned bits = 0, acc = 0;
    for (char ch : h.substr(6)) {
        auto v = kAlphabet.find(ch);
        if (v == std::string_view::npos) continue;
        acc = (acc << 6) | unsigned(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += char((acc >> bits) & 0xff);
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    if (check_basic_auth(s, users())) {
        std::string c = credentials(s);
        if (c != "admin:secret" && c != "ops:secret") __builtin_trap();
    }
    return 0;
}
