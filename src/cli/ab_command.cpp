// SPDX-License-Identifier: Apache-2.0
// `hotline ab`: a kernel-pair fix judged between two guests.  Records the fix's
// scenario with the same command line on the kernel without the fix and on the
// kernel with it (`hotline vm` each), then judges the pair with `diff`'s
// statistics (src/validate/diff.cpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "commands.hpp"
#include "hotline/validate/validation.hpp"

namespace hotline::cli {
namespace fs = std::filesystem;

namespace {

// The targets the fix's criteria name (calls.T.*, latency.T.*, handoff.T.*):
// recording only those keeps the emulated guests' work small.
std::vector<std::string> criteria_targets(const FixDef& f) {
    std::set<std::string> out;
    for (auto& c : f.criteria)
        for (auto& m : c.metrics) {
            auto dot = m.find('.');
            auto kind = m.substr(0, dot);
            auto second = m.find('.', dot + 1);
            if ((kind == "calls" || kind == "latency" || kind == "handoff") && second != std::string::npos)
                out.insert(m.substr(dot + 1, second - dot - 1));
        }
    return {out.begin(), out.end()};
}

std::string not_in_reach_reason(const FixDef& f, bool baseline_side) {
    const char* side = baseline_side ? "without" : "with";
    const char* opt = baseline_side ? "baseline" : "candidate";
    const std::string& range = baseline_side ? f.kernels.baseline_range : f.kernels.fixed_range;
    return fmt::format("no kernel {} the fix is in reach: {} needs one of {} (Debian's archive has none); "
                       "pass one: hotline ab --fix {} --{} PATH (a bzImage, vmlinux or linux-image .deb; "
                       "--{}-modules DIR for its veth module)",
                       side, f.name, range.empty() ? "unknown versions" : range, f.name, opt, opt);
}

struct Side {
    std::string label;  // "baseline", "candidate"
    std::string kernel;
    std::string modules;
};

// One guest run of `hotline record` on the side's kernel; the recording, parsed.
Result<nlohmann::json> record_in_guest(const VmCli& v, const Side& s, const std::vector<std::string>& record_args,
                                       const fs::path& dir) {
    VmOptions o = v.guest;
    o.kernel = s.kernel;
    o.modules = s.modules;
    fs::path rec = dir / (s.label + ".json");
    std::vector<std::string> args = record_args;
    args.insert(args.end(), {"--output", rec.string()});
    fmt::print(stderr, "hotline ab: {} kernel {}: hotline {}\n", s.label, s.kernel, fmt::join(args, " "));
    double t0 = monotonic_seconds();
    // stdout carries only the verdict
    int rc = run_guest_cli(o, v.keep.empty() ? "" : (dir / s.label).string(), {}, args, true);
    if (rc == kExitInterrupted) return make_error("interrupted", EINTR);
    if (rc != 0) return make_error(fmt::format("recording on the {} kernel {} failed (exit status {})", s.label,
                                               s.kernel, rc));
    fmt::print(stderr, "hotline ab: {} kernel {} done in {:.0f} s\n", s.label, s.kernel, monotonic_seconds() - t0);
    auto text = read_file(rec.string());
    if (!text) return text.error();
    try {
        return nlohmann::json::parse(*text);
    } catch (const std::exception& e) {
        return make_error(rec.string() + ": not JSON: " + e.what());
    }
}

// Where the recordings go: --keep DIR, else a directory removed afterwards.
struct WorkDir {
    fs::path path;
    bool remove = false;
    ~WorkDir() {
        std::error_code ec;
        if (remove) fs::remove_all(path, ec);
    }
};

Result<fs::path> make_work_dir(const VmCli& v, WorkDir& w) {
    if (!v.keep.empty()) {
        std::error_code ec;
        fs::create_directories(v.keep, ec);
        if (ec) return make_error("--keep " + v.keep + ": " + ec.message());
        w.path = fs::absolute(v.keep);
        return w.path;
    }
    std::string tmpl = (fs::temp_directory_path() / "hotline-ab.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return make_error("cannot create a temporary directory", errno);
    w.path = tmpl;
    w.remove = true;
    return w.path;
}

int judge_pair(const VmCli& v, const FixDef& fix, const Side& base, const Side& cand) {
    std::string scenario = fix.scenarios.empty() ? "" : fix.scenarios.front();
    if (scenario.empty()) return fail(make_error("fix " + fix.name + " names no scenario"), kExitValidateError);
    std::vector<std::string> rec{"record", "--scenario", scenario, "--duration", v.duration, "--quiet"};
    auto targets = v.targets.empty() ? criteria_targets(fix) : v.targets;
    if (!targets.empty()) rec.insert(rec.end(), {"--targets", fmt::format("{}", fmt::join(targets, ","))});
    WorkDir work;
    auto dir = make_work_dir(v, work);
    if (!dir) return fail(dir.error(), kExitValidateError);
    auto b = record_in_guest(v, base, rec, *dir);
    if (!b) return fail(b.error(), b.error().err == EINTR ? kExitInterrupted : kExitValidateError);
    auto c = record_in_guest(v, cand, rec, *dir);
    if (!c) return fail(c.error(), c.error().err == EINTR ? kExitInterrupted : kExitValidateError);
    auto r = diff_recordings(fix, *b, *c, base.kernel, cand.kernel);
    if (!r) return fail(r.error(), kExitValidateError);
    if (!render_all(*r, VerdictFiles{v.output, v.junit_file, v.html_file, v.json, *b, *c})) return kExitValidateError;
    return exit_code(r->overall);
}

}  // namespace

int run_ab(const VmCli& v) {
    auto cat = load_catalog(v.fixes_dir);
    if (!cat) return fail(cat.error(), kExitUsage);
    const FixDef* fix = cat->find(v.fix);
    if (!fix) return fail(make_error(unknown_name_message("fix", v.fix, cat->names()), EINVAL, "known fixes: " + cat->names()), kExitUsage);
    if (fix->mode != FixMode::kKernelPair)
        return fail(make_error(fmt::format("{} is a runtime fix: judge it on one kernel with `hotline validate --fix {}` "
                                           "(in a guest: hotline vm -- validate --fix {})",
                                           fix->name, fix->name, fix->name)),
                    kExitUsage);
    Side base{"baseline", v.baseline.empty() ? fix->kernels.baseline : v.baseline, v.baseline_modules};
    Side cand{"candidate", v.candidate.empty() ? fix->kernels.fixed : v.candidate, v.candidate_modules};
    for (const Side* s : {&base, &cand}) {
        if (!s->kernel.empty()) continue;
        auto r = not_applicable_report(fix->name, fix->criteria, not_in_reach_reason(*fix, s == &base));
        if (!render_all(r, VerdictFiles{v.output, v.junit_file, v.html_file, v.json, std::nullopt, std::nullopt})) return kExitValidateError;
        return exit_code(r.overall);
    }
    return judge_pair(v, *fix, base, cand);
}

}  // namespace hotline::cli
