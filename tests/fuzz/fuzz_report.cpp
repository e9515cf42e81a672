// SPDX-License-Identifier: Apache-2.0
// `hotline report FILE.json`: the HTML page of any saved document (recording,
// verdict, diagnosis), chosen by its schema.  Any document gives a page or an
// error, never an exception or a crash, and no page past max_page_bytes; a
// diff verdict is rendered with the document itself as both recordings it names.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/report/html_report.hpp"
#include "hotline/base/json_limits.hpp"

using namespace hotline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto doc = parse_json_limited(s);
    if (!doc) return 0;
    HtmlInput in{*doc, "input.json", std::nullopt, std::nullopt};
    // The amplification cap holds for every page that renders.
    if (auto page = render_html(in); page && page->size() > max_page_bytes(in)) __builtin_trap();
    if (doc->is_object() && doc->contains("mode")) {
        in.baseline = *doc;
        in.candidate = *doc;
        if (auto page = render_html(in); page && page->size() > max_page_bytes(in)) __builtin_trap();
    }
    return 0;
}
