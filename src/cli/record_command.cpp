// SPDX-License-Identifier: Apache-2.0
// `hotline record`: the record engine (src/session/) with interval tables, a
// summary, the recording's findings and its JSON document.
#include <signal.h>
#include <time.h>

#include <fmt/format.h>
#include <iostream>

#include "commands.hpp"
#include "hotline/report/html_report.hpp"
#include "hotline/diagnose/diagnose.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/report/output.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"
#include "hotline/session/recording.hpp"

namespace hotline::cli {

namespace {

std::string clock_label() {
    time_t now = time(nullptr);
    struct tm tm {};
    localtime_r(&now, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
}

// The options the engine takes, as the command line gave them.
Result<TracingOptions> tracing_options(const RecordArgs& a) {
    TracingOptions o = a.tracing;
    if (!a.scenario.name.empty()) {
        auto so = to_scenario_options(a.scenario, false);
        if (!so) return so.error();
        o.scenario = *so;
    }
    return o;
}

void print_plan(const Plan& plan) {
    for (auto& t : plan.targets) {
        if (t.observable())
            fmt::print(stderr, "hotline: {:<16} {} ({}): {}\n", t.target, to_string(t.mechanism), to_string(t.fidelity), t.attach);
        else
            fmt::print(stderr, "hotline: {:<16} unavailable: {}\n", t.target, t.unavailable_reason);
    }
}

void record_options(RecordingWriter& rec, const RecordArgs& a, const TracingSetup& s) {
    const TracingOptions& t = a.tracing;
    rec.set_options({{"duration_s", s.duration}, {"interval_s", s.interval}, {"per_cpu", a.per_cpu},
                     {"mechanism", t.mechanism}, {"workload", t.workload}, {"sample_freq", t.sample_freq},
                     {"latency", t.latency}, {"funcs", t.funcs}, {"handoffs", t.handoffs},
                     {"handoff_sample", t.handoff_sample}, {"handoff_share", t.handoff_share},
                     {"owner_map_size", t.owner_capacity}});
}

// The tables go to stdout, or to stderr when stdout carries the JSON recording.
std::ostream& text_out(const RecordArgs& a) { return a.json ? std::cerr : std::cout; }

void print_summary(const Interval& whole, const std::string& stop_reason, const RecordArgs& a, const Topology& topo,
                   const SessionInfo& info) {
    text_out(a) << fmt::format("summary: {:.2f} s, {}\n", whole.seconds(), stop_reason);
    render_interval_text(text_out(a), whole, topo, a.per_cpu, "totals");
    for (auto& t : whole.d.targets) {
        if (!t.has_latency) continue;
        text_out(a) << fmt::format("{} latency ({}, {} calls timed, {} unpaired)\n", t.target,
                                 t.mechanism == Mechanism::kFentry ? "fentry/fexit" : "kprobe/kretprobe",
                                 t.lat_count, t.lat_lost);
        render_log2_hist(text_out(a), t.hist, "nsecs");
        text_out(a) << "\n";
    }
    render_handoffs_text(text_out(a), whole, topo, a.per_cpu);
    text_out(a) << "\n";
    render_hot_objects_text(text_out(a), top_objects(whole.d.objects, std::size_t(a.top)), whole.tracking_seconds());
    text_out(a) << "\n";
    render_layouts_text(text_out(a), info.layouts);
    for (auto& note : info.notes) text_out(a) << note << "\n";
    if (whole.d.has_workq) {
        text_out(a) << "\n";
        render_workq_text(text_out(a), whole.d.workq, topo, whole.seconds(), info.random_mix, std::size_t(a.top));
    } else if (!info.workq.empty() && info.workq.rfind("attached", 0) != 0) {
        text_out(a) << "queue_work_on attribution: " << info.workq << "\n";
    }
    text_out(a) << "\n";
    render_cost_text(text_out(a), whole.d.cost, whole.seconds());
}

// Each interval's tables as it is read, unless --quiet.
RecordingHooks print_hooks(const RecordArgs& a, const Topology& topo) {
    RecordingHooks h;
    h.log = &std::cerr;
    h.on_interval = [&a, &topo, printed = 0](const Interval& iv) mutable {
        if (!a.quiet) {
            render_interval_text(text_out(a), iv, topo, a.per_cpu, fmt::format("{}  interval {}", clock_label(), ++printed));
            render_handoffs_text(text_out(a), iv, topo, a.per_cpu);
        }
        text_out(a).flush();
    };
    return h;
}

// The recording's document on stdout, in -o and --html, or its findings.
int write_outputs(const RecordArgs& a, const nlohmann::json& doc, nlohmann::json* doc_out) {
    if (a.json) std::cout << document_text(doc);
    else if (!a.no_findings) print_recording_findings(doc);
    if (doc_out) *doc_out = doc;
    if (!a.output.empty()) {
        if (auto w = write_file_atomic(a.output, document_text(doc)); !w) return fail(w.error(), kExitError);
        fmt::print(stderr, "hotline: recording written to {}\n", a.output);
    }
    if (!write_html(a.html, HtmlInput{recording_with_findings(doc), a.output, std::nullopt, std::nullopt}))
        return kExitError;
    return kExitOk;
}

}  // namespace

// The top findings of the recording just made, one line each.
namespace {

// The built-in rules judged on a recording, as `hotline diagnose FILE` judges them.
Result<Diagnosis> recording_diagnosis(const nlohmann::json& doc) {
    auto cat = FixCatalog::builtin();
    if (!cat) return cat.error();
    auto rules = RuleSet::builtin(*cat);
    if (!rules) return rules.error();
    auto in = input_from_recording(doc, "this recording");
    if (!in) return in.error();
    return diagnose(*rules, *cat, *in);
}

}  // namespace

void print_recording_findings(const nlohmann::json& doc) {
    auto d = recording_diagnosis(doc);
    if (!d) {
        fmt::print(stderr, "hotline: findings: {}\n", d.error().message());
        return;
    }
    std::cout << "\n";
    render_findings_brief(std::cout, *d, kRecordFindings);
}

nlohmann::json recording_with_findings(nlohmann::json doc) {
    if (!doc.is_object() || doc.value("schema", nlohmann::json()) != kRecordingSchema) return doc;
    auto& an = doc["analysis"];
    if (!an.is_object() || !an.contains("diagnosis") || !an["diagnosis"].is_object()) return doc;
    if (auto d = recording_diagnosis(doc); d) an["diagnosis"]["findings"] = to_json(*d)["findings"];
    return doc;
}

int run_record(const RecordArgs& a, nlohmann::json* doc_out) {
    auto opts = tracing_options(a);
    auto setup = opts ? check_tracing_options(*opts) : Result<TracingSetup>(opts.error());
    if (!setup) return fail(setup.error(), kExitUsage);
    if (a.top < 0) return fail(make_error("--top must not be negative", EINVAL), kExitUsage);
    // A bad -o is reported now, not after the whole recording.
    if (!a.output.empty())
        if (auto st = check_output_path(a.output); !st) return fail(st.error(), kExitUsage);
    auto topo = read_topology();
    if (!topo) return fail(topo.error(), kExitError);
    auto wl_cpus = check_workload_cpus(a.tracing, *topo);
    if (!wl_cpus) return fail(wl_cpus.error(), kExitUsage);

    // Children unblock what they need; SIGCHLD wakes the loop when the command exits.
    ShutdownSignals signals({SIGCHLD});
    KernelInfo k = probe_kernel();
    auto run = Recording::open(*setup, *wl_cpus, k, *topo);
    if (!run) return fail(run.error(), kExitError);
    print_plan((*run)->plan());
    if (!(*run)->plan().any_observable()) {
        fmt::print(stderr, "hotline: {}\n", kNothingObservable);
        return kExitNothingObservable;
    }
    record_options((*run)->writer(), a, *setup);
    if (auto st = (*run)->run(signals, print_hooks(a, *topo)); !st) return fail(st.error(), kExitError);
    if (a.summary) print_summary((*run)->whole(), (*run)->stop_reason(), a, *topo, (*run)->info());
    if (int rc = write_outputs(a, (*run)->writer().doc(), doc_out); rc != kExitOk) return rc;
    const int status = (*run)->exit_status();
    (*run)->detach();  // before reporting the command's status
    if (!a.tracing.command.empty()) return status < 0 ? kExitError : status;
    return kExitOk;
}

}  // namespace hotline::cli
