// SPDX-License-Identifier: Apache-2.0
// `hotline report INPUT.json -o FILE.html` and the `--html FILE` of the other
// subcommands: the HTML page of a saved document (src/report/html_report.cpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>

#include "commands.hpp"
#include "hotline/report/html_report.hpp"
#include "hotline/base/json_limits.hpp"

namespace hotline::cli {

bool write_html(const std::string& file, const HtmlInput& in) {
    if (file.empty()) return true;
    auto page = render_html(in);
    auto st = page ? write_file_atomic(file, *page) : Status(page.error());
    if (!st) {
        fail(st.error(), kExitError);
        return false;
    }
    fmt::print(stderr, "hotline: report written to {}\n", file);
    return true;
}

Result<nlohmann::json> load_json(const std::string& path) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto doc = parse_json_limited(*text);
    if (!doc) return make_error(path + ": " + doc.error().what, EINVAL, doc.error().hint);
    return doc;
}

namespace {

// A diff verdict names its two recordings; they are looked for beside the
// verdict, then as named.  Missing ones only leave the layouts out.
std::optional<nlohmann::json> recording_named_in(const nlohmann::json& verdict, const char* arm,
                                                 const std::string& verdict_path) {
    static const nlohmann::json kNone;
    const nlohmann::json& ctx = verdict.contains("context") ? verdict["context"] : kNone;
    if (!ctx.contains(arm) || !ctx[arm].is_object() || !ctx[arm].contains("file") || !ctx[arm]["file"].is_string())
        return std::nullopt;
    std::filesystem::path named = ctx[arm]["file"].get<std::string>();
    for (auto& p : {std::filesystem::path(verdict_path).parent_path() / named.filename(), named}) {
        auto doc = load_json(p.string());
        if (doc) return std::move(*doc);
    }
    fmt::print(stderr, "hotline: {} recording {} not found; the page leaves its layout out\n", arm, named.string());
    return std::nullopt;
}

}  // namespace

void add_report_command(CLI::App& app, ReportArgs& a) {
    a.app = app.add_subcommand("report", "Render a saved recording or verdict (JSON) as one self-contained HTML page");
    a.app->add_option("input", a.input, "A recording (record -o) or verdict (validate/diff --json)")->required();
    a.app->add_option("-o,--output", a.output, "HTML file to write")->required();
    a.app->footer(examples({"hotline report rec.json -o rec.html", "hotline report verdict.json -o verdict.html",
                            "hotline report findings.json -o findings.html"}));
}

int run_report(const ReportArgs& a) {
    if (a.output.empty()) return fail(make_error("-o names no file", EINVAL, "give the HTML file to write, e.g. -o rec.html"), kExitUsage);
    auto doc = load_json(a.input);
    if (!doc) return fail(doc.error(), kExitUsage);
    HtmlInput in{recording_with_findings(std::move(*doc)), a.input, std::nullopt, std::nullopt};
    if (string_or(in.doc, "mode", "") == "diff") {
        in.baseline = recording_named_in(in.doc, "baseline", a.input);
        in.candidate = recording_named_in(in.doc, "candidate", a.input);
    }
    if (!render_html(in)) return fail(render_html(in).error(), kExitUsage);
    return write_html(a.output, in) ? kExitOk : kExitError;
}

}  // namespace hotline::cli
