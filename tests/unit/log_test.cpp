// SPDX-License-Identifier: Apache-2.0
// The daemon's log lines: levels and formats parsed by name, logfmt quoting,
// JSON lines that parse back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hotline/base/log.hpp"

using namespace hotline;

TEST(Log, ParsesLevelsAndFormatsByName) {
    EXPECT_EQ(*parse_log_level("debug"), LogLevel::kDebug);
    EXPECT_EQ(*parse_log_level("warn"), LogLevel::kWarn);
    EXPECT_EQ(*parse_log_format("json"), LogFormat::kJson);
    auto bad = parse_log_level("verbose");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("debug, info, warn, error"), std::string::npos) << bad.error().message();
    EXPECT_FALSE(parse_log_format("text").ok());
}

TEST(Log, LogfmtQuotesWhatNeedsIt) {
    const std::string ts = "2026-01-02T03:04:05.006Z";
    EXPECT_EQ(format_log_line(LogLevel::kInfo, "ready", LogFormat::kLogfmt, ts),
              "ts=2026-01-02T03:04:05.006Z level=info msg=ready");
    EXPECT_EQ(format_log_line(LogLevel::kWarn, "listening on :10464 \"all\"", LogFormat::kLogfmt, ts),
              "ts=2026-01-02T03:04:05.006Z level=warn msg=\"listening on :10464 \\\"all\\\"\"");
}

TEST(Log, JsonLinesParseBack) {
    auto line = format_log_line(LogLevel::kError, "cannot listen: \"x\"\n", LogFormat::kJson, "T");
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["level"], "error");
    EXPECT_EQ(j["msg"], "cannot listen: \"x\"\n");
    EXPECT_EQ(j["ts"], "T");
    EXPECT_EQ(line.find('\n'), std::string::npos) << "one line per record";
}
