// SPDX-License-Identifier: Apache-2.0
// `hotline diagnose [RECORDING.json]`: the findings of a recording, or of one
// made now with record's options, each with its fixes and confirming command.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/diagnose/diagnose.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/report/html_report.hpp"
#include "hotline/report/output.hpp"

namespace hotline::cli {

void add_diagnose_command(CLI::App& app, DiagnoseCli& d) {
    d.diagnose = app.add_subcommand(
        "diagnose", "Name what a recording shows, the catalog fixes for it and the command that confirms each; "
                    "without RECORDING, record first (record's options)");
    d.diagnose->add_option("recording", d.recording, "A recording (`hotline record -o FILE`)");
    d.diagnose->add_option("--fixes", d.fixes_dir, "Also load *.toml fix definitions and [[rule]] tables from DIR");
    d.diagnose->add_flag("--json", d.json, "Print the findings as JSON (docs/diagnose.md)");
    d.diagnose->add_option("-o,--output", d.output, "Also write the findings as JSON to FILE");
    d.diagnose->add_option("--html", d.html, "Write the findings as a self-contained HTML report to FILE");
    add_record_options(d.diagnose, d.record);
    d.diagnose->footer(examples({"hotline diagnose rec.json", "hotline diagnose -d 10s --workload churn-split",
                                 "hotline diagnose rec.json --json -o findings.json --html findings.html"}));
}

namespace {

Result<nlohmann::json> recording_document(const DiagnoseCli& d, int& record_status) {
    if (!d.recording.empty()) {
        return load_json(d.recording);
    }
    if (d.record.tracing.duration.empty() && d.record.scenario.name.empty())
        return make_error("diagnose without a recording records first and needs --duration (or --scenario)", EINVAL,
                          "e.g. `hotline diagnose -d 10s --workload churn-split`, or give a recording file");
    RecordArgs ra = d.record;
    ra.quiet = true;
    ra.summary = false;
    ra.no_findings = true;
    nlohmann::json doc;
    record_status = run_record(ra, &doc);
    if (doc.is_null()) return make_error("the recording failed (see above)", 0);
    return doc;
}

// A recording made now stored the built-in catalog's applicability only: the
// fixes of --fixes DIR are judged on this kernel too, so they can be prescribed.
void add_applicability_here(DiagnoseInput& in, const FixCatalog& cat) {
    auto btf = KernelBtf::load();
    auto kallsyms = Kallsyms::load();
    auto topo = read_topology();
    LiveKernelFacts facts(KnobRoots{}, btf ? &*btf : nullptr, kallsyms ? &*kallsyms : nullptr,
                          topo ? int(topo->nodes.size()) : 1);
    for (auto& f : cat.fixes())
        if (!in.applicability.contains(f.name)) in.applicability[f.name] = to_json(check_applicability(f, facts));
}

}  // namespace

int run_diagnose(const DiagnoseCli& d) {
    auto cat = load_catalog(d.fixes_dir);
    if (!cat) return fail(cat.error(), kExitUsage);
    auto rules = load_rules(*cat, d.fixes_dir);
    if (!rules) return fail(rules.error(), kExitUsage);
    int record_status = kExitOk;
    auto doc = recording_document(d, record_status);
    if (!doc) return fail(doc.error(), d.recording.empty() ? (record_status ? record_status : kExitUsage) : kExitError);
    auto in = input_from_recording(*doc, d.recording.empty() ? "live" : d.recording);
    if (!in) return fail(in.error(), kExitError);
    if (d.recording.empty()) add_applicability_here(*in, *cat);
    Diagnosis diag = diagnose(*rules, *cat, *in);
    nlohmann::json out = to_json(diag);
    if (d.json) std::cout << document_text(out);
    else render_diagnosis_text(std::cout, diag);
    if (!d.output.empty())
        if (auto w = write_file_atomic(d.output, document_text(out)); !w) return fail(w.error(), kExitError);
    if (!write_html(d.html, HtmlInput{out, d.output, std::nullopt, std::nullopt})) return kExitError;
    return kExitOk;
}

}  // namespace hotline::cli
