// Small parsers and helpers shared by the layers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hotline/result.hpp"

namespace hotline {

// "5", "5s", "250ms", "2m", "1.5s" -> seconds.  A bare number is seconds.
Result<double> parse_duration(std::string_view s);

// Without leading and trailing white space (isspace).
std::string_view trim(std::string_view s);

// "a,b,,c" -> {"a","b","c"}
std::vector<std::string> split_list(std::string_view s);

// This process's command line, arguments joined by spaces (for journals and reports).
std::string own_command_line();

// CLOCK_MONOTONIC in seconds: the time base of snapshots and intervals.
double monotonic_seconds();

// Writes a file atomically: temp file in the same directory, fsync, rename.
Status write_file_atomic(const std::string& path, std::string_view data);

}  // namespace hotline
