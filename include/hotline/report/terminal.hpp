// SPDX-License-Identifier: Apache-2.0
// What the terminal adds to text output: verdict words in colour, and one
// progress line that updates in place during `validate`.  Whether to use them
// is the caller's choice (colour_wanted); off a terminal the text stays plain.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "hotline/model/verdict.hpp"

namespace hotline {

// True when `fd` is a terminal and NO_COLOR is unset or empty (no-color.org).
bool colour_wanted(int fd);

// Text from outside (a recording's kernel release, a catalog's summary, a
// rule's meaning) made safe for a terminal: every control character but
// newline and tab is shown as \xNN instead of acting on the terminal.
std::string terminal_safe(std::string_view text);

// `text` in the colour of `v` (PASS green, FAIL red, INCONCLUSIVE yellow) when
// `colour`, else unchanged.
std::string paint(std::string_view text, Verdict v, bool colour);

// "12s", "3m05s", "1h02m"; "?" when not finite or negative.
std::string short_duration(double seconds);

// The estimate of the time left: trials still needed at least (each arm to its
// minimum) and at most (each to its maximum), times the time per trial so far.
std::string time_left(const TrialProgress& p, double seconds_per_trial);

// One line: trials done, each required criterion's current verdict, time left.
std::string progress_text(const TrialProgress& p, double seconds_per_trial, bool colour);

// The updating line on a terminal: messages scroll above it; the line is
// redrawn after each trial and cleared by finish() (and the destructor).
class ProgressLine {
public:
    ProgressLine(std::FILE* out, bool colour, int width, double start_s);
    ~ProgressLine() { finish(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    void message(const std::string& line);
    void update(const TrialProgress& p, double now_s);
    void finish();

private:
    void draw();
    std::FILE* out_;
    bool colour_;
    int width_;
    double start_s_;
    int first_trial_no_ = 0;
    double first_trial_s_ = 0;
    std::string current_;  // the line on screen, empty when none
};

// The width of the terminal on `fd`, or `fallback`.
int terminal_width(int fd, int fallback = 80);

}  // namespace hotline
