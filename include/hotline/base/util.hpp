// SPDX-License-Identifier: Apache-2.0
// Small parsers and helpers shared by the layers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

// "5", "5s", "250ms", "2m", "1.5s" -> seconds.  A bare number is seconds.
Result<double> parse_duration(std::string_view s);

// Without leading and trailing white space (isspace).
std::string_view trim(std::string_view s);

// "a,b,,c" -> {"a","b","c"}
std::vector<std::string> split_list(std::string_view s);

// The name in `known` (a comma list such as "a, b, c") closest to `name` by edit
// distance, when close enough to be a typo of it (at most a third of its
// letters, and at least one, differ); empty otherwise.
std::string closest_name(std::string_view name, std::string_view known);

// `unknown KIND "NAME"`, followed by `; did you mean "X"?` when closest_name finds one.
std::string unknown_name_message(std::string_view kind, std::string_view name, std::string_view known);

// This process's command line, arguments joined by spaces (for journals and reports).
std::string own_command_line();
// argv as a shell needs it typed: a word with anything but [A-Za-z0-9_./:=,+-@%]
// single-quoted; a control character is shown as '?', never sent to a terminal.
std::string shell_words(const std::vector<std::string>& argv);

// A number for a person to read: `significant` digits, never exponent
// notation (45010 not 4.501e+04, 0.0001234 not 1.234e-04); "inf", "-inf",
// "nan" as such.  Below 1e-12 in magnitude it is 0.
std::string plain_number(double v, int significant = 4);

// CLOCK_MONOTONIC in seconds: the time base of snapshots and intervals.
double monotonic_seconds();
// The same clock in nanoseconds, for latencies.
std::uint64_t monotonic_ns();

// The largest input file read by default (recordings, catalogs, configs,
// journals); docs/limits.md lists every limit.
inline constexpr std::size_t kMaxInputBytes = 64u << 20;

// The whole file, or "cannot read PATH" with the errno.  Only regular files are
// read (a FIFO, a directory or a device is refused without blocking), and only
// up to max_bytes.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);
// read_file, with no error: for sysfs and procfs attributes whose absence is an
// answer (no such CPU, no lockdown file).
std::optional<std::string> read_file_if_present(const std::string& path);

// Whether write_file_atomic could write `path`: its directory exists and what is
// there now, if anything, is a writable regular file.  Front ends call it before
// long work so a bad -o is reported before the data is gathered.
Status check_output_path(const std::string& path);

// Writes a file atomically and durably: temp file in the same directory, fsync,
// rename, fsync of the directory.  After it returns the content survives a crash,
// and a reader never sees half a file.  Every output file goes through it.
Status write_file_atomic(const std::string& path, std::string_view data, unsigned mode = 0644);

// fsync(2) of a directory, so a rename or unlink in it is durable.
Status fsync_dir(const std::string& dir);

// Prints "hotline: <message>" on stderr and returns exit_code: the one way a
// front end reports an error before exiting.
int fail(const Error& e, int exit_code);

}  // namespace hotline
