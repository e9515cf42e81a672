// SPDX-License-Identifier: Apache-2.0
// Helpers for privileged host tests: run the real hotline binary and read its output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "files.hpp"
#include "hotline/model/exit_codes.hpp"
#include "machine_facts.hpp"
#include <sstream>
#include <string>

namespace hosttest {

struct CmdResult {
    int rc = -1;
    std::string out;
    std::string err;
};

inline std::string temp_path(const std::string& name) {
    return "/tmp/hotline-host-" + std::to_string(getpid()) + "-" + name;
}

using testlib::slurp;

// Runs a shell command line; stdout and stderr are captured separately.
inline CmdResult run(const std::string& cmd) {
    std::string errf = temp_path("stderr");
    CmdResult r;
    FILE* p = popen((cmd + " 2>" + errf).c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int st = pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.err = slurp(errf);
    unlink(errf.c_str());
    return r;
}

inline std::string hotline() { return HOTLINE_BIN; }

inline nlohmann::json load_json(const std::string& path) {
    return nlohmann::json::parse(slurp(path));
}

inline const nlohmann::json* find_target(const nlohmann::json& arr, const std::string& name) {
    for (auto& t : arr)
        if (t.value("target", "") == name) return &t;
    return nullptr;
}

inline std::uint64_t sum(const nlohmann::json& arr) {
    std::uint64_t s = 0;
    for (auto& v : arr) s += v.get<std::uint64_t>();
    return s;
}

// Program ids referenced by a process's fds (prog fds and link fds both show prog_id).
inline std::set<int> prog_ids_held_by(int pid) {
    std::set<int> ids;
    std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::ifstream f(e.path());
        std::string line;
        while (std::getline(f, line))
            if (line.rfind("prog_id:", 0) == 0) ids.insert(std::atoi(line.c_str() + 8));
    }
    return ids;
}

// hotline programs (names start with hl_) loaded in the kernel.  owner > 0: those held
// by that process; owner == 0: orphans no process holds (a leak, e.g. a pinned link).
// Other hotline runs on the same machine do not disturb either count.
inline int loaded_hotline_programs(int owner = 0) {
    CmdResult r = run("bpftool -j prog show");
    if (r.rc != 0) return -1;
    std::set<int> held;
    if (owner > 0) {
        held = prog_ids_held_by(owner);
    } else {
        std::error_code ec;
        for (auto& e : std::filesystem::directory_iterator("/proc", ec)) {
            int pid = std::atoi(e.path().filename().c_str());
            if (pid > 0)
                for (int id : prog_ids_held_by(pid)) held.insert(id);
        }
    }
    int n = 0;
    for (auto& p : nlohmann::json::parse(r.out)) {
        if (p.value("name", "").rfind("hl_", 0) != 0) continue;
        bool is_held = held.count(p.value("id", -1)) != 0;
        if (owner > 0 ? is_held : !is_held) ++n;
    }
    return n;
}

// The kernel frees a released program asynchronously (RCU): poll briefly for orphans.
inline int orphans_after_exit() {
    int n = 0;
    for (int i = 0; i < 60; ++i) {
        n = loaded_hotline_programs(0);
        if (n == 0) break;
        usleep(50 * 1000);
    }
    return n;
}

// What is wrong with one target's plan entry (probe or recording JSON) against
// the machine facts: the mechanism hotline's order gives there, and each
// mechanism tried before it rejected with its reason.  Empty when nothing is.
inline std::string plan_mismatch(const nlohmann::json& t, bool has_proxy, const std::string& proxy_fidelity) {
    const auto& mf = hostfacts::MachineFacts::get();
    const std::string want = mf.planned(has_proxy);
    const std::string fidelity = want == "tracepoint" ? proxy_fidelity : want == "sampling" ? "sampled" : "exact";
    std::string wrong;
    if (t.value("mechanism", "") != want) wrong += "mechanism is not " + want + "; ";
    if (t.value("fidelity", "") != fidelity) wrong += "fidelity is not " + fidelity + "; ";
    auto rejected = mf.rejections_before(has_proxy);
    const auto& got = t["rejected"];
    if (got.size() != rejected.size()) wrong += "not " + std::to_string(rejected.size()) + " rejections; ";
    for (std::size_t i = 0; i < rejected.size() && i < got.size(); ++i)
        if (got[i].value("mechanism", "") != rejected[i].first ||
            got[i].value("reason", "").find(rejected[i].second) == std::string::npos)
            wrong += "rejection " + std::to_string(i) + " is not " + rejected[i].first + " with \"" +
                     rejected[i].second + "\"; ";
    if (wrong.empty()) return "";
    return wrong + mf.why({"fentry", "kprobe"}) + "\nhotline planned: " + t.dump();
}

// The tracepoint behind every queued work item, as perf names it.
inline constexpr const char* kQueueWork = "workqueue:workqueue_queue_work";

// The kernel's own count of tracepoint events over a window, per CPU: a
// command line prefix, `perf stat -a -A` writing to OUT, that runs the rest of
// the line inside the window.  Counts hotline does not own, to judge its counts
// by (tests/host/oracle_test.cpp explains the nesting).
inline std::string perf_stat(const std::string& out, const std::vector<std::string>& events) {
    std::string cmd = "perf stat -a -A -x, -o " + out;
    for (auto& e : events) cmd += " -e " + e;
    return cmd + " -- ";
}

// perf stat -a -A -x, lines: CPUn,COUNT,UNIT,EVENT,...; comments start with '#'.
struct PerfCounts {
    std::map<std::string, std::vector<std::uint64_t>> per_cpu;  // event -> count by CPU
    std::uint64_t on(const std::string& event, int cpu) const {
        auto it = per_cpu.find(event);
        return it == per_cpu.end() || std::size_t(cpu) >= it->second.size() ? 0 : it->second[std::size_t(cpu)];
    }
    std::uint64_t total(const std::string& event) const {
        auto it = per_cpu.find(event);
        std::uint64_t s = 0;
        if (it != per_cpu.end())
            for (auto v : it->second) s += v;
        return s;
    }
};

inline PerfCounts read_perf(const std::string& path) {
    PerfCounts p;
    std::istringstream in(slurp(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("CPU", 0) != 0) continue;
        std::vector<std::string> f;
        std::istringstream ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        if (f.size() < 4 || f[1].empty() || !std::isdigit(static_cast<unsigned char>(f[1][0]))) continue;
        auto& v = p.per_cpu[f[3]];
        std::size_t cpu = std::stoul(f[0].substr(3));
        if (v.size() <= cpu) v.resize(cpu + 1, 0);
        v[cpu] = std::stoull(f[1]);
    }
    return p;
}

}  // namespace hosttest
