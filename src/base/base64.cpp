// SPDX-License-Identifier: Apache-2.0
#include "hotline/base/base64.hpp"

#include <array>

namespace hotline {

namespace {

constexpr unsigned char kInvalid = 0xff;

constexpr std::array<unsigned char, 256> decoding_table() {
    std::array<unsigned char, 256> t{};
    for (auto& v : t) v = kInvalid;
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = 0; i < alphabet.size(); ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<unsigned char>(i);
    return t;
}

constexpr auto kTable = decoding_table();

}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::size_t pad = 0;
    while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        unsigned value = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const std::size_t at = i + k;
            const bool padding = at >= text.size() - pad;
            const unsigned char d = padding ? 0 : kTable[static_cast<unsigned char>(text[at])];
            if (d == kInvalid) return std::nullopt;
            value = value << 6 | d;
        }
        out.push_back(static_cast<char>(value >> 16));
        out.push_back(static_cast<char>(value >> 8 & 0xff));
        out.push_back(static_cast<char>(value & 0xff));
    }
    out.resize(out.size() - pad);
    return out;
}

}  // namespace hotline
