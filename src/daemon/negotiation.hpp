// SPDX-License-Identifier: Apache-2.0
// Which exposition format a scrape gets, from its Accept header.
#pragma once

#include <string_view>

#include "hotline/report/prometheus.hpp"  // ExpositionFormat

namespace hotline {

// Picks the format from an HTTP Accept header, honouring q-values; text 0.0.4 when
// the header is absent or names neither.
ExpositionFormat negotiate_exposition(std::string_view accept);
std::string_view content_type(ExpositionFormat f);

}  // namespace hotline
