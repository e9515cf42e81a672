// SPDX-License-Identifier: Apache-2.0
// hotline_vm_check's shared parts: what came back for one guest test, the
// check collector, JSON walking, and the checks each file defines (vm_check.cpp
// maps test names to them).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "files.hpp"
#include "hotline/model/exit_codes.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/report/output.hpp"

namespace vmcheck {

namespace fs = std::filesystem;
using nlohmann::json;
using testlib::read_file;

// Targets the guest records; all three exist on every kernel in the tier.
inline const std::vector<std::string> kPresentTargets = {"dst_release", "ipv4_dst_check", "queue_work_on"};

// Handoffs of dst objects per churn connection, at least (probe_checks.cpp says why).
inline constexpr double kHandoffsPerConnection = 1.0;
// Bound for "about 0" cross-node handoffs: this many plus this share of the touches.
inline constexpr double kLocalCrossNodeCalls = 5;
inline constexpr double kLocalCrossNodeShare = 0.01;

// What came back for one guest test.
struct GuestResult {
    std::string name;
    std::optional<int> rc;  // none: the guest never reported it
    std::string secs;
    std::string output;
    fs::path files;
    std::string transfer_errors;
};

// Collects check outcomes; every line says what was expected and what was seen.
class Checks {
public:
    void expect(bool ok, const std::string& claim, const std::string& seen) {
        std::cout << (ok ? "ok   " : "FAIL ") << claim << " (seen: " << seen << ")\n";
        if (!ok) ++failures_;
    }
    void fail(const std::string& why) {
        std::cout << "FAIL " << why << "\n";
        ++failures_;
    }
    void note(const std::string& s) { std::cout << "     " << s << "\n"; }
    int failures() const { return failures_; }

private:
    int failures_ = 0;
};

// Options beyond --results that the cross-kernel check needs.
struct Extra {
    fs::path candidate;  // the second kernel's results (diff)
    std::string hotline; // the host build, run for `hotline diff`
    fs::path out;        // where the diff leaves its JSON and output
};
extern Extra g_extra;

// common.cpp
std::string trim(std::string s);
std::string tail(const std::string& text, std::size_t n);
// KEY=VALUE lines (kernel.env, timing.env).
std::map<std::string, std::string> read_env(const fs::path& p);
GuestResult load_result(const fs::path& dir, const std::string& name);
// Walks a JSON document by a path of keys; nullptr when any step is missing.
const json* at(const json& j, std::initializer_list<std::string_view> path);
std::string show(const json* j);
std::optional<json> load_json(Checks& c, const GuestResult& r, const std::string& file);
// hotline's own recording check, as one expectation; true when it holds.
bool expect_valid_recording(Checks& c, const json& doc, const std::string& file);
// The guest reported the test, and it exited WANT_RC (a failed check otherwise).
bool reported(Checks& c, const GuestResult& r, int want_rc = 0);

// record_checks.cpp: a recording's totals, also read by the other checks.
std::map<int, int> cpu_nodes(const json& doc);
const json* total_of(const json& doc, const std::string& target);

// verdict_checks.cpp
std::size_t count_of(const std::string& text, const std::string& s);

// global_checks.cpp
std::vector<double> handoff_array(const json& tot, const char* key, std::size_t cpus = 4);

// The checks, one per guest test.
void check_binary(Checks& c, const fs::path& dir);
void check_probe(Checks& c, const fs::path& dir);
void check_record(Checks& c, const fs::path& dir, const std::string& mech);
void check_agreement(Checks& c, const fs::path& dir);
void check_socket_route(Checks& c, const fs::path& dir);
void check_dst_layout(Checks& c, const fs::path& dir);
void check_handoffs(Checks& c, const fs::path& dir, bool cross);
void check_validate_numa_local(Checks& c, const fs::path& dir);
void check_validate_numa_local_live(Checks& c, const fs::path& dir);
void check_cost(Checks& c, const fs::path& dir);
void check_record_tcp_crr(Checks& c, const fs::path& dir);
void check_record_windows(Checks& c, const fs::path& dir);
void check_diff(Checks& c, const fs::path& dir);
void check_latency_oracle(Checks& c, const fs::path& dir);
void check_func_arg(Checks& c, const fs::path& dir);
void check_diagnose_numa_local(Checks& c, const fs::path& dir);
void check_allow_global(Checks& c, const fs::path& dir);
void check_handoff_sample(Checks& c, const fs::path& dir);
void check_proxy_nodes(Checks& c, const fs::path& dir);
void check_workqueue_nodes(Checks& c, const fs::path& dir);
void check_irq_affinity(Checks& c, const fs::path& dir);
void check_discover_nodes(Checks& c, const fs::path& dir);

}  // namespace vmcheck
