// SPDX-License-Identifier: Apache-2.0
// Base64 (RFC 4648, standard alphabet) decoding for bytes that come from
// outside: a client's Authorization header, a guest's result channel.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hotline {

// The bytes of canonical base64 text: a multiple of four characters from the
// alphabet, '=' only as the last one or two.  nullopt for anything else (a
// stray '=', a character outside the alphabet, a cut group).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace hotline
