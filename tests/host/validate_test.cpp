// SPDX-License-Identifier: Apache-2.0
// `hotline validate` on the real kernel (root): a fix that does not apply here is
// NOT-APPLICABLE with its reason; early-demux-off runs real ABAB trials in a
// scenario's namespaces to a verdict, with the host's own knobs untouched before,
// during and after; SIGKILL mid-validation leaves a journal `hotline restore` completes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "fix_test_util.hpp"
#include "hotline/fix/journal.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/workload/netns.hpp"
#include "host_util.hpp"

using namespace hotline;
using hotline::test::knob;
using hotline::test::TempDir;

namespace {

// Well-formedness of an XML document: one root, balanced tags, quoted
// attributes, known entities.  Returns the problem, empty when it parses.
std::string xml_problem(const std::string& s) {
    std::vector<std::string> stack;
    bool root_seen = false;
    std::size_t i = 0;
    auto entity_ok = [&](std::size_t at) {
        for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
            if (s.compare(at, strlen(e), e) == 0) return true;
        return s.compare(at, 2, "&#") == 0 && s.find(';', at) != std::string::npos;
    };
    while (i < s.size()) {
        if (s[i] == '&' && !entity_ok(i)) return "bad entity at " + std::to_string(i);
        if (s[i] != '<') {
            if (stack.empty() && !isspace((unsigned char)s[i])) return "text outside the root at " + std::to_string(i);
            ++i;
            continue;
        }
        std::size_t end = s.find('>', i);
        if (end == std::string::npos) return "unclosed tag";
        std::string tag = s.substr(i + 1, end - i - 1);
        i = end + 1;
        if (tag.empty()) return "empty tag";
        if (tag[0] == '?' || tag[0] == '!') continue;
        if (tag[0] == '/') {
            if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
            stack.pop_back();
            continue;
        }
        bool self = tag.back() == '/';
        std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
        // attributes: name="value" pairs
        std::size_t q = 0;
        for (char c : tag)
            if (c == '"') ++q;
        if (q % 2) return "unbalanced quotes in <" + name + ">";
        if (stack.empty()) {
            if (root_seen) return "second root element <" + name + ">";
            root_seen = true;
        }
        if (!self) stack.push_back(name);
    }
    if (!stack.empty()) return "unclosed <" + stack.back() + ">";
    return root_seen ? "" : "no root element";
}

// Runs hotline in the background, with `env` added to its environment, sampling
// the host's own knobs until it exits.
struct Watched {
    int rc = -1;
    std::string out, err;
    std::set<std::string> host_ip_seen, host_tcp_seen;
};

Watched run_watching(const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env = {}) {
    Watched w;
    std::string outf = hosttest::temp_path("vout"), errf = hosttest::temp_path("verr");
    pid_t pid = fork();
    if (pid == 0) {
        freopen(outf.c_str(), "w", stdout);
        freopen(errf.c_str(), "w", stderr);
        for (auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        w.host_ip_seen.insert(knob("net/ipv4/ip_early_demux"));
        w.host_tcp_seen.insert(knob("net/ipv4/tcp_early_demux"));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    w.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    w.out = hosttest::slurp(outf);
    w.err = hosttest::slurp(errf);
    unlink(outf.c_str());
    unlink(errf.c_str());
    return w;
}

int expected_rc(const std::string& overall) {
    if (overall == "PASS") return 0;
    if (overall == "FAIL") return 1;
    if (overall == "INCONCLUSIVE") return 2;
    if (overall == "NOT-APPLICABLE") return 3;
    return -1;
}

class ValidateHost : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0) GTEST_SKIP() << "needs root";
    }
};

}  // namespace

TEST_F(ValidateHost, TcpLowLatencyIsNotApplicableWithTheReason) {
    auto ks = Kallsyms::load();
    if (ks && ks->contains("tcp_prequeue")) GTEST_SKIP() << "this kernel still has tcp_prequeue";
    TempDir d;
    std::string json = d / "v.json", junit = d / "v.xml";
    auto r = hosttest::run(hosttest::hotline() + " validate --fix tcp-low-latency --journal-dir " + (d / "j") +
                           " -o " + json + " --junit " + junit);
    EXPECT_EQ(r.rc, 3) << r.out << r.err;
    EXPECT_NE(r.out.find("NOT-APPLICABLE"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tcp_prequeue"), std::string::npos) << r.out;
    auto j = hosttest::load_json(json);
    EXPECT_EQ(j.value("verdict", ""), "NOT-APPLICABLE");
    EXPECT_TRUE(j["trials"].empty());
    std::string x = hosttest::slurp(junit);
    EXPECT_EQ(xml_problem(x), "") << x;
    EXPECT_NE(x.find("tcp_prequeue"), std::string::npos) << x;
}

class ValidateTrials : public ValidateHost, public ::testing::WithParamInterface<const char*> {};

TEST_P(ValidateTrials, EarlyDemuxOffRunsToAVerdictAndLeavesTheHostAlone) {
    const std::string host_ip = knob("net/ipv4/ip_early_demux"), host_tcp = knob("net/ipv4/tcp_early_demux");
    TempDir d;
    std::string json = d / "v.json", junit = d / "v.xml", jdir = d / "j";
    Watched w = run_watching({HOTLINE_BIN, "validate", "--fix", "early-demux-off", "--scenario", GetParam(),
                              "--trials", "3", "--max-trials", "4", "--duration", "0.5s", "--journal-dir", jdir,
                              "-o", json, "--junit", junit});
    ASSERT_TRUE(w.rc >= 0 && w.rc <= 2) << "rc " << w.rc << "\n" << w.out << w.err;
    // The host's own namespace never saw a change, not even for a moment.
    EXPECT_EQ(w.host_ip_seen, std::set<std::string>{host_ip});
    EXPECT_EQ(w.host_tcp_seen, std::set<std::string>{host_tcp});
    EXPECT_EQ(knob("net/ipv4/ip_early_demux"), host_ip);
    EXPECT_FALSE(std::filesystem::exists(jdir + "/journal.json")) << "a journal left means knobs left changed";

    auto j = hosttest::load_json(json);
    std::string overall = j.value("verdict", "");
    EXPECT_EQ(expected_rc(overall), w.rc) << overall;
    // ABAB from a baseline, at least --trials per arm, at most --max-trials.
    const auto& trials = j["trials"];
    int nb = 0, nc = 0;
    for (std::size_t i = 0; i < trials.size(); ++i) {
        std::string arm = trials[i].value("arm", "");
        EXPECT_EQ(arm, i % 2 == 0 ? "baseline" : "fix") << "trial " << i;
        (arm == "baseline" ? nb : nc)++;
        // Every trial was measured: the scenario's own rate is in each.
        EXPECT_GT(trials[i]["metrics"].value("scenario.ops_per_s", 0.0), 0) << "trial " << i;
    }
    EXPECT_GE(nb, 3);
    EXPECT_GE(nc, 3);
    EXPECT_LE(nb, 4);
    EXPECT_EQ(nb, nc);
    // One progress line per trial on stderr.
    std::size_t lines = 0;
    for (std::size_t p = w.err.find("trial "); p != std::string::npos; p = w.err.find("trial ", p + 1))
        if (w.err.compare(p, 7, "trial 1") == 0 || isdigit((unsigned char)w.err[p + 6])) ++lines;
    EXPECT_GE(lines, trials.size()) << w.err;
    // Each criterion has a verdict; the expected one names the metric actually used.
    ASSERT_FALSE(j["criteria"].empty());
    for (auto& c : j["criteria"]) EXPECT_FALSE(c.value("verdict", "").empty());
    EXPECT_NE(w.out.find(overall), std::string::npos) << w.out;
    EXPECT_NE(w.out.find("applied net.ipv4.ip_early_demux"), std::string::npos) << w.out;
    std::string x = hosttest::slurp(junit);
    EXPECT_EQ(xml_problem(x), "") << x;
    EXPECT_NE(x.find("scenario.ops_per_s"), std::string::npos) << x;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ValidateTrials, ::testing::Values("dst-refcount", "tcp-crr"),
                         [](const auto& info) { return std::string(info.param) == "tcp-crr" ? "TcpCrr" : "DstRefcount"; });

namespace {

// Notes of a verdict document that say a trial was not counted and is repeated.
std::vector<std::string> repeat_notes(const nlohmann::json& j) {
    std::vector<std::string> out;
    for (auto& n : j.value("notes", nlohmann::json::array()))
        if (n.get<std::string>().find("the trial was not counted and is repeated") != std::string::npos)
            out.push_back(n.get<std::string>());
    return out;
}

// tcp-crr validation of early-demux-off, 2 trials per arm, with a socket call
// failing as tests/lib/faultfs.cpp is told by `fault`.
Watched validate_with_fault(const std::string& fault, const std::string& jdir, const std::string& json) {
    return run_watching({HOTLINE_BIN, "validate", "--fix", "early-demux-off", "--scenario", "tcp-crr", "--trials", "2",
                         "--max-trials", "2", "--duration", "1s", "--journal-dir", jdir, "-o", json},
                        {{"LD_PRELOAD", HL_FAULTFS_LIB}, {"HL_FAULT", fault}});
}

}  // namespace

// One trial's workload fails (the generator's first send refused with EIO, an
// error it does not count as a network fault, so the trial's result is an
// error): that trial is not counted, it is run again, and the validation goes
// on to a verdict with every trial it asked for.
TEST_F(ValidateHost, ATrialWhoseWorkloadFailedIsRepeatedAndTheValidationReachesAVerdict) {
    const std::string host_ip = knob("net/ipv4/ip_early_demux");
    TempDir d;
    std::string json = d / "v.json", jdir = d / "j";
    Watched w = validate_with_fault("send::1:EIO", jdir, json);
    ASSERT_TRUE(w.rc >= 0 && w.rc <= 2) << "rc " << w.rc << "\n" << w.out << w.err;
    auto j = hosttest::load_json(json);
    EXPECT_EQ(expected_rc(j.value("verdict", "")), w.rc) << j.dump(1);
    auto repeats = repeat_notes(j);
    ASSERT_EQ(repeats.size(), 1u) << j["notes"].dump(1);
    EXPECT_NE(repeats[0].find("trial 1: "), std::string::npos) << repeats[0];
    EXPECT_NE(repeats[0].find("send: Input/output error"), std::string::npos) << repeats[0];
    // Every trial asked for was measured: the failed one is not among them.
    const auto& trials = j["trials"];
    ASSERT_EQ(trials.size(), 4u) << trials.dump(1);
    for (std::size_t i = 0; i < trials.size(); ++i) {
        EXPECT_EQ(trials[i].value("arm", ""), i % 2 == 0 ? "baseline" : "fix") << "trial " << i;
        EXPECT_GT(trials[i]["metrics"].value("scenario.ops_per_s", 0.0), 0) << "trial " << i;
    }
    EXPECT_EQ(w.host_ip_seen, std::set<std::string>{host_ip});
    EXPECT_FALSE(std::filesystem::exists(jdir + "/journal.json")) << "a journal left means knobs left changed";
}

// A workload that keeps failing ends the validation without a verdict (exit 4)
// after the repeats allowed, and the report says what each failed trial met.
TEST_F(ValidateHost, AWorkloadThatKeepsFailingEndsTheValidationWithKnobsRestored) {
    const std::string host_ip = knob("net/ipv4/ip_early_demux");
    TempDir d;
    std::string json = d / "v.json", jdir = d / "j";
    Watched w = validate_with_fault("send::0:EIO", jdir, json);
    EXPECT_EQ(w.rc, 4) << w.out << w.err;
    auto j = hosttest::load_json(json);
    std::string error = j["context"].value("error", "");
    EXPECT_NE(error.find("trial 4: "), std::string::npos) << error;
    EXPECT_NE(error.find("workload errors in 4 trials"), std::string::npos) << error;
    EXPECT_EQ(repeat_notes(j).size(), 3u) << j["notes"].dump(1);
    EXPECT_TRUE(j["trials"].empty()) << j["trials"].dump(1);
    EXPECT_EQ(w.host_ip_seen, std::set<std::string>{host_ip});
    EXPECT_FALSE(std::filesystem::exists(jdir + "/journal.json")) << "a journal left means knobs left changed";
}

// Known answer: a change off the data path cannot double the scenario's
// throughput, so the verdict is FAIL (exit 1); machine noise moves the ratio by
// tens of percent, not by 2x.
TEST_F(ValidateHost, FixThatChangesNothingFails) {
    TempDir d;
    std::string json = d / "v.json";
    auto r = hosttest::run(hosttest::hotline() + " validate --fixes " + HOTLINE_FIXTURES + "/fixes" +
                           " --fix noop-fin-timeout --scenario dst-refcount --trials 4 --max-trials 10 -d 1s" +
                           " --journal-dir " + (d / "j") + " -o " + json);
    EXPECT_EQ(r.rc, 1) << r.out << r.err;
    auto j = hosttest::load_json(json);
    EXPECT_EQ(j.value("verdict", ""), "FAIL") << j.dump(1);
    bool judged = false;
    for (auto& c : j["criteria"]) {
        std::string m = c.value("metric", "");
        if (m != "scenario.ops_per_s") continue;
        judged = true;
        EXPECT_EQ(c.value("verdict", ""), "FAIL") << c.dump(1);
    }
    EXPECT_TRUE(judged) << j["criteria"].dump(1);
}

TEST_F(ValidateHost, SigkillMidValidationThenRestorePutsKnobsBack) {
    const std::string host_ip = knob("net/ipv4/ip_early_demux");
    TempDir d;
    std::string jdir = d / "j";
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(HOTLINE_BIN, HOTLINE_BIN, "validate", "--fix", "early-demux-off", "--scenario", "tcp-crr", "--trials",
              "5", "--duration", "1s", "--journal-dir", jdir.c_str(), (char*)nullptr);
        _exit(127);
    }
    // The journal exists exactly while a fix trial holds the knobs changed.
    bool seen = false;
    for (int i = 0; i < 3000 && !seen; ++i) {
        seen = std::filesystem::exists(jdir + "/journal.json");
        if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) FAIL() << "validate ended before a fix trial";
    }
    ASSERT_TRUE(seen);
    NetnsRef client{owned_name(pid, "c"), 0}, server{owned_name(pid, "s"), 0};
    // The journal entry is written before the knob: kill once the knob itself changed.
    for (int i = 0; i < 400 && knob("net/ipv4/ip_early_demux", client) != "0"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st));
    // Killed in a fix trial: the scenario's namespaces still hold the fix's values.
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", client), "0");
    auto r = hosttest::run(hosttest::hotline() + " restore --journal-dir " + jdir);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("restored"), std::string::npos) << r.out;
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", client), "1");
    EXPECT_EQ(knob("net/ipv4/tcp_early_demux", client), "1");
    EXPECT_EQ(knob("net/ipv4/ip_early_demux", server), "1");
    EXPECT_FALSE(std::filesystem::exists(jdir + "/journal.json"));
    EXPECT_EQ(knob("net/ipv4/ip_early_demux"), host_ip);
    // The dead run's namespaces are removed as the next scenario would.
    std::system(("ip netns del " + client.name + " 2>/dev/null; ip netns del " + server.name + " 2>/dev/null").c_str());
}

TEST_F(ValidateHost, TwoSignalsInAFixTrialStillRestoreAndExit4) {
    const std::string host_ip = knob("net/ipv4/ip_early_demux");
    TempDir d;
    std::string jdir = d / "j", json = d / "v.json";
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(HOTLINE_BIN, HOTLINE_BIN, "validate", "--fix", "early-demux-off", "--scenario", "dst-refcount",
              "--duration", "1s", "--journal-dir", jdir.c_str(), "-o", json.c_str(), (char*)nullptr);
        _exit(127);
    }
    bool seen = false;
    for (int i = 0; i < 3000 && !seen; ++i) {
        seen = std::filesystem::exists(jdir + "/journal.json");
        if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(seen);
    NetnsRef client{owned_name(pid, "c"), 0};
    // The journal entry is written before the knob: wait for the knob itself.
    for (int i = 0; i < 200 && knob("net/ipv4/ip_early_demux", client) != "0"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(knob("net/ipv4/ip_early_demux", client), "0");
    kill(pid, SIGINT);
    kill(pid, SIGTERM);  // a second signal must not cut the restore short
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st)) << "killed by a signal instead of restoring";
    EXPECT_EQ(WEXITSTATUS(st), 4);
    EXPECT_FALSE(std::filesystem::exists(jdir + "/journal.json"));
    EXPECT_EQ(knob("net/ipv4/ip_early_demux"), host_ip);
    auto j = hosttest::load_json(json);
    EXPECT_NE(j["context"].value("error", "").find("interrupted"), std::string::npos) << j.dump(1);
    // The scenario's network went with it.
    auto r = hosttest::run("ip netns list");
    EXPECT_EQ(r.out.find(client.name), std::string::npos) << r.out;
}

TEST_F(ValidateHost, RecordingHoldsWhatDiffNeedsAndDiffJudgesIt) {
    TempDir d;
    std::string rec = d / "r.json", junit = d / "d.xml", json = d / "d.json";
    auto r = hosttest::run(hosttest::hotline() + " record --scenario dst-refcount -d 3s -q -o " + rec);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto doc = hosttest::load_json(rec);
    const auto& an = doc["analysis"];
    ASSERT_TRUE(an.contains("interval_metrics")) << an.dump(1);
    EXPECT_GE(an["interval_metrics"].size(), 2u);
    EXPECT_GT(an["interval_metrics"][0].value("scenario.ops_per_s", 0.0), 0);
    // Operations are counted per interval, not spread evenly over them: the
    // rates then differ from interval to interval and sit around the run's.
    EXPECT_EQ(an.value("interval_ops", ""), "live");
    double run_rate = doc["scenario"]["throughput"].value("messages_per_s", 0.0);
    std::set<double> rates;
    for (auto& m : an["interval_metrics"]) {
        double x = m.value("scenario.ops_per_s", 0.0);
        rates.insert(x);
        EXPECT_GT(x, run_rate / 3) << an["interval_metrics"].dump(1);
        EXPECT_LT(x, run_rate * 3) << an["interval_metrics"].dump(1);
    }
    EXPECT_GT(rates.size(), 1u) << an["interval_metrics"].dump(1);
    // The scenario got its whole duration as traffic: the recorder did not cut it short.
    EXPECT_EQ(doc["scenario"].value("stop_reason", ""), "finished") << doc["scenario"].dump(1);
    // This kernel's dst_entry layout and markers, for each kernel-pair fix.
    ASSERT_TRUE(an["diff"]["layout_metrics"].contains("layout.dst_entry.read_fields_on_refcnt_line"));
    for (const char* f : {"dst-refcnt-false-sharing", "random-mix-timer", "prequeue-dst-drop"})
        EXPECT_TRUE(an["diff"]["fixes"].contains(f)) << f;
    // The same kernel on both sides cannot show the layout fix.  A kernel with
    // the fixed layout has 0 fields to remove on both sides: INCONCLUSIVE (exit
    // 2, nothing to improve on); one without it sees no change: FAIL (exit 1).
    r = hosttest::run(hosttest::hotline() + " diff " + rec + " " + rec +
                      " --expect dst-refcnt-false-sharing -o " + json + " --junit " + junit);
    auto v = hosttest::load_json(json);
    EXPECT_EQ(v.value("mode", ""), "diff");
    const bool fixed = v["context"]["baseline"].value("carries_fix", false);
    EXPECT_EQ(v.value("verdict", ""), fixed ? "INCONCLUSIVE" : "FAIL") << v.dump(1);
    EXPECT_EQ(r.rc, fixed ? 2 : 1) << r.out << r.err;
    if (fixed) {
        EXPECT_NE(r.out.find("the metric is 0 in both arms"), std::string::npos) << r.out;
    }
    EXPECT_EQ(xml_problem(hosttest::slurp(junit)), "");
    EXPECT_NE(r.out.find("layout.dst_entry.read_fields_on_refcnt_line"), std::string::npos) << r.out;
}

TEST_F(ValidateHost, ScenarioOptionsCountWithoutScenario) {
    // No --scenario: the fix's default scenario runs, shaped by the options given.
    TempDir d;
    std::string json = d / "v.json";
    auto r = hosttest::run(hosttest::hotline() + " validate --fix early-demux-off --loopback --cpus 0" +
                           " --trials 1 --max-trials 1 -d 1s --journal-dir " + (d / "j") + " -o " + json);
    auto j = hosttest::load_json(json);
    EXPECT_EQ(expected_rc(j.value("verdict", "")), r.rc) << r.out << r.err;
    const auto& p = j["context"]["scenario_params"];
    EXPECT_EQ(p.value("name", ""), "dst-refcount") << j["context"].dump(1);
    EXPECT_EQ(p.value("loopback", false), true) << p.dump();
    EXPECT_EQ(p["cpus"], nlohmann::json({0})) << p.dump();
}
