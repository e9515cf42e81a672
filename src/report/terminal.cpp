// SPDX-License-Identifier: Apache-2.0
// Terminal colour and the validate progress line (terminal.hpp).
#include "hotline/report/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/color.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace hotline {

std::string terminal_safe(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) out += fmt::format("\\x{:02x}", u);
        else out += c;
    }
    return out;
}

bool colour_wanted(int fd) {
    const char* no = std::getenv("NO_COLOR");
    return isatty(fd) && (no == nullptr || *no == '\0');
}

std::string paint(std::string_view text, Verdict v, bool colour) {
    if (!colour) return std::string(text);
    switch (v) {
    case Verdict::kPass: return fmt::format(fmt::fg(fmt::terminal_color::green) | fmt::emphasis::bold, "{}", text);
    case Verdict::kFail: return fmt::format(fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, "{}", text);
    case Verdict::kInconclusive: return fmt::format(fmt::fg(fmt::terminal_color::yellow) | fmt::emphasis::bold, "{}", text);
    default: return std::string(text);
    }
}

std::string short_duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    long t = std::lround(s);
    if (t < 60) return fmt::format("{}s", t);
    if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
    return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

std::string time_left(const TrialProgress& p, double per_trial) {
    int least = std::max(0, p.min_each - p.baseline_trials) + std::max(0, p.min_each - p.candidate_trials);
    int most = std::max(0, p.max_each - p.baseline_trials) + std::max(0, p.max_each - p.candidate_trials);
    if (!std::isfinite(per_trial) || per_trial <= 0) return "time left unknown";
    if (least == most) return fmt::format("~{} left", short_duration(least * per_trial));
    return fmt::format("{}..{} left", short_duration(least * per_trial), short_duration(most * per_trial));
}

std::string progress_text(const TrialProgress& p, double per_trial, bool colour) {
    std::string s = fmt::format("trial {} ({} {}, fix {} of {}..{} each)", p.trial_no, "baseline", p.baseline_trials,
                                p.candidate_trials, p.min_each, p.max_each);
    for (auto& [metric, v] : p.verdicts) s += fmt::format(" | {} {}", metric, paint(to_string(v), v, colour));
    return s + " | " + time_left(p, per_trial);
}

int terminal_width(int fd, int fallback) {
    winsize ws{};
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return fallback;
}

ProgressLine::ProgressLine(std::FILE* out, bool colour, int width, double start_s)
    : out_(out), colour_(colour), width_(std::max(width, 20)), start_s_(start_s) {}

void ProgressLine::draw() {
    fmt::print(out_, "\r\033[K{}", current_);
    std::fflush(out_);
}

void ProgressLine::message(const std::string& line) {
    if (!current_.empty()) fmt::print(out_, "\r\033[K");
    fmt::print(out_, "hotline: {}\n", line);
    if (!current_.empty()) draw();
    else std::fflush(out_);
}

void ProgressLine::update(const TrialProgress& p, double now_s) {
    // From the second trial on, the time since the first one: setting up the
    // scenario and the collector is not a trial.
    if (first_trial_no_ == 0) {
        first_trial_no_ = p.trial_no;
        first_trial_s_ = now_s;
    }
    double per_trial = p.trial_no > first_trial_no_ ? (now_s - first_trial_s_) / (p.trial_no - first_trial_no_)
                       : p.trial_no > 0            ? (now_s - start_s_) / p.trial_no
                                                   : NAN;
    // Redrawn in place only while it fits one row; verdict words go first to
    // the cut, so the plain text decides the length.
    std::string plain = progress_text(p, per_trial, false);
    if (int(plain.size()) >= width_) {
        std::string t = time_left(p, per_trial);
        // Short form: the verdicts as counts ("2 PASS, 1 INCONCLUSIVE").
        std::map<std::string_view, int> tally;
        for (auto& [metric, v] : p.verdicts) ++tally[to_string(v)];
        std::string counts;
        for (auto& [word, n] : tally) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, word);
        plain = fmt::format("trial {} ({}/{}) | {} | {}", p.trial_no, p.baseline_trials, p.candidate_trials, counts, t);
        current_ = plain.substr(0, std::size_t(width_ - 1));
    } else {
        current_ = progress_text(p, per_trial, colour_);
    }
    draw();
}

void ProgressLine::finish() {
    if (current_.empty()) return;
    fmt::print(out_, "\r\033[K");
    std::fflush(out_);
    current_.clear();
}

}  // namespace hotline
