// SPDX-License-Identifier: Apache-2.0
// What every check of hotline_vm_check reads a guest test's results with.
#include "vm_check.hpp"

#include <deque>

namespace vmcheck {

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

std::string tail(const std::string& text, std::size_t n) {
    std::deque<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        lines.push_back(l);
        if (lines.size() > n) lines.pop_front();
    }
    std::string out;
    for (auto& l : lines) out += "  | " + l + "\n";
    return out;
}

// KEY=VALUE lines (kernel.env, timing.env).
std::map<std::string, std::string> read_env(const fs::path& p) {
    std::map<std::string, std::string> m;
    std::istringstream in(read_file(p).value_or(""));
    for (std::string l; std::getline(in, l);)
        if (auto eq = l.find('='); eq != std::string::npos) m[l.substr(0, eq)] = l.substr(eq + 1);
    return m;
}


GuestResult load_result(const fs::path& dir, const std::string& name) {
    GuestResult r;
    r.name = name;
    fs::path d = dir / name;
    if (auto rc = read_file(d / "rc")) {
        try {
            r.rc = std::stoi(*rc);
        } catch (const std::exception&) {
        }
    }
    r.secs = trim(read_file(d / "secs").value_or("?"));
    r.output = read_file(d / "output.txt").value_or("");
    r.files = d / "files";
    r.transfer_errors = trim(read_file(d / "transfer-errors").value_or(""));
    return r;
}


// Walks a JSON document by a path of keys; nullptr when any step is missing.
const json* at(const json& j, std::initializer_list<std::string_view> path) {
    const json* cur = &j;
    for (auto k : path) {
        if (!cur->is_object()) return nullptr;
        auto it = cur->find(std::string(k));
        if (it == cur->end()) return nullptr;
        cur = &*it;
    }
    return cur;
}

std::string show(const json* j) { return j ? j->dump() : "missing"; }

std::optional<json> load_json(Checks& c, const GuestResult& r, const std::string& file) {
    fs::path p = r.files / file;
    auto text = read_file(p);
    if (!text) {
        c.fail(fmt::format("{} came back from the guest (seen: no {})", file, p.string()));
        return std::nullopt;
    }
    try {
        return json::parse(*text);
    } catch (const json::exception& e) {
        c.fail(fmt::format("{} is JSON (seen: {})", file, e.what()));
        return std::nullopt;
    }
}

// hotline's own recording check, as one expectation; true when it holds.
bool expect_valid_recording(Checks& c, const json& doc, const std::string& file) {
    auto problems = hotline::check_recording(doc);
    std::string joined;
    for (auto& p : problems) joined += (joined.empty() ? "" : "; ") + p;
    c.expect(problems.empty(), file + " is a valid hotline recording", problems.empty() ? "valid" : joined);
    return problems.empty();
}


bool reported(Checks& c, const GuestResult& r, int want_rc) {
    if (!r.transfer_errors.empty()) c.fail("files arrived intact (seen: " + r.transfer_errors + ")");
    if (!r.rc) {
        c.fail(fmt::format("guest reported test {} (seen: no HLVM-RESULT; the guest died or timed out first)", r.name));
        return false;
    }
    c.expect(*r.rc == want_rc, fmt::format("{} exits {}", r.name, want_rc),
             fmt::format("exit status {} after {} s{}", *r.rc, r.secs,
                         *r.rc == 137 ? ", killed: the guest timeout of the test" : ""));
    return true;
}

}  // namespace vmcheck
