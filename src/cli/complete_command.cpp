// SPDX-License-Identifier: Apache-2.0
// `hotline __complete WORD...`: the candidates for the last word of a command
// line, one a line, for the shell completion script (dist/bash-completion/hotline).
// Computed from the one CLI definition and the registries, so completion knows
// every subcommand, option, target, fix and scenario this binary knows.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/targets/targets.hpp"

namespace hotline::cli {

namespace {

// What a value names, by the option or positional that takes it.
enum class NameKind { kNone, kTarget, kFix, kScenario, kMechanism, kCommand };

NameKind option_value_kind(const std::string& opt) {
    if (opt == "-t" || opt == "--targets") return NameKind::kTarget;
    if (opt == "--fix" || opt == "--expect") return NameKind::kFix;
    if (opt == "--scenario") return NameKind::kScenario;
    if (opt == "-m" || opt == "--mechanism") return NameKind::kMechanism;
    return NameKind::kNone;
}

NameKind positional_kind(const std::string& path) {
    if (path == "hotline fixes show" || path == "hotline fixes apply") return NameKind::kFix;
    if (path == "hotline scenario run") return NameKind::kScenario;
    if (path == "hotline help") return NameKind::kCommand;
    return NameKind::kNone;
}

std::string names_of(NameKind k, CLI::App& top) {
    switch (k) {
    case NameKind::kTarget: return builtin_target_names();
    case NameKind::kFix: {
        auto cat = load_catalog();
        return cat ? cat->names() : "";
    }
    case NameKind::kScenario: return scenario_names();
    case NameKind::kMechanism: return "fentry, kprobe, tracepoint, sampling";
    case NameKind::kCommand: {
        std::string s;
        for (auto* sub : top.get_subcommands([](CLI::App* a) { return !a->get_group().empty(); }))
            s += (s.empty() ? "" : ", ") + sub->get_name();
        return s;
    }
    case NameKind::kNone: break;
    }
    return "";
}

std::string option_names(const CLI::App& app) {
    std::string s;
    for (const CLI::Option* o : app.get_options()) {
        for (auto& l : o->get_lnames()) s += (s.empty() ? "" : ", ") + ("--" + l);
    }
    return s;
}

std::string full_path(const CLI::App& app) {
    std::string path = app.get_name();
    for (auto* p = app.get_parent(); p; p = p->get_parent()) path = p->get_name() + " " + path;
    return path;
}

// The candidates for `current`, after `before` (the words between the program and it).
std::string candidates(CLI::App& top, const std::vector<std::string>& before, const std::string& current) {
    CLI::App* cur = &top;
    for (std::size_t i = 0; i < before.size(); ++i) {
        const std::string& w = before[i];
        if (w.size() > 1 && w[0] == '-') {
            const CLI::Option* opt = cur->get_option_no_throw(w);
            bool takes_value = opt && opt->get_type_size_max() > 0 && w.find('=') == std::string::npos;
            if (takes_value && i + 1 == before.size()) return names_of(option_value_kind(w), top);
            if (takes_value) ++i;
            continue;
        }
        auto subs = cur->get_subcommands([&](CLI::App* a) { return a->get_name() == w; });
        if (!subs.empty()) cur = subs.front();
    }
    if (!current.empty() && current[0] == '-') return option_names(*cur);
    auto subs = cur->get_subcommands([](CLI::App* a) { return !a->get_group().empty(); });
    if (!subs.empty()) return names_of(NameKind::kCommand, *cur);
    return names_of(positional_kind(full_path(*cur)), top);
}

}  // namespace

void add_complete_command(CLI::App& app, CompleteArgs& c) {
    // An empty group hides it from the help: it is for the completion script.
    c.complete = app.add_subcommand("__complete", "Completion candidates for a command line")->group("");
    // Every word after it is data, even one that looks like an option.
    c.complete->set_help_flag();
    c.complete->prefix_command();
}

int run_complete(CLI::App& app, const CompleteArgs& c) {
    std::vector<std::string> words = c.complete->remaining();
    std::string current = words.empty() ? "" : words.back();
    if (!words.empty()) words.pop_back();
    for (auto& name : split_list(candidates(app, words, current)))
        if (name.compare(0, current.size(), current) == 0) std::cout << name << "\n";
    return kExitOk;
}

}  // namespace hotline::cli
