// SPDX-License-Identifier: Apache-2.0
// The daemon's log: levels, logfmt or JSON lines on stderr (node_exporter's
// --log.level / --log.format), and syslog priorities that journald reads when
// stderr is the journal.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "hotline/base/result.hpp"

namespace hotline {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kLogfmt, kJson };

inline constexpr const char* kLogLevels = "debug, info, warn, error";
inline constexpr const char* kLogFormats = "logfmt, json";

Result<LogLevel> parse_log_level(std::string_view s);
Result<LogFormat> parse_log_format(std::string_view s);

// Sets the threshold and the format for every later log line (process-wide).
void configure_log(LogLevel level, LogFormat format);

// One log line: `ts=... level=info msg="..."` or {"ts":...,"level":...,"msg":...}.
// Under systemd, with stderr connected to the journal ($JOURNAL_STREAM), each
// line starts with its sd-daemon(3) priority ("<6>"), so journalctl -p works.
void log_line(LogLevel level, std::string_view msg);

// The line as log_line writes it, without the journald prefix (for tests).
std::string format_log_line(LogLevel level, std::string_view msg, LogFormat format, std::string_view ts);

template <class... Args>
void log_at(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
    log_line(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hotline
