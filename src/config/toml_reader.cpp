// SPDX-License-Identifier: Apache-2.0
// toml++ into TomlValue, and the one error format of every configuration file.
#include "hotline/config/toml_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <toml++/toml.h>

namespace hotline {

namespace {

int line_of(const toml::source_region& r) { return int(r.begin.line); }

TomlValue convert(const toml::node& n) {
    TomlValue v;
    v.line = line_of(n.source());
    if (auto* s = n.as_string()) {
        v.kind = TomlValue::Kind::kString;
        v.string = s->get();
    } else if (auto* i = n.as_integer()) {
        v.kind = TomlValue::Kind::kInteger;
        v.integer = i->get();
    } else if (auto* f = n.as_floating_point()) {
        v.kind = TomlValue::Kind::kFloat;
        v.floating = f->get();
    } else if (auto* b = n.as_boolean()) {
        v.kind = TomlValue::Kind::kBoolean;
        v.boolean = b->get();
    } else if (auto* a = n.as_array()) {
        v.kind = TomlValue::Kind::kArray;
        for (const auto& e : *a) v.items.push_back(convert(e));
    } else if (auto* t = n.as_table()) {
        v.kind = TomlValue::Kind::kTable;
        for (auto&& [k, e] : *t) v.members.push_back({std::string(k.str()), line_of(k.source()), convert(e)});
    } else {
        v.kind = TomlValue::Kind::kOther;  // dates and times: no configuration takes them
    }
    return v;
}

}  // namespace

bool TomlValue::is_array_of_tables() const {
    return is_array() && !items.empty() &&
           std::all_of(items.begin(), items.end(), [](const TomlValue& e) { return e.is_table(); });
}

const TomlValue* TomlValue::get(std::string_view key) const {
    for (const auto& m : members)
        if (m.key == key) return &m.value;
    return nullptr;
}

Result<TomlValue> parse_toml(std::string_view text, const std::string& source) {
    try {
        toml::table root = toml::parse(text, source);
        return convert(root);
    } catch (const toml::parse_error& e) {
        return make_error(fmt::format("{}:{}: {}", source, line_of(e.source()), e.description()), 0,
                          "the file is not valid TOML");
    }
}

std::string TomlErrors::where(int line) const { return fmt::format("{}:{}", source_, line); }

void TomlErrors::add(int line, std::string_view message, std::string_view hint) {
    std::string m = fmt::format("{}: {}", where(line), message);
    if (!hint.empty()) m += fmt::format("; {}", hint);
    errors_.emplace_back(line, std::move(m));
}

Error TomlErrors::error() const {
    auto sorted = errors_;
    std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::string all;
    for (const auto& e : sorted) all += (all.empty() ? "" : "\n") + e.second;
    return make_error(all);
}

std::optional<std::string> TomlErrors::string(const TomlValue& v, std::string_view name) {
    if (v.kind == TomlValue::Kind::kString) return v.string;
    add(v.line, fmt::format("{} must be a string", name));
    return std::nullopt;
}

std::optional<bool> TomlErrors::boolean(const TomlValue& v, std::string_view name) {
    if (v.kind == TomlValue::Kind::kBoolean) return v.boolean;
    add(v.line, fmt::format("{} must be true or false", name));
    return std::nullopt;
}

std::optional<std::int64_t> TomlErrors::integer(const TomlValue& v, std::string_view name, std::int64_t lo,
                                                std::int64_t hi) {
    if (v.kind != TomlValue::Kind::kInteger) {
        add(v.line, fmt::format("{} must be an integer in {}..{}", name, lo, hi));
        return std::nullopt;
    }
    if (v.integer < lo || v.integer > hi) {
        add(v.line, fmt::format("{} = {} is out of range {}..{}", name, v.integer, lo, hi));
        return std::nullopt;
    }
    return v.integer;
}

bool TomlErrors::only_keys(const TomlValue& t, std::initializer_list<std::string_view> known,
                           std::string_view what) {
    bool clean = true;
    for (const auto& m : t.members) {
        if (std::find(known.begin(), known.end(), m.key) != known.end()) continue;
        add(m.line, fmt::format("unknown key \"{}\" in {}; known keys: {}", m.key, what, fmt::join(known, ", ")));
        clean = false;
    }
    return clean;
}

}  // namespace hotline
