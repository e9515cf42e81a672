// SPDX-License-Identifier: Apache-2.0
// The golden tests' shared parts: comparing a rendered output with its file
// under tests/fixtures/golden/ (or rewriting it under HOTLINE_UPDATE_GOLDEN=1),
// and the fixed kernel facts and fix catalog the renderers are given.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "files.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/model/layout.hpp"

namespace golden {

using namespace hotline;

inline std::string golden_path(const std::string& name) { return std::string(HOTLINE_FIXTURES) + "/golden/" + name; }

inline bool update_requested() {
    const char* v = std::getenv("HOTLINE_UPDATE_GOLDEN");
    return v && std::string(v) == "1";
}


// Lines without their '\n'; a final newline yields a last empty line, so a
// missing or extra trailing newline is a difference too.
inline std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t nl = s.find('\n', start);
        out.push_back(s.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) return out;
        start = nl + 1;
    }
}

// Control characters spelled out, so a stray '\r' or tab shows in the message.
inline std::string visible(const std::string& s) {
    std::string o = "\"";
    for (char ch : s) {
        unsigned char c = static_cast<unsigned char>(ch);
        if (ch == '\\') o += "\\\\";
        else if (ch == '\t') o += "\\t";
        else if (ch == '\r') o += "\\r";
        else if (c < 0x20 || c == 0x7f) o += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
        else o += ch;
    }
    return o + "\"";
}

inline std::string first_difference(const std::string& expected, const std::string& actual) {
    auto e = split_lines(expected), a = split_lines(actual);
    std::size_t n = std::max(e.size(), a.size());
    for (std::size_t i = 0; i < n; ++i) {
        std::string el = i < e.size() ? visible(e[i]) : "<end of file>";
        std::string al = i < a.size() ? visible(a[i]) : "<end of output>";
        if (i < e.size() && i < a.size() && e[i] == a[i]) continue;
        return "first difference at line " + std::to_string(i + 1) + "\n  golden: " + el + "\n  actual: " + al;
    }
    return "the contents differ but no line does";  // not reachable: equal lines mean equal text
}

// Compares `actual` with the golden file `name`, or rewrites the file (and
// fails, saying so) when HOTLINE_UPDATE_GOLDEN=1.
inline void expect_golden(const std::string& name, const std::string& actual) {
    const std::string path = golden_path(name);
    if (update_requested()) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
        ADD_FAILURE() << "HOTLINE_UPDATE_GOLDEN=1: rewrote " << path
                      << "; review the diff and run again without it";
        return;
    }
    auto golden = testlib::read_file(path);
    if (!golden) {
        ADD_FAILURE() << "no golden file " << path << "; create it with HOTLINE_UPDATE_GOLDEN=1";
        return;
    }
    if (*golden == actual) return;
    ADD_FAILURE() << name << " differs from the rendered output (" << golden->size() << " vs " << actual.size()
                  << " bytes); " << first_difference(*golden, actual)
                  << "\n  (an intended change: regenerate with HOTLINE_UPDATE_GOLDEN=1)";
}

inline nlohmann::json input_json(const std::string& name) {
    auto text = testlib::read_file(golden_path(name));
    EXPECT_TRUE(text) << "missing input fixture " << golden_path(name);
    return nlohmann::json::parse(text ? *text : "null");
}

// Renders through an ostream-taking function into a string.
template <class F>
std::string render(F&& f) {
    std::ostringstream os;
    f(os);
    return os.str();
}

inline std::string section(const std::string& title) { return "===== " + title + " =====\n"; }

// What `hotline fixes` and diff_facts ask of a kernel, answered from sets.
class GoldenFacts : public KernelFacts {
public:
    bool knob_exists(const std::string& s) const override {
        return s == "net.ipv4.ip_early_demux" || s == "net.ipv4.tcp_early_demux";
    }
    std::optional<bool> has_function(const std::string& n) const override {
        if (n == "tcp_prequeue") return std::nullopt;  // "cannot tell"
        return n == "mix_interrupt_randomness";
    }
    std::optional<bool> has_field(const std::string& t, const std::string& m) const override {
        static const std::set<std::string> kFields = {"dst_entry.obsolete", "dst_entry.__rcuref", "fast_pool.mix"};
        return kFields.count(t + "." + m) != 0;
    }
    std::optional<std::string> field_type(const std::string& t, const std::string& m) const override {
        if (t == "fast_pool" && m == "mix") return "work_struct";
        return std::nullopt;
    }
    int numa_nodes() const override { return 2; }
};

inline const FixCatalog& catalog() {
    static const FixCatalog cat = [] {
        auto c = FixCatalog::builtin();
        if (!c) throw std::runtime_error("builtin catalog: " + c.error().message());
        return std::move(c).value();
    }();
    return cat;
}

inline const FixDef& builtin_fix(const std::string& name) {
    const FixDef* f = catalog().find(name);
    if (!f) throw std::runtime_error("no builtin fix " + name);
    return *f;
}

// dst_entry on the golden kernel: the refcount line with a read-mostly field on it.
inline LineLayout dst_layout() {
    LineLayout l;
    l.type = "dst_entry";
    l.container = "rtable";
    l.type_size = 112;
    l.anchor = "__refcnt";
    l.anchor_offset = 64;
    l.line_start = 64;
    l.on_line = {{"dst_entry.__refcnt", 64, 4}, {"dst_entry.__use", 68, 4}, {"dst_entry.lastuse", 72, 8},
                 {"dst_entry.lwtstate", 80, 8}, {"rtable.rt_genid", 112, 4}};
    l.flagged = {"lwtstate", "rt_genid", "__use"};
    l.clear = {"obsolete"};
    return l;
}

}  // namespace golden
