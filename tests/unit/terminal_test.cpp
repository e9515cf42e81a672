// SPDX-License-Identifier: Apache-2.0
// Terminal output: colour only on a terminal and never with NO_COLOR (checked
// on a pseudo-terminal), and the validate progress line.
#include <gtest/gtest.h>

#include <pty.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "hotline/report/terminal.hpp"
#include "hotline/report/verdict_output.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/fix/fix.hpp"

using namespace hotline;

namespace {

// A pseudo-terminal pair, closed on scope exit.
struct Pty {
    int master = -1, slave = -1;
    Pty() { EXPECT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0); }
    ~Pty() {
        close(master);
        close(slave);
    }
    std::string drain() {
        std::string s;
        char buf[4096];
        for (;;) {
            fd_set fds;
            FD_ZERO(&fds);
            FD_SET(master, &fds);
            timeval tv{0, 200000};
            if (select(master + 1, &fds, nullptr, nullptr, &tv) <= 0) break;
            ssize_t n = read(master, buf, sizeof buf);
            if (n <= 0) break;
            s.append(buf, std::size_t(n));
        }
        return s;
    }
};

struct NoColorEnv {
    std::string saved;
    bool had;
    explicit NoColorEnv(const char* v) {
        const char* old = std::getenv("NO_COLOR");
        had = old != nullptr;
        if (had) saved = old;
        if (v) setenv("NO_COLOR", v, 1);
        else unsetenv("NO_COLOR");
    }
    ~NoColorEnv() {
        if (had) setenv("NO_COLOR", saved.c_str(), 1);
        else unsetenv("NO_COLOR");
    }
};

TrialProgress progress(int trial, int b, int f) {
    TrialProgress p;
    p.trial_no = trial;
    p.baseline_trials = b;
    p.candidate_trials = f;
    p.min_each = 5;
    p.max_each = 20;
    p.verdicts = {{"calls.dst_release.per_op", Verdict::kPass}, {"scenario.ops_per_s", Verdict::kInconclusive}};
    return p;
}

}  // namespace

TEST(Terminal, ColourOnlyOnATerminalWithoutNoColor) {
    Pty pty;
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    {
        NoColorEnv env(nullptr);
        EXPECT_TRUE(colour_wanted(pty.slave));
        EXPECT_FALSE(colour_wanted(pipefd[1]));
    }
    {
        NoColorEnv env("1");
        EXPECT_FALSE(colour_wanted(pty.slave));
    }
    {
        NoColorEnv env("");  // present but empty: does not count (no-color.org)
        EXPECT_TRUE(colour_wanted(pty.slave));
    }
    close(pipefd[0]);
    close(pipefd[1]);
}

TEST(Terminal, PaintColoursVerdictsOnlyWhenAsked) {
    EXPECT_EQ(paint("PASS", Verdict::kPass, false), "PASS");
    EXPECT_EQ(paint("PASS", Verdict::kPass, true), "\x1b[1m\x1b[32mPASS\x1b[0m");
    EXPECT_NE(paint("FAIL", Verdict::kFail, true).find("\x1b[31m"), std::string::npos);
    EXPECT_NE(paint("INCONCLUSIVE", Verdict::kInconclusive, true).find("\x1b[33m"), std::string::npos);
    EXPECT_EQ(paint("INFO", Verdict::kInfo, true), "INFO");
}

TEST(Terminal, VerdictTextInColourOnlyWhenAsked) {
    VerdictReport r;
    r.fix = "x";
    r.overall = Verdict::kFail;
    CriterionResult c;
    c.criterion.metrics = {"m"};
    c.verdict = Verdict::kFail;
    c.reason = "ratio 0.9 misses <= 0.5";
    r.criteria.push_back(c);
    std::ostringstream plain, coloured;
    render_verdict_text(plain, r);
    render_verdict_text(coloured, r, true);
    EXPECT_EQ(plain.str().find('\x1b'), std::string::npos);
    EXPECT_NE(coloured.str().find("\x1b[31mFAIL"), std::string::npos);
    EXPECT_NE(coloured.str().find("\x1b[31mexpect m down"), std::string::npos) << "the miss line is coloured";
}

TEST(Terminal, TimeLeft) {
    EXPECT_EQ(short_duration(5), "5s");
    EXPECT_EQ(short_duration(185), "3m05s");
    EXPECT_EQ(short_duration(3720), "1h02m");
    EXPECT_EQ(short_duration(-1), "?");
    // 3 of 5 and 2 of 5 done: 5 more at least, 35 at most, at 4 s each.
    EXPECT_EQ(time_left(progress(5, 3, 2), 4), "20s..2m20s left");
    EXPECT_EQ(time_left(progress(40, 20, 20), 4), "~0s left");
    EXPECT_EQ(time_left(progress(1, 1, 0), 0), "time left unknown");
}

TEST(Terminal, ProgressLineUpdatesInPlaceOnAPty) {
    Pty pty;
    FILE* out = fdopen(dup(pty.slave), "w");
    ASSERT_NE(out, nullptr);
    {
        ProgressLine line(out, true, 200, 100.0);
        line.message("setting up");
        line.update(progress(1, 1, 0), 110.0);
        line.update(progress(2, 1, 1), 114.0);
        line.message("applied x");
        line.finish();
    }
    fclose(out);
    std::string s = pty.drain();
    EXPECT_NE(s.find("hotline: setting up"), std::string::npos);
    EXPECT_NE(s.find("\r\x1b[Ktrial 1 (baseline 1, fix 0 of 5..20 each)"), std::string::npos) << s;
    EXPECT_NE(s.find("\x1b[32mPASS"), std::string::npos);
    // Per trial 4 s from the second trial on: 8 trials at least, 38 at most.
    EXPECT_NE(s.find("32s..2m32s left"), std::string::npos) << s;
    EXPECT_NE(s.find("hotline: applied x"), std::string::npos);
    EXPECT_EQ(s.substr(s.size() - 4), "\r\x1b[K") << "the line is cleared at the end";
}

TEST(Terminal, ProgressLineFitsANarrowTerminal) {
    Pty pty;
    FILE* out = fdopen(dup(pty.slave), "w");
    {
        ProgressLine line(out, true, 60, 0);
        line.update(progress(3, 2, 1), 9);
    }
    fclose(out);
    std::string s = pty.drain();
    auto start = s.find("trial 3");
    ASSERT_NE(start, std::string::npos) << s;
    auto end = s.find('\r', start);
    EXPECT_LT(end - start, 60u) << s;
    EXPECT_NE(s.find("1 INCONCLUSIVE, 1 PASS", start), std::string::npos) << s;
    EXPECT_EQ(s.find('\x1b', start), end + 1) << "no colour codes cut in half";
}

// Strings from outside reach the terminal as text: a recording's kernel
// release, a catalog's summary.  ESC and the other control characters are
// shown as \xNN; newlines and tabs stay.
TEST(TerminalSafe, OutsideStringsCannotDriveTheTerminal) {
    EXPECT_EQ(terminal_safe("a\x1b[2Jb\tc\nd\x07\x7f"), "a\\x1b[2Jb\tc\nd\\x07\\x7f");
    Diagnosis d;
    d.recording = "rec.json";
    d.kernel = "6.1\x1b]0;owned\x07";
    std::ostringstream diag;
    render_diagnosis_text(diag, d);
    EXPECT_EQ(diag.str().find('\x1b'), std::string::npos) << diag.str();
    EXPECT_NE(diag.str().find("6.1\\x1b]0;owned\\x07"), std::string::npos) << diag.str();
    auto cat = FixCatalog::parse("[[fix]]\nname = \"x\"\nmode = \"runtime\"\nsummary = \"s\\u001b[31mred\"\n"
                                 "[[fix.change]]\nsysctl = \"net.ipv4.ip_early_demux\"\nvalue = \"0\"\nscope = \"netns\"\n"
                                 "[[fix.expect]]\nmetric = \"calls.ipv4_dst_check.per_op\"\ndown = \"10%\"\n",
                                 "x.toml");
    ASSERT_TRUE(cat) << cat.error().message();
    std::ostringstream list, show;
    render_fix_list_text(list, *cat, nullptr);
    render_fix_text(show, cat->fixes().front(), nullptr);
    for (auto* s : {&list, &show}) {
        EXPECT_EQ(s->str().find('\x1b'), std::string::npos) << s->str();
        EXPECT_NE(s->str().find("s\\x1b[31mred"), std::string::npos) << s->str();
    }
}
