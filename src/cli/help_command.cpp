// SPDX-License-Identifier: Apache-2.0
// `hotline help [COMMAND...]`, the examples at the end of each --help, and the
// usage errors: an unknown subcommand is named with the closest known one, and
// every refused command line exits kExitUsage.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "hotline/model/verdict.hpp"

namespace hotline::cli {

namespace {

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
    return app.get_subcommands([](CLI::App*) { return true; });
}

std::string subcommand_names(CLI::App& app) {
    std::string s;
    for (auto* sub : subcommands_of(app))
        if (!sub->get_group().empty()) s += (s.empty() ? "" : ", ") + sub->get_name();  // not the hidden ones
    return s;
}

CLI::App* find_subcommand(CLI::App& app, const std::string& name) {
    for (auto* sub : subcommands_of(app))
        if (sub->get_name() == name) return sub;
    return nullptr;
}

// "hotline fixes show": the words that select `app`.
std::string command_path(const CLI::App& app) {
    std::string path = app.get_name();
    for (auto* p = app.get_parent(); p; p = p->get_parent()) path = p->get_name() + " " + path;
    return path;
}

int unknown_subcommand(CLI::App& app, const std::string& word) {
    std::string kind = app.get_parent() ? fmt::format("{} command", command_path(app)) : "command";
    fmt::print(stderr, "hotline: {}\nRun `{}` for the commands.\n", unknown_name_message(kind, word, subcommand_names(app)),
               app.get_parent() ? "hotline help " + command_path(app).substr(std::string("hotline ").size()) : "hotline help");
    return kExitUsage;
}

// True when `arg` is an option of `app` that takes a value in the next word.
bool takes_next_word(CLI::App& app, const std::string& arg) {
    if (arg.find('=') != std::string::npos) return false;
    const CLI::Option* opt = app.get_option_no_throw(arg);
    return opt && opt->get_type_size_max() > 0;
}

}  // namespace

std::string examples(std::initializer_list<const char*> lines) {
    std::string s = "\nExamples:\n";
    for (auto* l : lines) s += fmt::format("  {}\n", l);
    return s;
}

std::string exit_status_help() {
    return fmt::format(
        "\nExit status:\n"
        "  {:<3} success; validate, diff: PASS\n"
        "  {:<3} runtime error; validate, diff: FAIL\n"
        "  {:<3} validate, diff: INCONCLUSIVE\n"
        "  {:<3} probe, record: no target can be observed; fixes apply, validate, diff: NOT-APPLICABLE\n"
        "  {:<3} cost --strict: over budget; validate, diff: an error that prevents a verdict\n"
        "  {:<3} bad usage: unknown command, option, target, fix or scenario; bad value or configuration\n"
        "  {:<3} vm: the guest failed (boot, kernel panic, hang past --timeout)\n"
        "  {:<3} interrupted (Ctrl-C, SIGTERM): knobs restored and programs detached first\n",
        kExitOk, kExitError, exit_code(Verdict::kInconclusive), kExitNothingObservable, kExitBudget, kExitUsage,
        kExitVmGuestFailed, kExitInterrupted);
}

namespace {

// Walks the subcommand words before "--"; *unknown is the first word that
// names no subcommand where one is expected.  Returns the last one named.
CLI::App* walk_subcommands(CLI::App& app, int argc, char** argv, std::string* unknown) {
    CLI::App* cur = &app;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--") break;
        if (arg.size() > 1 && arg[0] == '-') {
            if (takes_next_word(*cur, arg)) ++i;
            continue;
        }
        if (subcommands_of(*cur).empty()) break;  // from here on, positionals
        CLI::App* sub = find_subcommand(*cur, arg);
        if (!sub) {
            *unknown = arg;
            break;
        }
        cur = sub;
        if (sub->get_name() == "help") break;  // its words are checked when it runs
    }
    return cur;
}

}  // namespace

std::optional<int> check_subcommand_words(CLI::App& app, int argc, char** argv) {
    std::string unknown;
    CLI::App* cur = walk_subcommands(app, argc, argv, &unknown);
    if (!unknown.empty()) return unknown_subcommand(*cur, unknown);
    return std::nullopt;
}

CLI::App* named_subcommand(CLI::App& app, int argc, char** argv) {
    std::string unknown;
    return walk_subcommands(app, argc, argv, &unknown);
}

void add_help_command(CLI::App& app, HelpArgs& h) {
    h.help = app.add_subcommand("help", "Show the help of hotline or of one of its commands");
    h.help->add_option("command", h.words, "The command, e.g. `fixes show`");
    h.help->footer(examples({"hotline help", "hotline help validate", "hotline help fixes show"}));
}

int run_help(CLI::App& app, const HelpArgs& h) {
    CLI::App* cur = &app;
    for (auto& w : h.words) {
        CLI::App* sub = find_subcommand(*cur, w);
        if (!sub) return unknown_subcommand(*cur, w);
        cur = sub;
    }
    // The same text as `hotline COMMAND --help`, whose usage line names the parents.
    // (App::help() would answer for the selected subcommand, `help` itself.)
    std::cout << cur->get_formatter()->make_help(cur, command_path(*cur), CLI::AppFormatMode::Normal);
    return kExitOk;
}

namespace {

// The long option names `app` and its parents take, as closest_name's list.
std::string long_option_names(const CLI::App& app) {
    std::string names;
    for (const CLI::App* a = &app; a; a = a->get_parent())
        for (const CLI::Option* o : a->get_options())
            for (const auto& l : o->get_lnames()) names += (names.empty() ? "--" : ", --") + l;
    return names;
}

// For an option CLI11 did not expect ("--duraton"): the closest one the
// command takes, as a usage error; nullopt when none is close.
std::optional<std::string> option_suggestion(CLI::App& cmd, const CLI::ParseError& e) {
    if (!dynamic_cast<const CLI::ExtrasError*>(&e)) return std::nullopt;
    std::string what = e.what();
    auto colon = what.rfind(": ");
    if (colon == std::string::npos) return std::nullopt;
    std::istringstream words(what.substr(colon + 2));
    for (std::string word; words >> word;) {
        if (word.rfind("--", 0) != 0) continue;
        const std::string name = word.substr(0, word.find('='));
        auto near = closest_name(name, long_option_names(cmd));
        if (!near.empty())
            return fmt::format("{}: unknown option \"{}\"; did you mean \"{}\"?", command_path(cmd), name, near);
    }
    return std::nullopt;
}

}  // namespace

namespace {

// What a text option's value is, from its long name: the usage lines and man
// pages say FILE, DIR, DURATION, NAME... instead of CLI11's TEXT.
std::string metavariable(const std::string& name) {
    static const std::vector<std::pair<std::vector<std::string>, const char*>> kKinds{
        {{"output", "html", "junit", "config", "web.config.file", "script"}, "FILE"},
        {{"fixes", "keep", "modules", "journal-dir", "baseline-modules", "candidate-modules"}, "DIR"},
        {{"duration", "interval", "timeout", "observe"}, "DURATION"},
        {{"kernel", "baseline", "candidate"}, "KERNEL"},
        {{"fix", "expect", "scenario", "workload", "qperf-test"}, "NAME"},
        {{"targets"}, "TARGET"},
        {{"func", "functions", "tracepoints"}, "GLOB"},
        {{"types"}, "TYPE"},
        {{"cpus", "workload-cpus", "fix-cpus"}, "CPULIST"},
        {{"netns"}, "NETNS"},
        {{"memory"}, "SIZE"},
        {{"listen"}, "ADDRESS"},
        {{"metric"}, "REGEX"},
        {{"server-command"}, "COMMAND"},
        {{"mechanism"}, "MECHANISM"},
        {{"ops"}, "KIND"},
        {{"log.level"}, "LEVEL"},
        {{"log.format"}, "FORMAT"},
        {{"msg-sizes"}, "BYTES"},
    };
    for (const auto& [names, kind] : kKinds)
        if (std::find(names.begin(), names.end(), name) != names.end()) return kind;
    return "TEXT";
}

}  // namespace

void name_metavariables(CLI::App& app) {
    for (CLI::Option* o : app.get_options())
        if (o->get_type_name() == "TEXT" && !o->get_lnames().empty()) o->type_name(metavariable(o->get_lnames().front()));
    for (CLI::App* sub : subcommands_of(app)) name_metavariables(*sub);
}

int usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
    if (auto hint = option_suggestion(*named_subcommand(app, argc, argv), e)) {
        fmt::print(stderr, "{}\nRun with --help for more information.\n", *hint);
        return kExitUsage;
    }
    int rc = app.exit(e);
    if (rc == 0) return kExitOk;  // --help, --version
    return kExitUsage;
}

}  // namespace hotline::cli
