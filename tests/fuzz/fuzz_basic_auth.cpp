// The Authorization header of every request to `hotline serve`.  Users with a
// SHA-256 and a bcrypt hash, so both password checks run; only the right
// credentials may pass.
#include <cstddef>
#include <cstdint>
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
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    if (check_basic_auth(s, users())) {
        // Only the two right credentials, possibly with a differently cased scheme and spaces after it.
        bool known = s.find("YWRtaW46c2VjcmV0") != std::string_view::npos ||  // admin:secret
                     s.find("b3BzOnNlY3JldA==") != std::string_view::npos;    // ops:secret
        if (!known) __builtin_trap();
    }
    return 0;
}
