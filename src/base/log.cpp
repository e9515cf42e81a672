// SPDX-License-Identifier: Apache-2.0
// The daemon's log lines (hotline/base/log.hpp).
#include "hotline/base/log.hpp"

#include <sys/stat.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace hotline {

namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::atomic<LogFormat> g_format{LogFormat::kLogfmt};

const char* level_name(LogLevel l) {
    switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    }
    return "info";
}

// sd-daemon(3) priorities: LOG_DEBUG 7, LOG_INFO 6, LOG_WARNING 4, LOG_ERR 3.
int syslog_priority(LogLevel l) {
    switch (l) {
    case LogLevel::kDebug: return 7;
    case LogLevel::kInfo: return 6;
    case LogLevel::kWarn: return 4;
    case LogLevel::kError: return 3;
    }
    return 6;
}

// True when stderr is the journal: $JOURNAL_STREAM is "DEVICE:INODE" of it (systemd.exec(5)).
bool stderr_is_journal() {
    static const bool is = [] {
        const char* js = std::getenv("JOURNAL_STREAM");
        struct stat st {};
        if (!js || fstat(2, &st) != 0) return false;
        unsigned long long dev = 0, ino = 0;
        if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
        return dev == (unsigned long long)st.st_dev && ino == (unsigned long long)st.st_ino;
    }();
    return is;
}

std::string now_rfc3339() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    tm utc{};
    gmtime_r(&ts.tv_sec, &utc);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                       utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ts.tv_nsec / 1000000);
}

// A logfmt value: bare when it has no space, quote or '=', else quoted with escapes.
std::string logfmt_value(std::string_view v) {
    bool bare = !v.empty() && v.find_first_of(" \"=\\\n\t") == std::string_view::npos;
    if (bare) return std::string(v);
    return nlohmann::json(std::string(v)).dump();  // JSON string escaping is logfmt's
}

}  // namespace

Result<LogLevel> parse_log_level(std::string_view s) {
    for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError})
        if (s == level_name(l)) return l;
    return make_error(fmt::format("unknown log level \"{}\"", s), EINVAL, std::string("use one of ") + kLogLevels);
}

Result<LogFormat> parse_log_format(std::string_view s) {
    if (s == "logfmt") return LogFormat::kLogfmt;
    if (s == "json") return LogFormat::kJson;
    return make_error(fmt::format("unknown log format \"{}\"", s), EINVAL, std::string("use one of ") + kLogFormats);
}

void configure_log(LogLevel level, LogFormat format) {
    g_level = level;
    g_format = format;
}

std::string format_log_line(LogLevel level, std::string_view msg, LogFormat format, std::string_view ts) {
    if (format == LogFormat::kJson)
        return nlohmann::json{{"ts", std::string(ts)}, {"level", level_name(level)}, {"msg", std::string(msg)}}.dump();
    return fmt::format("ts={} level={} msg={}", ts, level_name(level), logfmt_value(msg));
}

void log_line(LogLevel level, std::string_view msg) {
    if (level < g_level.load()) return;
    std::string line = format_log_line(level, msg, g_format.load(), now_rfc3339());
    if (stderr_is_journal()) line = fmt::format("<{}>{}", syslog_priority(level), line);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace hotline
