// SPDX-License-Identifier: Apache-2.0
// Host-side judge of the VM guest tests: reads what tests/vm/vm-suite brought back
// from one guest boot (exit status, output, files) and checks one test's claims,
// printing for each what was expected and what was seen.
//
// usage: hotline_vm_check --results DIR --test NAME
// Exit 0 when every check of NAME holds, 1 otherwise (with the guest output and
// console tails), 2 on bad usage.
//
// The checks live beside this file by concern (common.cpp, probe_checks.cpp,
// record_checks.cpp, verdict_checks.cpp, global_checks.cpp).
#include "vm_check.hpp"

using namespace vmcheck;

namespace {

const std::map<std::string, std::function<void(Checks&, const fs::path&)>> kChecks = {
    {"allow-global", check_allow_global},
    {"handoff-sample", check_handoff_sample},
    {"proxy-nodes", check_proxy_nodes},
    {"workqueue-nodes", check_workqueue_nodes},
    {"validate-numa-local", check_validate_numa_local},
    {"validate-numa-local-live", check_validate_numa_local_live},
    {"diagnose-numa-local", check_diagnose_numa_local},
    {"irq-affinity", check_irq_affinity},
    {"record-tcp-crr", check_record_tcp_crr},
    {"record-windows", check_record_windows},
    {"diff-dst-refcnt-false-sharing", check_diff},
    {"handoff-cross", [](Checks& c, const fs::path& d) { check_handoffs(c, d, true); }},
    {"handoff-local", [](Checks& c, const fs::path& d) { check_handoffs(c, d, false); }},
    {"binary", check_binary},
    {"probe", check_probe},
    {"record-fentry", [](Checks& c, const fs::path& d) { check_record(c, d, "fentry"); }},
    {"record-kprobe", [](Checks& c, const fs::path& d) { check_record(c, d, "kprobe"); }},
    {"fentry-vs-kprobe", check_agreement},
    {"socket-route-vs-fentry", check_socket_route},
    {"latency-oracle", check_latency_oracle},
    {"func-arg", check_func_arg},
    {"cost", check_cost},
    {"dst-layout", check_dst_layout},
    {"discover-nodes", check_discover_nodes},
};

int usage() {
    std::string names;
    for (auto& [n, f] : kChecks) names += (names.empty() ? "" : "|") + n;
    std::cerr << "usage: hotline_vm_check --results DIR --test " << names
              << "\n       [--candidate DIR --hotline BIN --out DIR]   (diff-*: the second kernel's results)\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    fs::path dir;
    std::string test;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--results") dir = argv[i + 1];
        else if (a == "--test") test = argv[i + 1];
        else if (a == "--candidate") g_extra.candidate = argv[i + 1];
        else if (a == "--hotline") g_extra.hotline = argv[i + 1];
        else if (a == "--out") g_extra.out = argv[i + 1];
        else return usage();
    }
    auto it = kChecks.find(test);
    if (dir.empty() || it == kChecks.end()) return usage();

    auto kenv = read_env(dir / "kernel.env");
    std::cout << fmt::format("guest test {} on {} ({})\n", test, kenv.count("release") ? kenv["release"] : "?",
                             dir.string());
    if (!g_extra.candidate.empty()) {
        auto cenv = read_env(g_extra.candidate / "kernel.env");
        std::cout << fmt::format("candidate kernel {} ({})\n", cenv.count("release") ? cenv["release"] : "?",
                                 g_extra.candidate.string());
    }
    Checks c;
    if (auto why = read_file(dir / "failure")) c.fail("the guest run completed (seen: " + trim(*why) + ")");
    it->second(c, dir);
    if (c.failures() == 0) return 0;

    std::cout << fmt::format("\n{} check(s) failed.\n", c.failures());
    GuestResult r = load_result(dir, test);
    if (!r.output.empty()) std::cout << "last lines of the test's output:\n" << tail(r.output, 30);
    std::cout << "last lines of the guest console (" << (dir / "console.log").string() << "):\n"
              << tail(read_file(dir / "console.log").value_or("(no console log: did the boot test run?)"), 30);
    return 1;
}
