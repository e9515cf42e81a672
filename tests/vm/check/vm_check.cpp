// Host-side judge of the VM guest tests: reads what tests/vm/vm-suite brought back
// from one guest boot (exit status, output, files) and checks one test's claims,
// printing for each what was expected and what was seen.
//
// usage: hotline_vm_check --results DIR --test NAME
// Exit 0 when every check of NAME holds, 1 otherwise (with the guest output and
// console tails), 2 on bad usage.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "hotline/model/exit_codes.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/report/output.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Targets the guest records; all three exist on every kernel in the tier.
const std::vector<std::string> kPresentTargets = {"dst_release", "ipv4_dst_check", "queue_work_on"};

// Node 0 runs no workload.  What it may still count in a 3 s recording: a handful
// of calls from the rest of the system (measured on 6.1: 4 dst_release, 0 of the
// others).  Bound: 20 calls plus 1% of what node 1 counted.
constexpr double kNode0NoiseCalls = 20;
constexpr double kNode0NoiseShare = 0.01;

// fentry-vs-kprobe: a kprobe recording runs over a window that strictly contains
// an fentry recording of the churn on node 1, both attached at once.  `record`
// stops the churn before its last snapshot, so both count the same node-1 calls
// but for (a) node-1 calls outside the fentry window that only the kprobe one
// sees: timer work of the churn's last connections after its stop, and the rest
// of the system (which runs nothing on node 1), and (b) calls one mechanism
// misses (recursion, kprobe reentry).  Measured, 4 tier runs on 6.1, 6.12 and
// 5.10: kprobe - fentry 0 to +8 dst_release calls (at most 0.11%), 0 for
// ipv4_dst_check, no recursion misses.  Bound: 1% of the fentry count plus 20
// calls more for kprobe, never fewer; a mechanism losing or double-counting a
// few percent of the calls fails it.
const std::vector<std::string> kAgreementTargets = {"dst_release", "ipv4_dst_check"};
constexpr double kAgreementShare = 0.01;
constexpr double kAgreementSlackCalls = 20;

// record-*: the churn's own connection count is the oracle for node 1.  Calls
// per connection measured in 12 recordings (6.1, 6.12, 5.10; fentry and kprobe;
// 100 to 2463 connections): dst_release 22.000-22.060, ipv4_dst_check
// 21.000-21.064; on 7.2 (fentry and kprobe, 1420-1499 connections) dst_release
// 22.00 and ipv4_dst_check 16.00: 7.x checks the cached route on fewer paths.
// Bounds: one call per connection either way; a double count or a lost call
// site leaves them.
const std::map<std::string, std::pair<double, double>> kCallsPerConnection = {
    {"dst_release", {21, 23}}, {"ipv4_dst_check", {20, 22}}};
const std::map<std::string, std::pair<double, double>> kCallsPerConnection7 = {
    {"dst_release", {21, 23}}, {"ipv4_dst_check", {15, 17}}};

// queue_work_on on node 1 comes from the vm.stat_refresh writer (one item per
// CPU per write, a write every 20 ms at most: <= 4 x 150 in 3 s) and the
// churn's timers.  Measured in the same 12 recordings: 63 to 381.  Bounds:
// at least 40, at most 600 from the writer plus 200.
constexpr double kQueueWorkFloor = 40, kQueueWorkCeiling = 800;

// record-*: the kernel's own counts of the same window (guest/tests/lib/record.sh).
// Tcp ActiveOpens and PassiveOpens in /proc/net/snmp: each churn connection is
// one of each, and nothing else in the guest opens TCP connections meanwhile.
// Measured in 23 recordings (two runs each on 6.1, 6.12 and 7.2, three on 5.10,
// of record-fentry and record-kprobe, and fentry-vs-kprobe in the later runs;
// 36-1056 connections): both rose by exactly the churn's count.  Bound: that count plus
// at most 2 (a connection the churn's stop interrupted would be opened, not
// counted).
constexpr double kOpensSlack = 2;
// queue_work_on's calls on node 1 against ftrace's workqueue_queue_work events
// on CPUs 2-3 whose CLOCK_MONOTONIC timestamps lie in the recording's window.
// Every queue_work_on that queues fires the event on the same CPU; the event
// also fires for work queued without queue_work_on (delayed work's timers:
// vmstat_update, psi_avgs_work, kfree_rcu_monitor, flush_memcg_stats_dwork,
// neigh_*; rcu work), and a queue_work_on finding its work pending fires none.
// Measured in the 18 record-* recordings: events - calls = 2 to 10 (47-167
// calls, 54-175 events), about the delayed and rcu work the window held
// (equal to it in 5 of the first 8); calls above events never.  Bounds: calls
// at most 20% + 10 below the events and at most 2% + 5 above them; a doubled
// count (+100%) or half the calls lost (-50%) leaves them.
constexpr double kQueueWorkBelowShare = 0.20, kQueueWorkBelowSlack = 10;
constexpr double kQueueWorkAboveShare = 0.02, kQueueWorkAboveSlack = 5;

// Exits without a matching entry (migration, attach races) that still leave the
// latency histogram meaningful.
constexpr double kUnpairedShare = 0.10;

std::optional<std::string> slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) return std::nullopt;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

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
    std::istringstream in(slurp(p).value_or(""));
    for (std::string l; std::getline(in, l);)
        if (auto eq = l.find('='); eq != std::string::npos) m[l.substr(0, eq)] = l.substr(eq + 1);
    return m;
}

// What came back for one guest test.
struct GuestResult {
    std::string name;
    std::optional<int> rc;  // none: the guest never reported it
    std::string secs;
    std::string output;
    fs::path files;
    std::string transfer_errors;
};

GuestResult load_result(const fs::path& dir, const std::string& name) {
    GuestResult r;
    r.name = name;
    fs::path d = dir / name;
    if (auto rc = slurp(d / "rc")) {
        try {
            r.rc = std::stoi(*rc);
        } catch (const std::exception&) {
        }
    }
    r.secs = trim(slurp(d / "secs").value_or("?"));
    r.output = slurp(d / "output.txt").value_or("");
    r.files = d / "files";
    r.transfer_errors = trim(slurp(d / "transfer-errors").value_or(""));
    return r;
}

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
    auto text = slurp(p);
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


bool reported(Checks& c, const GuestResult& r, int want_rc = 0) {
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

// ------------------------------------------------------------------ the tests

void check_binary(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "binary");
    if (!reported(c, r)) return;
    std::string host;
    std::istringstream in(slurp(dir / "host-binaries.sha256").value_or(""));
    for (std::string digest, name; in >> digest >> name;)
        if (name == "hotline") host = digest;
    std::string guest;
    std::istringstream out(r.output);
    for (std::string digest, name; out >> digest >> name;)
        if (name == "/bin/hotline") guest = digest;
    c.expect(!host.empty() && host == guest, "the guest's /bin/hotline is the host build byte for byte (sha256)",
             fmt::format("host {}, guest {}", host.empty() ? "missing" : host, guest.empty() ? "missing" : guest));
}

void check_probe(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "probe");
    if (!reported(c, r)) return;
    auto doc = load_json(c, r, "probe.json");
    if (!doc) return;
    auto kenv = read_env(dir / "kernel.env");
    const json* rel = at(*doc, {"kernel", "release"});
    c.expect(rel && rel->is_string() && *rel == kenv["release"], "kernel.release is the booted kernel " + kenv["release"],
             show(rel));
    const json* btf = at(*doc, {"kernel", "btf"});
    c.expect(btf && *btf == true, "kernel.btf is true", show(btf));

    // Topology: exactly two nodes, CPUs 0-1 on node 0 and 2-3 on node 1.
    const json* nodes = at(*doc, {"topology", "nodes"});
    json want_nodes = json::array({{{"node", 0}, {"cpus", {0, 1}}}, {{"node", 1}, {"cpus", {2, 3}}}});
    c.expect(nodes && *nodes == want_nodes, "topology.nodes is " + want_nodes.dump(), show(nodes));
    const json* cpus = at(*doc, {"topology", "cpus"});
    std::map<int, int> cpu_node;
    if (cpus && cpus->is_array())
        for (auto& e : *cpus)
            if (e.contains("cpu") && e.contains("node")) cpu_node[e["cpu"].get<int>()] = e["node"].get<int>();
    std::map<int, int> want_cpus{{0, 0}, {1, 0}, {2, 1}, {3, 1}};
    c.expect(cpu_node == want_cpus, "topology.cpus puts CPUs 0-1 on node 0 and 2-3 on node 1", show(cpus));

    const json* plan = at(*doc, {"plan"});
    auto find = [&](const std::string& t) -> const json* {
        if (!plan || !plan->is_array()) return nullptr;
        for (auto& e : *plan)
            if (e.value("target", "") == t) return &e;
        return nullptr;
    };
    for (auto& t : kPresentTargets) {
        const json* e = find(t);
        c.expect(e && e->value("mechanism", "") == "fentry" && e->value("observable", false),
                 t + " is planned with fentry", e ? fmt::format("mechanism {}, attach \"{}\"", show(at(*e, {"mechanism"})),
                                                              e->value("attach", ""))
                                                  : "not in the plan");
        c.expect(e && e->value("latency", false), t + " has fexit latency", e ? show(at(*e, {"latency"})) : "not in the plan");
    }
    const json* pq = find("tcp_prequeue");
    std::string reason = pq ? pq->value("reason", "") : "";
    c.expect(pq && !pq->value("observable", true) && pq->value("mechanism", "") == "unavailable",
             "tcp_prequeue is unavailable", pq ? pq->dump() : "not in the plan");
    c.expect(reason.find("4.14") != std::string::npos, "tcp_prequeue's reason says it was removed in 4.14",
             reason.empty() ? "no reason" : "\"" + reason + "\"");
    c.expect(doc->value("observable", false), "observable is true", show(at(*doc, {"observable"})));
}

// CPU -> NUMA node, from a recording's own topology.
std::map<int, int> cpu_nodes(const json& doc) {
    std::map<int, int> cpu_node;
    if (const json* cpus = at(doc, {"topology", "cpus"}); cpus && cpus->is_array())
        for (auto& e : *cpus) cpu_node[e.value("cpu", -1)] = e.value("node", -1);
    return cpu_node;
}

// Sums of one target's per-CPU calls by NUMA node, from the recording's own topology.
struct NodeCalls {
    double node0 = 0, node1 = 0, other = 0;
};

NodeCalls node_calls(const json& doc, const json& target) {
    std::map<int, int> cpu_node = cpu_nodes(doc);
    NodeCalls n;
    const json& calls = target["calls"];
    for (std::size_t cpu = 0; cpu < calls.size(); ++cpu) {
        double v = calls[cpu].get<double>();
        int node = cpu_node.count(int(cpu)) ? cpu_node[int(cpu)] : -1;
        (node == 0 ? n.node0 : node == 1 ? n.node1 : n.other) += v;
    }
    return n;
}

const json* total_of(const json& doc, const std::string& target) {
    const json* ts = at(doc, {"totals", "targets"});
    if (!ts || !ts->is_array()) return nullptr;
    for (auto& t : *ts)
        if (t.value("target", "") == target && t.contains("calls") && t["calls"].is_array()) return &t;
    return nullptr;
}

// The per-connection bounds for the kernel a recording was made on.
std::optional<std::pair<double, double>> calls_per_connection(const json& doc, const std::string& target) {
    const json* rel = at(doc, {"kernel", "release"});
    int major = rel && rel->is_string() ? std::atoi(rel->get<std::string>().c_str()) : 0;
    const auto& table = major >= 7 ? kCallsPerConnection7 : kCallsPerConnection;
    auto it = table.find(target);
    if (it == table.end()) return std::nullopt;
    return it->second;
}

// The kernel's own counts around a record-* run (guest/tests/lib/record.sh),
// which owe nothing to hotline's BPF programs.
struct KernelCounts {
    double active_opens = 0, passive_opens = 0;  // /proc/net/snmp Tcp rises
    double queue_work_node1 = 0;                 // workqueue_queue_work events on node 1 in the window
    double queue_work_outside = 0;               // on node 1 outside it (the writer before and after)
    std::map<std::string, double> queue_work_by_function;  // in the window, node 1
};

// /proc/net/snmp's Tcp line pair: a header of names, then their values.
std::map<std::string, double> tcp_snmp(const std::string& text) {
    std::vector<std::string> names;
    std::map<std::string, double> values;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("Tcp:", 0) != 0) continue;
        std::istringstream f(line.substr(4));
        std::vector<std::string> words;
        for (std::string w; f >> w;) words.push_back(w);
        if (names.empty()) {
            names = words;
            continue;
        }
        for (std::size_t i = 0; i < words.size() && i < names.size(); ++i) values[names[i]] = std::atof(words[i].c_str());
    }
    return values;
}

// workqueue_queue_work events ("CPU SECONDS FUNCTION" lines) on node 1, inside
// and outside the recording's CLOCK_MONOTONIC window.
void count_queue_work(KernelCounts& k, const std::string& events, const json& doc) {
    auto node = cpu_nodes(doc);
    double t0 = doc.value(json::json_pointer("/totals/t_start"), 0.0);
    double t1 = doc.value(json::json_pointer("/totals/t_end"), 0.0);
    std::istringstream in(events);
    for (std::string line; std::getline(in, line);) {
        std::istringstream f(line);
        int cpu = -1;
        double ts = 0;
        std::string fn;
        if (!(f >> cpu >> ts >> fn) || !node.count(cpu) || node[cpu] != 1) continue;
        if (ts < t0 || ts > t1) {
            ++k.queue_work_outside;
            continue;
        }
        ++k.queue_work_node1;
        ++k.queue_work_by_function[fn];
    }
}

// Tcp ActiveOpens and PassiveOpens rises between snmp.before and snmp.after.
std::optional<std::pair<double, double>> tcp_opens(Checks& c, const GuestResult& r) {
    auto before = slurp(r.files / "snmp.before"), after = slurp(r.files / "snmp.after");
    if (!before || !after) {
        c.fail("the kernel's /proc/net/snmp came back from the guest (seen: snmp.before or snmp.after missing)");
        return std::nullopt;
    }
    auto b = tcp_snmp(*before), a = tcp_snmp(*after);
    return std::make_pair(a["ActiveOpens"] - b["ActiveOpens"], a["PassiveOpens"] - b["PassiveOpens"]);
}

std::optional<KernelCounts> kernel_counts(Checks& c, const GuestResult& r, const json& doc) {
    auto opens = tcp_opens(c, r);
    auto events = slurp(r.files / "queue-work.events"), overrun = slurp(r.files / "queue-work.overrun");
    if (!events || !overrun) {
        c.fail("ftrace's workqueue_queue_work events came back from the guest (seen: queue-work.events or "
               "queue-work.overrun missing)");
        return std::nullopt;
    }
    if (!opens) return std::nullopt;
    KernelCounts k;
    std::tie(k.active_opens, k.passive_opens) = *opens;
    double lost = 0;
    std::istringstream ov(*overrun);
    for (double cpu, n; ov >> cpu >> n;) lost += n;
    c.expect(lost == 0, "ftrace's ring buffer lost no workqueue_queue_work event", fmt::format("{} overruns", lost));
    count_queue_work(k, *events, doc);
    return k;
}

// The churn's own connection count against the kernel's: each loopback
// connection is one active and one passive open, and nothing else in the guest
// opens TCP connections while the record-* tests run.
void expect_kernel_connections(Checks& c, double active_opens, double passive_opens, double conns) {
    auto within = [&](double opens) { return opens >= conns && opens <= conns + kOpensSlack; };
    c.expect(within(active_opens) && within(passive_opens),
             fmt::format("the kernel's Tcp ActiveOpens and PassiveOpens (/proc/net/snmp) each rose by the churn's "
                         "{} connections, + at most {:.0f}",
                         conns, kOpensSlack),
             fmt::format("ActiveOpens +{}, PassiveOpens +{}", active_opens, passive_opens));
}

// queue_work_on (hotline, node 1) against workqueue_queue_work events in the
// same window on the same CPUs (ftrace); see kQueueWorkBelowShare.
void expect_queue_work_oracle(Checks& c, const KernelCounts& k, double counted) {
    double t = k.queue_work_node1;
    double below = kQueueWorkBelowShare * t + kQueueWorkBelowSlack, above = kQueueWorkAboveShare * t + kQueueWorkAboveSlack;
    c.expect(t > 0 && counted >= t - below && counted <= t + above,
             fmt::format("queue_work_on on node 1 lies in [{:.0f}, {:.0f}]: the kernel's workqueue_queue_work events "
                         "there in the recording's window ({}) less {:.0f}% + {:.0f}, plus {:.0f}% + {:.0f}",
                         t - below, t + above, t, kQueueWorkBelowShare * 100, kQueueWorkBelowSlack,
                         kQueueWorkAboveShare * 100, kQueueWorkAboveSlack),
             fmt::format("hotline {}, events {}, difference {:+.0f}", counted, t, counted - t));
    std::string fns;
    for (auto& [fn, n] : k.queue_work_by_function) fns += fmt::format("{}{} {}", fns.empty() ? "" : ", ", fn, n);
    c.note(fmt::format("workqueue_queue_work on node 1: {} in the window ({}), {} outside it", t, fns,
                       k.queue_work_outside));
}

// One target's node-1 count against its bounds: per kernel-counted connection
// for the churn's targets, the tracepoint and a floor/ceiling for queue_work_on.
void expect_node1_calls(Checks& c, const json& doc, const std::string& t, double node1, const KernelCounts& k) {
    if (auto per_conn = calls_per_connection(doc, t)) {
        double conns = k.active_opens;
        c.expect(node1 >= per_conn->first * conns && node1 <= per_conn->second * conns && node1 > 0,
                 fmt::format("{} counts on node 1 lie in [{:.0f}, {:.0f}] ({}-{} per connection the kernel counted: {})",
                             t, per_conn->first * conns, per_conn->second * conns, per_conn->first, per_conn->second,
                             conns),
                 fmt::format("node 1 {}, {:.3f} per connection", node1, conns > 0 ? node1 / conns : 0.0));
        return;
    }
    c.expect(node1 >= kQueueWorkFloor && node1 <= kQueueWorkCeiling,
             fmt::format("{} counts on node 1 lie in [{:.0f}, {:.0f}]", t, kQueueWorkFloor, kQueueWorkCeiling),
             fmt::format("node 1 {}", node1));
    expect_queue_work_oracle(c, k, node1);
}

// Latency from the exit program: a non-empty histogram whose buckets add up,
// few unpaired exits.
void expect_exit_latency(Checks& c, const json& doc, const json& tot, const std::string& t, const char* exit_prog) {
    const json* h = at(doc, {"histograms", t});
    double buckets = 0;
    if (h && at(*h, {"buckets"}) && (*h)["buckets"].is_array())
        for (auto& b : (*h)["buckets"]) buckets += b.value("count", 0.0);
    const json* lat = at(tot, {"latency"});
    double count = lat ? lat->value("count", 0.0) : 0, lost = lat ? lat->value("lost", 0.0) : 0;
    double calls = tot.value("calls_total", 0.0);
    c.expect(h && buckets > 0 && buckets == count,
             fmt::format("{} has a non-empty {} latency histogram matching latency.count", t, exit_prog),
             fmt::format("{} in buckets, latency.count {}", buckets, count));
    c.expect(lost <= kUnpairedShare * calls,
             fmt::format("{} unpaired exits are at most {:.0f}% of calls", t, kUnpairedShare * 100),
             fmt::format("{} unpaired of {} calls", lost, calls));
}

// Low enough for a busy host, where TCG makes far fewer connections in the
// churn's 3 s (docs/vm.md); the per-connection bounds separate a doubled or a
// lost call site at any count.
constexpr int kMinChurnConnections = 20;

// One forced mechanism's recording while node 1 works, judged against the
// kernel's own counts of the same window.
void check_record(Checks& c, const fs::path& dir, const std::string& mech) {
    GuestResult r = load_result(dir, "record-" + mech);
    if (!reported(c, r)) return;
    auto doc = load_json(c, r, "record.json");
    if (!doc) return;
    if (!expect_valid_recording(c, *doc, "record.json")) return;

    const json* wl = at(*doc, {"workload"});
    double conns = wl && wl->contains("connections") ? (*wl)["connections"].get<double>() : 0;
    c.expect(wl && wl->value("name", "") == "churn" && at(*wl, {"cpus"}) && (*wl)["cpus"] == json({2, 3}),
             "the churn workload ran on CPUs 2-3", show(wl));
    c.expect(conns >= kMinChurnConnections, fmt::format("churn made at least {} connections", kMinChurnConnections),
             fmt::format("{}", conns));
    auto k = kernel_counts(c, r, *doc);
    if (!k) return;
    expect_kernel_connections(c, k->active_opens, k->passive_opens, conns);

    const char* exit_prog = mech == "fentry" ? "fexit" : "kretprobe";
    for (auto& t : kPresentTargets) {
        const json* tot = total_of(*doc, t);
        if (!tot) {
            c.fail(fmt::format("{} is in totals.targets (seen: missing)", t));
            continue;
        }
        c.expect(tot->value("mechanism", "") == mech, fmt::format("{} recorded with {}", t, mech),
                 show(at(*tot, {"mechanism"})));
        NodeCalls n = node_calls(*doc, *tot);
        expect_node1_calls(c, *doc, t, n.node1, *k);
        double bound = kNode0NoiseCalls + kNode0NoiseShare * n.node1;
        c.expect(n.node0 <= bound,
                 fmt::format("{} on node 0 is at most background noise: <= {} + {:.0f}% of node 1 = {:.0f}", t,
                             kNode0NoiseCalls, kNode0NoiseShare * 100, bound),
                 fmt::format("node 0 {}", n.node0));
        expect_exit_latency(c, *doc, *tot, t, exit_prog);
    }
}

// fentry-vs-kprobe: one kprobe recording whose window strictly contains an
// fentry recording of the churn on node 1, both counting the same calls.
std::optional<json> agreement_recording(Checks& c, const GuestResult& r, const std::string& file,
                                        const std::string& mech) {
    auto doc = load_json(c, r, file);
    if (!doc) return std::nullopt;
    if (!expect_valid_recording(c, *doc, file)) return std::nullopt;
    bool ok = true;
    for (auto& t : kAgreementTargets) {
        const json* tot = total_of(*doc, t);
        ok &= tot && tot->value("mechanism", "") == mech;
        c.expect(tot && tot->value("mechanism", "") == mech, fmt::format("{}: {} recorded with {}", file, t, mech),
                 tot ? show(at(*tot, {"mechanism"})) : "missing");
    }
    if (!ok) return std::nullopt;
    return doc;
}

void check_agreement(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "fentry-vs-kprobe");
    if (!reported(c, r)) return;
    auto inner = agreement_recording(c, r, "inner.json", "fentry");
    auto outer = agreement_recording(c, r, "outer.json", "kprobe");
    if (!inner || !outer) return;

    const json* wl = at(*inner, {"workload"});
    double conns = wl ? wl->value("connections", 0.0) : 0;
    c.expect(wl && wl->value("name", "") == "churn" && at(*wl, {"cpus"}) && (*wl)["cpus"] == json({2, 3}),
             "the churn workload ran on CPUs 2-3 in the fentry recording", show(wl));
    c.expect(conns >= kMinChurnConnections, fmt::format("churn made at least {} connections", kMinChurnConnections),
             fmt::format("{}", conns));
    auto opens = tcp_opens(c, r);
    if (!opens) return;
    expect_kernel_connections(c, opens->first, opens->second, conns);
    double kernel_conns = opens->first;

    // Both clocks are the guest's CLOCK_MONOTONIC: the outer window must hold the inner one.
    auto t = [](const json& doc, const char* k) { return at(doc, {"totals", k}) ? doc["totals"][k].get<double>() : 0.0; };
    double o0 = t(*outer, "t_start"), o1 = t(*outer, "t_end"), i0 = t(*inner, "t_start"), i1 = t(*inner, "t_end");
    c.expect(o0 < i0 && i1 < o1, "the kprobe recording's window strictly contains the fentry recording's",
             fmt::format("kprobe {:.3f}-{:.3f} s, fentry {:.3f}-{:.3f} s", o0, o1, i0, i1));

    for (auto& target : kAgreementTargets) {
        const json* ti = total_of(*inner, target);
        const json* to = total_of(*outer, target);
        double f = node_calls(*inner, *ti).node1, k = node_calls(*outer, *to).node1;
        double bound = kAgreementShare * f + kAgreementSlackCalls;
        auto per_conn = calls_per_connection(*inner, target).value_or(std::make_pair(0.0, 0.0));
        // The kprobe window encloses the fentry one: kprobe below fentry is a
        // lost call, not noise.
        bool per_conn_ok = f >= per_conn.first * kernel_conns && f <= per_conn.second * kernel_conns;
        c.expect(per_conn_ok && k >= f && k - f <= bound,
                 fmt::format("node-1 {} calls: fentry (inner) {:.0f}-{:.0f} per connection the kernel counted, "
                             "kprobe (outer) at least fentry and at most {:.0f}% + {:.0f} = {:.0f} more",
                             target, per_conn.first, per_conn.second, kAgreementShare * 100, kAgreementSlackCalls, bound),
                 fmt::format("fentry {} ({:.3f} per connection), kprobe {}, kprobe - fentry {} ({:+.2f}%)", f,
                             kernel_conns > 0 ? f / kernel_conns : 0.0, k, k - f, f > 0 ? (k - f) / f * 100 : 0.0));
    }
    auto misses = [](const json& doc) { return at(doc, {"drops", "recursion_misses"}) ? doc["drops"]["recursion_misses"].dump() : "?"; };
    c.note(fmt::format("{} connections; recursion misses: fentry {}, kprobe {}; kprobe window {:.2f} s before and "
                       "{:.2f} s after the fentry one",
                       conns, misses(*inner), misses(*outer), i0 - o0, o1 - i1));
}

// socket-route-vs-fentry: dst_release's tracepoint proxy (skb frees plus the
// routes a TCP socket held, seen at tcp_destroy_sock) records a window that
// strictly contains an fentry recording of tcp-crr on CPUs 0-1.  Both track
// dst objects by address; the proxy sees a subset of the releases (sockets'
// routes, skbs' refcounted dsts), so it may see fewer handoffs, never many more.
// Measured (docs/validate-design.md, "Socket-held routes"): proxy/fentry 419/422
// on 6.1, 105/110 on 6.12, 245/244 on 5.10; fentry 0.49-0.91 per connection with a
// thread per vCPU, 0.20-0.30 single-threaded (per connection it follows the guest's
// scheduling, as kBaselineCrossPerConn says).  Bounds: the proxy's handoffs are
// kSocketRouteLow..kSocketRouteHigh of fentry's, and fentry sees at least
// kSocketRouteFloor per connection, so the ratio is not of two near-zero counts.
constexpr double kSocketRouteLow = 0.8;
constexpr double kSocketRouteHigh = 1.2;
constexpr double kSocketRouteFloor = 0.03;

std::optional<json> socket_route_recording(Checks& c, const GuestResult& r, const std::string& file,
                                           const std::string& mech) {
    auto doc = load_json(c, r, file);
    if (!doc) return std::nullopt;
    bool valid = expect_valid_recording(c, *doc, file);
    const json* tot = total_of(*doc, "dst_release");
    bool ok = valid && tot && tot->value("mechanism", "") == mech && at(*tot, {"handoffs", "handoffs_total"});
    c.expect(ok, fmt::format("{}: dst_release recorded with {} and handoff tracking", file, mech),
             tot ? show(at(*tot, {"mechanism"})) : "missing");
    if (!ok) return std::nullopt;
    return doc;
}

void check_socket_route(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "socket-route-vs-fentry");
    if (!reported(c, r)) return;
    auto inner = socket_route_recording(c, r, "inner.json", "fentry");
    auto outer = socket_route_recording(c, r, "outer.json", "tracepoint");
    if (!inner || !outer) return;
    const json* conns_j = at(*inner, {"scenario", "connections", "count"});
    double conns = conns_j ? conns_j->get<double>() : 0;
    c.expect(conns >= 50, "tcp-crr made at least 50 connections", fmt::format("{}", conns));
    auto t = [](const json& doc, const char* k) { return at(doc, {"totals", k}) ? doc["totals"][k].get<double>() : 0.0; };
    double o0 = t(*outer, "t_start"), o1 = t(*outer, "t_end"), i0 = t(*inner, "t_start"), i1 = t(*inner, "t_end");
    c.expect(o0 < i0 && i1 < o1, "the tracepoint recording's window strictly contains the fentry recording's",
             fmt::format("tracepoint {:.3f}-{:.3f} s, fentry {:.3f}-{:.3f} s", o0, o1, i0, i1));
    auto handoffs = [](const json& doc) { return (*total_of(doc, "dst_release"))["handoffs"]["handoffs_total"].get<double>(); };
    double f = handoffs(*inner), p = handoffs(*outer);
    c.expect(conns > 0 && f / conns >= kSocketRouteFloor,
             fmt::format("fentry sees at least {} dst handoffs per connection", kSocketRouteFloor),
             fmt::format("{} handoffs, {} connections", f, conns));
    c.expect(f > 0 && p >= kSocketRouteLow * f && p <= kSocketRouteHigh * f,
             fmt::format("the socket-route proxy's dst handoffs are {:.0f}%..{:.0f}% of fentry's on the same run",
                         kSocketRouteLow * 100, kSocketRouteHigh * 100),
             fmt::format("proxy {}, fentry {}, ratio {:.3f}", p, f, f > 0 ? p / f : 0.0));
    c.note(fmt::format("{} connections; per connection: fentry {:.3f}, proxy {:.3f} handoffs", conns,
                       conns > 0 ? f / conns : 0.0, conns > 0 ? p / conns : 0.0));
}

// The kernel's own BTF says which dst_entry layout this boot covered.
void check_dst_layout(Checks& c, const fs::path& dir) {
    auto kenv = read_env(dir / "kernel.env");
    const std::string field = kenv["dst_refcount_field"];
    const std::string other = field == "__refcnt" ? "__rcuref" : "__refcnt";
    if (field != "__refcnt" && field != "__rcuref") {
        c.fail("kernel.env names the expected dst_entry refcount field (seen: \"" + field + "\")");
        return;
    }
    auto btf = hotline::KernelBtf::load(kenv["vmlinux"]);
    if (!btf) {
        c.fail("the guest's vmlinux carries BTF (seen: " + btf.error().message() + ")");
        return;
    }
    c.expect(btf->has_member("dst_entry", field) && !btf->has_member("dst_entry", other),
             fmt::format("{} has struct dst_entry.{} (and no {})", kenv["release"], field, other),
             fmt::format("{}: {}, {}: {}", field, btf->has_member("dst_entry", field), other,
                         btf->has_member("dst_entry", other)));
    // What the guest's hotline read from the running kernel's BTF: its tcp-crr
    // recording anchors the dst_entry line on that same field.
    GuestResult r = load_result(dir, "record-tcp-crr");
    auto doc = load_json(c, r, "record.json");
    if (!doc) return;
    c.expect(doc->value(nlohmann::json::json_pointer("/kernel/release"), std::string()) == kenv["release"],
             "the guest's recording was made on " + kenv["release"], show(at(*doc, {"kernel", "release"})));
    const json* dst = nullptr;
    if (const json* ls = at(*doc, {"analysis", "layouts"}); ls && ls->is_array())
        for (auto& l : *ls)
            if (l.value("type", "") == "dst_entry") dst = &l;
    c.expect(dst && dst->value("anchor", "") == field,
             fmt::format("the guest's own layout analysis anchors dst_entry's line on {}", field),
             dst ? show(at(*dst, {"anchor"})) : "no dst_entry layout in the guest's recording");
}

// Handoffs of dst objects under churn-split: across nodes when the ends sit on
// CPUs 0 and 2, inside node 0 when they sit on CPUs 0 and 1.  The client waits
// for the server's close, so each connection hands the routes over and back:
// two handoffs per connection, half of that is the bound.
constexpr double kHandoffsPerConnection = 1.0;
constexpr double kLocalCrossNodeCalls = 5;   // bound for "about 0" cross-node handoffs
constexpr double kLocalCrossNodeShare = 0.01;

void check_handoffs(Checks& c, const fs::path& dir, bool cross) {
    std::string name = cross ? "handoff-cross" : "handoff-local";
    GuestResult r = load_result(dir, name);
    if (!reported(c, r)) return;
    auto doc = load_json(c, r, "record.json");
    if (!doc) return;
    const json* wl = at(*doc, {"workload"});
    double conns = wl ? wl->value("connections", 0.0) : 0;
    c.expect(conns >= 50, "churn-split made at least 50 connections", fmt::format("{}", conns));
    const json* tot = total_of(*doc, "dst_release");
    const json* h = tot ? at(*tot, {"handoffs"}) : nullptr;
    if (!h) {
        c.fail("dst_release totals carry handoff counts (seen: " + show(tot) + ")");
        return;
    }
    c.expect(tot->value("mechanism", "") == "fentry", "dst_release recorded with fentry", show(at(*tot, {"mechanism"})));
    c.expect(tot->value("object_type", "") == "dst_entry", "the tracked object is a dst_entry",
             show(at(*tot, {"object_type"})));
    double xnode = h->value("cross_node_total", 0.0), all = h->value("handoffs_total", 0.0);
    double touches = 0;
    for (auto& v : (*h)["tracked"]) touches += v.get<double>();
    const json* m = at(*h, {"node_matrix"});
    double m01 = m && m->size() > 1 ? (*m)[0][1].get<double>() : 0, m10 = m && m->size() > 1 ? (*m)[1][0].get<double>() : 0;
    if (cross) {
        c.expect(xnode >= kHandoffsPerConnection * conns,
                 fmt::format("cross-node handoffs of dst objects >= {} per connection ({:.0f})", kHandoffsPerConnection,
                             kHandoffsPerConnection * conns),
                 fmt::format("{} cross-node handoffs, {} connections", xnode, conns));
        c.expect(xnode >= 0.9 * all, "with the ends on CPUs 0 and 2 the handoffs are cross-node (>= 90%)",
                 fmt::format("{} of {} handoffs cross-node", xnode, all));
        c.expect(m01 > 0 && m10 > 0, "the node matrix shows handoffs both ways (0->1 and 1->0)",
                 fmt::format("0->1 {}, 1->0 {}", m01, m10));
        bool hot = false;
        if (const json* objs = at(*doc, {"hot_objects"}))
            for (auto& o : *objs) hot |= o.value("type", "") == "dst_entry" && o.value("cross_node", 0.0) > 0;
        c.expect(hot, "a dst_entry with cross-node handoffs is among the hot objects", show(at(*doc, {"hot_objects"})));
    } else {
        double bound = kLocalCrossNodeCalls + kLocalCrossNodeShare * touches;
        c.expect(xnode <= bound,
                 fmt::format("cross-node handoffs about 0: <= {} + {:.0f}% of {} touches = {:.0f}", kLocalCrossNodeCalls,
                             kLocalCrossNodeShare * 100, touches, bound),
                 fmt::format("{} cross-node", xnode));
        c.expect(all - xnode >= kHandoffsPerConnection * conns,
                 fmt::format("handoffs inside node 0 (CPU 0 <-> CPU 1) >= {} per connection ({:.0f})",
                             kHandoffsPerConnection, kHandoffsPerConnection * conns),
                 fmt::format("{} same-node handoffs, {} connections", all - xnode, conns));
    }
    c.note(fmt::format("{}: {} touches, {} handoffs, {} cross-node, {} connections", name, touches, all, xnode, conns));
}

// ------------------------------------------------------- verdicts and diffs

// Options beyond --results that the cross-kernel check needs.
struct Extra {
    fs::path candidate;  // the second kernel's results (diff)
    std::string hotline; // the host build, run for `hotline diff`
    fs::path out;        // where the diff leaves its JSON and output
};
Extra g_extra;

const json* criterion_on(const json& verdict, const std::string& metric) {
    const json* cs = at(verdict, {"criteria"});
    if (!cs || !cs->is_array()) return nullptr;
    for (auto& cr : *cs)
        if (cr.value("metric", "") == metric) return &cr;
    return nullptr;
}

std::string num_or(const json* j) {
    if (!j || !j->is_number()) return j && j->is_null() ? "null" : "missing";
    return fmt::format("{:.4g}", j->get<double>());
}

// "verdict, ratio r (CI lo..hi), medians b -> f": one criterion as the report shows it.
std::string criterion_numbers(const json& cr) {
    const json* ratio = at(cr, {"ratio"});
    return fmt::format("{} {}: median baseline {} (n={}), fix {} (n={}), ratio {} (CI {}..{})", cr.value("kind", "?"),
                       cr.value("verdict", "?"), num_or(at(cr, {"median_baseline"})), show(at(cr, {"n_baseline"})),
                       num_or(at(cr, {"median_fix"})), show(at(cr, {"n_fix"})),
                       num_or(ratio ? at(*ratio, {"estimate"}) : nullptr), num_or(ratio ? at(*ratio, {"ci_low"}) : nullptr),
                       num_or(ratio ? at(*ratio, {"ci_high"}) : nullptr));
}

std::size_t count_of(const std::string& text, const std::string& s) {
    std::size_t n = 0;
    for (auto p = text.find(s); p != std::string::npos; p = text.find(s, p + 1)) ++n;
    return n;
}

// The <testcase ...>...</testcase> element named `name`, or "".
std::string testcase(const std::string& xml, const std::string& name) {
    auto p = xml.find("name=\"" + hotline::xml_escape(name) + "\"");
    if (p == std::string::npos) return {};
    auto b = xml.rfind("<testcase ", p);
    auto e = xml.find("</testcase>", p);
    if (b == std::string::npos || e == std::string::npos) return {};
    return xml.substr(b, e - b);
}

// Cross-node handoffs of the shared route per tcp-crr connection in the baseline
// (all four CPUs).  Every pair keeps both ends on one CPU, so the route crosses
// nodes only when the guest's scheduling alternates between nodes: under
// single-threaded TCG that is once per turn of the vCPUs, and per connection it
// falls as the host gets faster (tests/vm/README.md).  The floor says the
// baseline really crossed nodes, far above the fix arm's ~0.001, so a PASS is
// more than 0 vs 0; it is not a rate.
constexpr double kBaselineCrossPerConn = 0.03;

void check_validate_numa_local(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "validate-numa-local");
    if (!r.transfer_errors.empty()) c.fail("files arrived intact (seen: " + r.transfer_errors + ")");
    if (!r.rc) {
        c.fail("guest reported test validate-numa-local (seen: no HLVM-RESULT; the guest died or timed out first)");
        return;
    }
    // 0 PASS, 1 FAIL, 2 INCONCLUSIVE are verdicts; 3 (not applicable) and 4 (error) are not.
    c.expect(*r.rc >= 0 && *r.rc <= 2, "validate reached a verdict (exit 0, 1 or 2)",
             fmt::format("exit status {} after {} s", *r.rc, r.secs));
    auto doc = load_json(c, r, "verdict.json");
    if (!doc) return;
    c.expect(doc->value("schema", "") == "hotline.verdict" && doc->value("fix", "") == "numa-local" &&
                 doc->value("scenario", "") == "tcp-crr" && doc->value("mode", "") == "trials",
             "verdict.json is a hotline.verdict of numa-local on tcp-crr (ABAB trials)",
             fmt::format("schema {}, fix {}, scenario {}, mode {}", show(at(*doc, {"schema"})), show(at(*doc, {"fix"})),
                         show(at(*doc, {"scenario"})), show(at(*doc, {"mode"}))));
    c.expect(at(*doc, {"exit_code"}) && (*doc)["exit_code"] == *r.rc, "the JSON's exit_code is the exit status",
             fmt::format("exit_code {}, status {}", show(at(*doc, {"exit_code"})), *r.rc));
    const json* cpus = at(*doc, {"context", "scenario_params", "cpus"});
    const json* fix_cpus = at(*doc, {"context", "scenario_params", "fix_cpus"});
    c.expect(cpus && *cpus == json({0, 1, 2, 3}) && fix_cpus && *fix_cpus == json({0, 1}),
             "baseline trials on CPUs 0-3 (both nodes), fix trials on node 0's CPUs 0-1",
             fmt::format("baseline {}, fix {}", show(cpus), show(fix_cpus)));

    const json* h = criterion_on(*doc, "handoff.dst_release.cross_node_per_op");
    if (!h) {
        c.fail("the verdict judges handoff.dst_release.cross_node_per_op (seen: " + show(at(*doc, {"criteria"})) + ")");
        return;
    }
    c.expect(h->value("kind", "") == "expect" && h->value("verdict", "") == "PASS",
             "expect handoff.dst_release.cross_node_per_op down >= 50%: PASS",
             h->value("verdict", "?") + ": " + h->value("reason", ""));
    const json* mb = at(*h, {"median_baseline"});
    c.expect(mb && mb->is_number() && mb->get<double>() >= kBaselineCrossPerConn,
             fmt::format("the baseline crosses nodes: >= {} cross-node handoffs per connection", kBaselineCrossPerConn),
             num_or(mb));

    // JUnit: one testcase per criterion, named after it; the handoff one passed.
    auto xml = slurp(r.files / "verdict.xml");
    if (!xml) {
        c.fail("verdict.xml came back from the guest (seen: no such file)");
    } else {
        std::size_t n = doc->contains("criteria") ? (*doc)["criteria"].size() : 0;
        c.expect(n > 0 && count_of(*xml, "<testcase ") == n, "verdict.xml has one testcase per criterion",
                 fmt::format("{} testcases, {} criteria", count_of(*xml, "<testcase "), n));
        for (auto& cr : (*doc)["criteria"]) {
            std::string name = cr.value("kind", "") + ": " + cr.value("description", "");
            std::string tc = testcase(*xml, name);
            c.expect(!tc.empty(), "verdict.xml names the criterion \"" + name + "\"", tc.empty() ? "absent" : "present");
        }
        std::string tc = testcase(*xml, "expect: " + h->value("description", ""));
        c.expect(!tc.empty() && tc.find("<failure") == std::string::npos && tc.find("<skipped") == std::string::npos,
                 "the handoff testcase passed (no failure, not skipped)",
                 tc.empty() ? "absent"
                 : tc.find("<failure") != std::string::npos ? "a failure"
                 : tc.find("<skipped") != std::string::npos ? "skipped"
                                                              : "passed");
    }
    for (auto& cr : (*doc)["criteria"]) c.note(cr.value("description", "?") + ": " + criterion_numbers(cr));
    c.note(fmt::format("overall {} (exit {}): {}; trials {}", doc->value("verdict", "?"), show(at(*doc, {"exit_code"})),
                       doc->value("reason", ""), show(at(*doc, {"trials_count"}))));
}

// The tcp-crr recording `hotline diff` compares: scenario numbers, per-interval
// metrics and this kernel's dst_entry layout fact.
// `hotline cost` with fentry and with kprobe forced: one row per target on its
// own attach point, every variant attached next to the empty program, and all
// of them counting the same calls (their statistics are read over one window).
void check_cost(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "cost");
    if (!reported(c, r)) return;
    for (std::string mech : {"fentry", "kprobe"}) {
        auto doc = load_json(c, r, "cost-" + mech + ".json");
        if (!doc) continue;
        const json* rows = at(*doc, {"rows"});
        for (auto& t : kPresentTargets) {
            const json* row = nullptr;
            if (rows && rows->is_array())
                for (auto& x : *rows)
                    if (x.value("target", "") == t) row = &x;
            if (!row) {
                c.fail(fmt::format("{}: {} has a cost row (seen: missing)", mech, t));
                continue;
            }
            c.expect(row->value("attach", "") == mech + "/" + t && row->value("mechanism", "") == mech,
                     fmt::format("{}: {} is priced on {}/{}", mech, t, mech, t),
                     fmt::format("attach {}, mechanism {}", show(at(*row, {"attach"})), show(at(*row, {"mechanism"}))));
            std::map<std::string, const json*> v;
            if (const json* vs = at(*row, {"variants"}); vs && vs->is_array())
                for (auto& x : *vs) v[x.value("variant", "")] = &x;
            std::string seen;
            for (auto& [n, x] : v)
                seen += fmt::format("{}{} {} runs {:.0f} ns", seen.empty() ? "" : "; ", n,
                                    x->value("run_cnt", std::uint64_t(0)), x->value("ns_per_run", 0.0));
            bool all = v.count("empty") && v.count("count") && v.count("latency") && v.count("handoff");
            c.expect(all, fmt::format("{}: {} has the empty, count, latency and handoff variants", mech, t), seen);
            if (!all) continue;
            auto runs = [&](const char* n) { return double(v[n]->value("run_cnt", std::uint64_t(0))); };
            double e = runs("empty");
            c.expect(e >= 20, fmt::format("{}: {}'s empty program ran at least 20 times", mech, t), seen);
            for (const char* n : {"count", "latency", "handoff"}) {
                double d = std::abs(runs(n) - e);
                c.expect(d <= 0.02 * e + 50,
                         fmt::format("{}: {} {} saw the calls the empty program saw (within 2% + 50)", mech, t, n), seen);
            }
            std::string exit_prog = mech == "fentry" ? "+hl_fexit" : "+hl_kretprobe";
            std::string lp = v["latency"]->value("program", "");
            c.expect(lp.find(exit_prog) != std::string::npos,
                     fmt::format("{}: {} latency is priced entry{}", mech, t, exit_prog), lp);
        }
    }
}

void check_record_tcp_crr(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "record-tcp-crr");
    if (!reported(c, r)) return;
    auto doc = load_json(c, r, "record.json");
    if (!doc) return;
    expect_valid_recording(c, *doc, "record.json");
    const json* conns = at(*doc, {"scenario", "connections", "count"});
    c.expect(at(*doc, {"scenario", "scenario"}) && (*doc)["scenario"]["scenario"] == "tcp-crr" && conns &&
                 conns->is_number() && conns->get<double>() >= 50,
             "the tcp-crr scenario ran and made at least 50 connections",
             fmt::format("scenario {}, connections {}", show(at(*doc, {"scenario", "scenario"})), show(conns)));
    const json* ivs = at(*doc, {"analysis", "interval_metrics"});
    std::size_t n = ivs && ivs->is_array() ? ivs->size() : 0;
    c.expect(n >= 2, "analysis.interval_metrics has at least 2 intervals", fmt::format("{}", n));
    for (const char* m : {"latency.dst_release.mean_ns", "handoff.dst_release.cross_node_per_op",
                          "calls.dst_release.per_op", "scenario.ops_per_s"}) {
        std::size_t have = 0;
        std::string vals;
        for (std::size_t i = 0; i < n; ++i)
            if ((*ivs)[i].contains(m) && (*ivs)[i][m].is_number()) {
                ++have;
                vals += (vals.empty() ? "" : ", ") + fmt::format("{:.4g}", (*ivs)[i][m].get<double>());
            }
        c.expect(n > 0 && have == n, fmt::format("every interval measures {}", m),
                 fmt::format("{} of {} intervals: {}", have, n, vals));
    }

    auto kenv = read_env(dir / "kernel.env");
    const std::string field = kenv["dst_refcount_field"];
    const json* read = at(*doc, {"analysis", "diff", "layout_metrics", "layout.dst_entry.read_fields_on_refcnt_line"});
    const json* carries = at(*doc, {"analysis", "diff", "fixes", "dst-refcnt-false-sharing", "carries_fix"});
    std::string shares;
    if (const json* ls = at(*doc, {"analysis", "layouts"}); ls && ls->is_array())
        for (auto& l : *ls)
            if (l.value("type", "") == "dst_entry")
                shares = fmt::format("anchor {} at {}, line {}-{} shared with {}", show(at(l, {"anchor"})),
                                     show(at(l, {"anchor_offset"})), show(at(l, {"line_start"})),
                                     show(at(l, {"line_end"})), show(at(l, {"shares_line"})));
    if (field == "__refcnt") {
        c.expect(read && read->is_number() && read->get<double>() >= 1,
                 "before the 6.4 fix (__refcnt): read-mostly fields share the refcount's line (>= 1)",
                 show(read) + "; " + shares);
        c.expect(carries && *carries == false, "dst-refcnt-false-sharing: carries_fix is false", show(carries));
    } else if (field == "__rcuref") {
        c.expect(read && read->is_number() && read->get<double>() == 0,
                 "after the 6.4 fix (__rcuref): no read-mostly field on the refcount's line", show(read) + "; " + shares);
        c.expect(carries && *carries == true, "dst-refcnt-false-sharing: carries_fix is true", show(carries));
    } else {
        c.fail("kernel.env names the expected dst_entry refcount field (seen: \"" + field + "\")");
    }
    c.note("dst_entry layout: " + shares);
}

// Runs argv with stdout and stderr into `log`; the exit status, or -1.
int run_to_file(const std::vector<std::string>& argv, const fs::path& log) {
    std::string cmd;
    for (auto& a : argv) {
        std::string q = "'";
        for (char ch : a) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
        cmd += (cmd.empty() ? "" : " ") + q + "'";
    }
    cmd += " >'" + log.string() + "' 2>&1";
    int st = std::system(cmd.c_str());
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

// `hotline diff` of the tcp-crr recordings of two kernels (--results: before the
// 6.4 dst fix, --candidate: after it): the layout criterion decides, the
// per-call and handoff costs are reported beside it whatever they show.
void check_diff(Checks& c, const fs::path& dir) {
    if (g_extra.candidate.empty() || g_extra.hotline.empty() || g_extra.out.empty()) {
        c.fail("--candidate, --hotline and --out are given for the diff check (seen: missing)");
        return;
    }
    if (auto why = slurp(g_extra.candidate / "failure")) c.fail("the candidate guest run completed (seen: " + trim(*why) + ")");
    fs::path a = dir / "record-tcp-crr" / "files" / "record.json";
    fs::path b = g_extra.candidate / "record-tcp-crr" / "files" / "record.json";
    for (auto& p : {a, b})
        if (!fs::exists(p)) {
            c.fail("the recording came back from the guest (seen: no " + p.string() + ")");
            return;
        }
    fs::create_directories(g_extra.out);
    fs::path vj = g_extra.out / "verdict.json", log = g_extra.out / "diff.txt";
    fs::remove(vj);
    int rc = run_to_file({g_extra.hotline, "diff", a.string(), b.string(), "--expect", "dst-refcnt-false-sharing",
                          "-o", vj.string()},
                         log);
    std::cout << "hotline diff " << a.string() << " " << b.string() << " --expect dst-refcnt-false-sharing:\n"
              << tail(slurp(log).value_or(""), 40);
    c.expect(rc == 0, "hotline diff exits 0 (PASS)", fmt::format("exit status {}", rc));
    auto text = slurp(vj);
    if (!text) {
        c.fail("hotline diff wrote " + vj.string() + " (seen: no file)");
        return;
    }
    json doc;
    try {
        doc = json::parse(*text);
    } catch (const json::exception& e) {
        c.fail(std::string("the diff verdict is JSON (seen: ") + e.what() + ")");
        return;
    }
    c.expect(doc.value("mode", "") == "diff" && doc.value("fix", "") == "dst-refcnt-false-sharing" &&
                 doc.value("verdict", "") == "PASS" && at(doc, {"exit_code"}) && doc["exit_code"] == 0,
             "diff verdict for dst-refcnt-false-sharing is PASS (exit_code 0)",
             fmt::format("mode {}, verdict {}, exit_code {}: {}", show(at(doc, {"mode"})), show(at(doc, {"verdict"})),
                         show(at(doc, {"exit_code"})), doc.value("reason", "")));
    const json* layout = criterion_on(doc, "layout.dst_entry.read_fields_on_refcnt_line");
    c.expect(layout && layout->value("kind", "") == "expect" && layout->value("verdict", "") == "PASS",
             "the layout criterion (read-mostly fields on the refcount's line, down 100%) is PASS",
             layout ? layout->value("verdict", "?") + ": " + layout->value("reason", "") : "not judged");
    if (layout) {
        const json* mb = at(*layout, {"median_baseline"});
        const json* mf = at(*layout, {"median_fix"});
        c.expect(mb && mb->is_number() && mb->get<double>() >= 1 && mf && mf->is_number() && mf->get<double>() == 0,
                 "fields that shared the refcount's line before no longer do: >= 1 before, 0 after",
                 fmt::format("before {}, after {}", num_or(mb), num_or(mf)));
    }
    c.expect(at(doc, {"context", "baseline", "carries_fix"}) && doc["context"]["baseline"]["carries_fix"] == false &&
                 at(doc, {"context", "candidate", "carries_fix"}) && doc["context"]["candidate"]["carries_fix"] == true,
             "the baseline kernel lacks the fix and the candidate carries it",
             fmt::format("baseline {}, candidate {}", show(at(doc, {"context", "baseline", "carries_fix"})),
                         show(at(doc, {"context", "candidate", "carries_fix"}))));
    // The measured costs, reported beside the decision: present and measured on both kernels.
    for (const char* m : {"latency.dst_release.mean_ns", "handoff.dst_release.cross_node_per_op"}) {
        const json* cr = criterion_on(doc, m);
        bool measured = cr && cr->value("kind", "") == "report" && cr->value("verdict", "") == "INFO" &&
                        cr->value("n_baseline", 0) >= 1 && cr->value("n_fix", 0) >= 1 &&
                        at(*cr, {"median_baseline"}) && (*cr)["median_baseline"].is_number() &&
                        at(*cr, {"median_fix"}) && (*cr)["median_fix"].is_number() && at(*cr, {"ratio"});
        c.expect(measured, fmt::format("{} is measured on both kernels and reported beside the verdict", m),
                 cr ? criterion_numbers(*cr) : "not in the verdict");
    }
    if (const json* cs = at(doc, {"criteria"}); cs && cs->is_array())
        for (auto& cr : *cs) c.note(cr.value("description", "?") + ": " + criterion_numbers(cr));
}

// latency-oracle: hrtimer_nanosleep timed while a task pinned to CPU 2 sleeps a
// requested time `count` times.  The kernel never ends such a sleep early; it
// ends it late by the timer slack (50 us) and the wake-up, which under TCG on
// a busy 2-core host takes up to a few ms.  Bound: the median falls in the
// log2-ns bucket holding the requested time, chosen so the bucket spans
// 0.84x..1.68x of the request (40 ms: [33.6, 67.1) ms; 160 ms: [134, 268) ms).
// A time difference doubled, halved or in the wrong unit leaves that bucket.
// Calls on CPU 2: exactly the sleeps, plus at most kSleepExtraCalls from the
// rest of the system (nothing else runs there; the shell's fork/exec does not
// sleep).
struct Sleep {
    long us;
    int count;
};
constexpr double kSleepExtraCalls = 2;

// The median entry of a recording's log2 histogram: {low_ns, high_ns}.
std::optional<std::pair<double, double>> median_bucket(const json& buckets) {
    double total = 0, seen = 0;
    for (auto& b : buckets) total += b.value("count", 0.0);
    for (auto& b : buckets) {
        seen += b.value("count", 0.0);
        if (total > 0 && seen * 2 >= total) return std::make_pair(b.value("low_ns", 0.0), b.value("high_ns", 0.0));
    }
    return std::nullopt;
}

std::optional<double> check_sleeps(Checks& c, const GuestResult& r, const std::string& mech, Sleep s) {
    auto doc = load_json(c, r, fmt::format("sleep-{}-{}.json", mech, s.us));
    if (!doc) return std::nullopt;
    std::string what = fmt::format("{} x {} ms sleeps by {}", s.count, s.us / 1000, mech);
    const json* tot = total_of(*doc, "hrtimer_nanosleep");
    const json* h = at(*doc, {"histograms", "hrtimer_nanosleep", "buckets"});
    if (!tot || !h || !h->is_array()) {
        c.fail(what + ": hrtimer_nanosleep with a latency histogram is in the recording (seen: missing)");
        return std::nullopt;
    }
    c.expect(tot->value("mechanism", "") == mech, what + ": recorded with " + mech, show(at(*tot, {"mechanism"})));
    double on_cpu2 = (*tot)["calls"].size() > 2 ? (*tot)["calls"][2].get<double>() : 0;
    c.expect(on_cpu2 >= s.count && on_cpu2 <= s.count + kSleepExtraCalls,
             fmt::format("{}: CPU 2 counts the {} sleeps (at most {} more)", what, s.count, kSleepExtraCalls),
             fmt::format("{} calls on CPU 2", on_cpu2));
    double want_ns = double(s.us) * 1000;
    auto m = median_bucket(*h);
    c.expect(m && m->first <= want_ns && want_ns <= m->second,
             fmt::format("{}: the median latency lies in the log2 bucket of {} ns", what, want_ns),
             m ? fmt::format("median bucket [{}, {}] ns; histogram {}", m->first, m->second, h->dump()) : "empty histogram");
    return m ? std::optional<double>(m->first) : std::nullopt;
}

void check_latency_oracle(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "latency-oracle");
    if (!reported(c, r)) return;
    for (const char* mech : {"fentry", "kprobe"}) {
        auto short_ = check_sleeps(c, r, mech, {40000, 20});
        auto long_ = check_sleeps(c, r, mech, {160000, 6});
        c.expect(short_ && long_ && *long_ > *short_, fmt::format("{}: 160 ms sleeps time longer than 40 ms ones", mech),
                 fmt::format("median buckets from {} and {} ns", short_.value_or(-1), long_.value_or(-1)));
    }
}

// func-arg: the struct file behind one shell's fd 3 (vfs_write's argument 0),
// written alternately from CPU 0 and CPU 2 20 times: 19 handoffs, all
// cross-node.  Bound: exactly those, plus 2 for a write to that file from
// elsewhere (nothing else has it open).
constexpr double kArgHandoffs = 19, kArgHandoffSlack = 2;

void check_func_arg(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "func-arg");
    if (!reported(c, r)) return;
    for (const char* mech : {"fentry", "kprobe"}) {
        auto doc = load_json(c, r, fmt::format("arg-{}.json", mech));
        if (!doc) continue;
        const json* tot = total_of(*doc, "vfs_write");
        c.expect(tot && tot->value("mechanism", "") == mech, fmt::format("vfs_write:arg0 attached by {}", mech),
                 tot ? show(at(*tot, {"mechanism"})) : "not in totals");
        bool found = false;
        if (const json* objs = at(*doc, {"hot_objects"}); objs && objs->is_array())
            for (auto& o : *objs) {
                double h = o.value("handoffs", 0.0), x = o.value("cross_node", 0.0);
                found |= o.value("target", "") == "vfs_write" && h >= kArgHandoffs &&
                         h <= kArgHandoffs + kArgHandoffSlack && x == h;
            }
        c.expect(found, fmt::format("{}: a file handed off {}-{} times, all across nodes", mech, kArgHandoffs,
                                    kArgHandoffs + kArgHandoffSlack),
                 show(at(*doc, {"hot_objects"})));
    }
}

// `hotline diagnose` live under cross-node churn names numa-local, prints the
// command that confirms it, and that command (TCG-sized) passes its handoff criterion.
void check_diagnose_numa_local(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "diagnose-numa-local");
    if (!r.transfer_errors.empty()) c.fail("files arrived intact (seen: " + r.transfer_errors + ")");
    if (!r.rc) {
        c.fail("guest reported test diagnose-numa-local (seen: no HLVM-RESULT; the guest died or timed out first)");
        return;
    }
    std::string text = slurp(r.files / "diagnose.txt").value_or("");
    c.expect(text.find("dst-cross-node-handoffs") != std::string::npos &&
                 text.find("numa-local (runtime): applies here") != std::string::npos,
             "diagnose names dst-cross-node-handoffs and numa-local, applicable here",
             text.empty() ? "no diagnose.txt" : text.substr(0, std::min<std::size_t>(text.size(), 400)));
    std::string cmd = trim(slurp(r.files / "confirm.txt").value_or(""));
    c.expect(cmd.rfind("hotline validate --fix numa-local --scenario tcp-crr", 0) == 0,
             "diagnose printed the validate command for numa-local", cmd.empty() ? "none" : cmd);
    c.expect(*r.rc >= 0 && *r.rc <= 2, "the printed command reached a verdict (exit 0, 1 or 2)",
             fmt::format("exit status {} after {} s", *r.rc, r.secs));
    auto doc = load_json(c, r, "verdict.json");
    if (!doc) return;
    const json* h = criterion_on(*doc, "handoff.dst_release.cross_node_per_op");
    c.expect(h && h->value("verdict", "") == "PASS", "its handoff.dst_release.cross_node_per_op criterion: PASS",
             h ? h->value("verdict", "?") + ": " + h->value("reason", "") : "not judged");
    c.note("overall verdict (not asserted, see validate-numa-local): " + show(at(*doc, {"verdict"})));
}

// ------------------------------------------- global knobs, sampling, proxies, workqueues

// A text file the guest test left, trimmed; "" when it is missing.
std::string guest_text(const GuestResult& r, const std::string& file) {
    return trim(slurp(r.files / file).value_or(""));
}

std::vector<std::string> guest_lines(const GuestResult& r, const std::string& file) {
    std::vector<std::string> out;
    std::istringstream in(slurp(r.files / file).value_or(""));
    for (std::string l; std::getline(in, l);)
        if (!trim(l).empty()) out.push_back(trim(l));
    return out;
}

std::optional<int> guest_rc(const GuestResult& r, const std::string& file) {
    std::string t = guest_text(r, file);
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoi(t);
}

std::string show_rc(std::optional<int> rc) { return rc ? std::to_string(*rc) : "missing"; }

// allow-global: the knobs "vm.stat_interval pages_to_scan" as the guest's
// sampler wrote them: the non-default values set before each run, and the
// test fix's values.
const std::string kGlobalBefore = "2 4095", kGlobalFix = "7 1234";

// Every sampled state has each knob at its previous or its fix value (a
// sample may fall between the two writes); the fix values appear, as a
// whole, `min_fix`..`max_fix` times (once per fix trial), and the last state
// is the previous one.
void check_knob_samples(Checks& c, const GuestResult& r, const std::string& file, int min_fix, int max_fix) {
    auto seen = guest_lines(r, file);
    std::istringstream before_in(kGlobalBefore), fix_in(kGlobalFix);
    std::string b1, b2, f1, f2;
    before_in >> b1 >> b2;
    fix_in >> f1 >> f2;
    bool only_known = !seen.empty();
    int fix_periods = 0;
    for (auto& s : seen) {
        std::istringstream in(s);
        std::string a, b;
        in >> a >> b;
        only_known &= (a == b1 || a == f1) && (b == b2 || b == f2);
        fix_periods += s == kGlobalFix;
    }
    std::string joined;
    for (auto& s : seen) joined += (joined.empty() ? "" : " | ") + s;
    c.expect(only_known, fmt::format("{}: the knobs only ever held their previous ({}) or the fix's ({}) values", file,
                                     kGlobalBefore, kGlobalFix),
             joined.empty() ? "no samples" : joined);
    c.expect(fix_periods >= min_fix && fix_periods <= max_fix,
             fmt::format("{}: the fix's values held {}..{} times", file, min_fix, max_fix),
             fmt::format("{} times: {}", fix_periods, joined));
    c.expect(!seen.empty() && seen.back() == kGlobalBefore, file + ": the last state is the previous values",
             seen.empty() ? "no samples" : seen.back());
}

void check_irqs_untouched(Checks& c, const GuestResult& r) {
    std::string before = guest_text(r, "irqs-before.txt");
    c.expect(before.find("smp_affinity_list") != std::string::npos, "the guest has IRQ affinities to compare",
             before.empty() ? "no irqs-before.txt" : fmt::format("{} IRQs", count_of(before, "\n") + 1));
    for (const char* after : {"irqs-after-run.txt", "irqs-after-restore.txt", "irqs-after-refused.txt"})
        c.expect(!before.empty() && guest_text(r, after) == before,
                 fmt::format("/proc/irq/*/smp_affinity_list unchanged ({} = irqs-before.txt)", after),
                 guest_text(r, after) == before ? "identical" : "differs:\n" + guest_text(r, after));
}

void check_allow_global_run(Checks& c, const GuestResult& r) {
    auto rc = guest_rc(r, "run.rc");
    c.expect(rc && *rc >= 0 && *rc <= 2, "validate --allow-global reached a verdict (exit 0, 1 or 2)",
             show_rc(rc) + "; " + guest_text(r, "run.txt").substr(0, 300));
    if (auto doc = load_json(c, r, "verdict.json"))
        c.expect(doc->value("fix", "") == "guest-global-knobs" && at(*doc, {"exit_code"}) && rc &&
                     (*doc)["exit_code"] == *rc,
                 "verdict.json judges guest-global-knobs and its exit_code is the exit status",
                 fmt::format("fix {}, exit_code {}", show(at(*doc, {"fix"})), show(at(*doc, {"exit_code"}))));
    check_knob_samples(c, r, "seen-run.txt", 1, 2);
    c.expect(guest_text(r, "knobs-after-run.txt") == kGlobalBefore, "after the run the knobs hold their previous values",
             guest_text(r, "knobs-after-run.txt"));
}

void check_allow_global_killed(Checks& c, const GuestResult& r) {
    c.expect(guest_rc(r, "killed.rc") == 137, "the second validate died of SIGKILL (137)",
             show_rc(guest_rc(r, "killed.rc")));
    std::string killed = guest_text(r, "killed.txt");
    c.expect(killed.find("trial 1 (baseline)") != std::string::npos &&
                 killed.find("guest-global-knobs on tcp-crr:") == std::string::npos,
             "it was killed mid-run: trials began, no verdict was printed", killed.substr(0, 400));
    c.expect(guest_text(r, "knobs-after-kill.txt") == kGlobalFix, "killed in a fix trial: the knobs still hold the fix's values",
             guest_text(r, "knobs-after-kill.txt"));
    c.expect(guest_text(r, "lock-holders.txt").empty(), "no process holds /run/hotline-knobs.lock after the kill",
             guest_text(r, "lock-holders.txt").empty() ? "none" : guest_text(r, "lock-holders.txt"));
    std::string out = guest_text(r, "restore.txt");
    c.expect(guest_rc(r, "restore.rc") == 0 && out.find("restored") != std::string::npos,
             "`hotline restore` (default journal directory) exits 0 and says what it restored",
             show_rc(guest_rc(r, "restore.rc")) + ": " + out);
    c.expect(guest_text(r, "knobs-after-restore.txt") == kGlobalBefore,
             "after `hotline restore` the knobs hold their previous values", guest_text(r, "knobs-after-restore.txt"));
}

void check_allow_global_refused(Checks& c, const GuestResult& r) {
    std::string out = guest_text(r, "refused.txt");
    c.expect(guest_rc(r, "refused.rc") == hotline::kExitValidateError && out.find("--allow-global") != std::string::npos,
             "without --allow-global validate is refused: exit 4, naming --allow-global",
             show_rc(guest_rc(r, "refused.rc")) + ": " + out.substr(0, 300));
    auto seen = guest_lines(r, "seen-refused.txt");
    bool untouched = !seen.empty() && std::all_of(seen.begin(), seen.end(), [](auto& s) { return s == kGlobalBefore; });
    c.expect(untouched && guest_text(r, "knobs-after-refused.txt") == kGlobalBefore,
             "the refused run never changed the knobs (every sample and the end state are the previous values)",
             fmt::format("{} samples, first {}, after {}", seen.size(), seen.empty() ? "-" : seen.front(),
                         guest_text(r, "knobs-after-refused.txt")));
}

void check_allow_global(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "allow-global");
    if (!reported(c, r)) return;
    c.expect(guest_text(r, "knobs-before.txt") == kGlobalBefore, "the knobs start at the test's non-default values",
             guest_text(r, "knobs-before.txt"));
    check_allow_global_run(c, r);
    check_allow_global_killed(c, r);
    check_allow_global_refused(c, r);
    check_irqs_untouched(c, r);
}

double h_total(const json& tot, const char* key) {
    const json* v = at(tot, {"handoffs", key});
    return v && v->is_number() ? v->get<double>() : 0;
}

// A target's per-CPU array under totals.targets[].handoffs, or zeros.
std::vector<double> handoff_array(const json& tot, const char* key, std::size_t cpus = 4) {
    std::vector<double> v(cpus, 0);
    const json* a = at(tot, {"handoffs", key});
    if (a && a->is_array())
        for (std::size_t i = 0; i < a->size() && i < cpus; ++i) v[i] = (*a)[i].get<double>();
    return v;
}

double matrix_at(const json& tot, int from, int to) {
    const json* m = at(tot, {"handoffs", "node_matrix"});
    if (!m || !m->is_array() || int(m->size()) <= from || !(*m)[from].is_array() || int((*m)[from].size()) <= to)
        return -1;
    return (*m)[from][to].get<double>();
}

// handoff-sample: 64 files, each written 10 times on CPU 0 and 10 on CPU 2,
// alternately: 19 handoffs per file, 10 from node 0 to node 1 (taken on CPU 2)
// and 9 back (taken on CPU 0).  Other vfs_write calls in the guest (the test
// harness's pipes, hotline's output) are few and land anywhere: measured 0 on
// 6.1.
constexpr int kSampleFiles = 64;
constexpr double kSampleWritesPerNode = 10, kSampleHandoffs = 19;
// Other tracked touches per CPU: at most 20 + 2% of the files' own.
constexpr double kSampleNoiseCalls = 20, kSampleNoiseShare = 0.02;
// A recording lists its 20 hottest objects (RecordingWriter::finish).
constexpr int kHotObjectsListed = 20;

bool in_band(double v, double low) { return v >= low && v <= low + kSampleNoiseCalls + kSampleNoiseShare * low; }

// The files tracked, k, are counted by CPU 2's touches (10 each); every other
// figure must then be k files' worth: CPU 0's touches, the cross-node
// handoffs taken on each node, the node matrix, and the hot objects, each
// carrying all 19 of a file's handoffs (whole objects are sampled, not hits).
void check_sample_run(Checks& c, const GuestResult& r, int n, int min_files, int max_files) {
    auto doc = load_json(c, r, fmt::format("sample-{}.json", n));
    if (!doc) return;
    const json* tot = total_of(*doc, "vfs_write");
    if (!tot || !at(*tot, {"handoffs"})) {
        c.fail(fmt::format("sample-{}.json: vfs_write with handoffs is in the totals (seen: {})", n, show(tot)));
        return;
    }
    c.expect(tot->value("mechanism", "") == "fentry" && at(*tot, {"handoffs", "sample"}) &&
                 (*tot)["handoffs"]["sample"] == n,
             fmt::format("sample-{}.json: vfs_write:arg0 on fentry, tracking 1 object in {}", n, n),
             fmt::format("mechanism {}, sample {}", show(at(*tot, {"mechanism"})), show(at(*tot, {"handoffs", "sample"}))));
    auto tracked = handoff_array(*tot, "tracked"), cross = handoff_array(*tot, "cross_node");
    const double w = kSampleWritesPerNode, k = std::floor(tracked[2] / w);
    c.expect(k >= min_files && k <= max_files,
             fmt::format("1 in {}: {}..{} of the {} files tracked ({} touches each on CPU 2)", n, min_files, max_files,
                         kSampleFiles, w),
             fmt::format("{:.0f} files; tracked per CPU {}", k, show(at(*tot, {"handoffs", "tracked"}))));
    c.expect(in_band(tracked[0], w * k) && in_band(tracked[2], w * k),
             fmt::format("1 in {}: {:.0f} touches of the tracked files on CPU 0 (node 0) and on CPU 2 (node 1)", n, w * k),
             fmt::format("tracked per CPU {}", show(at(*tot, {"handoffs", "tracked"}))));
    c.expect(in_band(cross[2], w * k) && in_band(cross[0], (w - 1) * k),
             fmt::format("1 in {}: cross-node handoffs taken on CPU 2: {:.0f}, on CPU 0: {:.0f}", n, w * k, (w - 1) * k),
             fmt::format("cross_node per CPU {}", show(at(*tot, {"handoffs", "cross_node"}))));
    c.expect(in_band(matrix_at(*tot, 0, 1), w * k) && in_band(matrix_at(*tot, 1, 0), (w - 1) * k),
             fmt::format("1 in {}: node matrix: {:.0f} from node 0 to node 1, {:.0f} back", n, w * k, (w - 1) * k),
             show(at(*tot, {"handoffs", "node_matrix"})));
    int whole = 0;
    if (const json* objs = at(*doc, {"hot_objects"}); objs && objs->is_array())
        for (auto& o : *objs)
            whole += o.value("target", "") == "vfs_write" && o.value("handoffs", 0.0) == kSampleHandoffs &&
                     o.value("cross_node", 0.0) == kSampleHandoffs;
    // Up to 2 of the listed places may go to other, busier objects.
    double listed = std::min<double>(k, kHotObjectsListed);
    c.expect(whole >= listed - 2 && whole <= listed,
             fmt::format("1 in {}: {:.0f} (or 2 fewer) hot objects are tracked files with all {} handoffs cross-node", n,
                         listed, kSampleHandoffs),
             fmt::format("{} such objects", whole));
}

void check_handoff_sample(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "handoff-sample");
    if (!reported(c, r)) return;
    check_sample_run(c, r, 1, kSampleFiles, kSampleFiles);
    // Which files a 1-in-4 sample takes depends on their addresses: binomial(64,
    // 1/4), mean 16; fewer than 1 or more than 48 has odds below 1e-8.
    check_sample_run(c, r, 4, 1, 48);
}

// proxy-nodes and workqueue-nodes: vm.stat_refresh written 20 times from CPU 0
// and 60 times from CPU 2; each write queues 4 work items (one per CPU) on the
// writer's CPU, 3 of them for other CPUs, and every CPU executes one.
const std::vector<double> kRefreshWrites = {20, 0, 60, 0};
constexpr double kRefreshCpus = 4;
// Other work queued or executed per CPU while the writers run (vmstat and
// timer work, the shells' exits): at most 20 + 5% of the writes' own.
constexpr double kWorkNoiseCalls = 20, kWorkNoiseShare = 0.05;

bool work_band(double v, double low) { return v >= low && v <= low + kWorkNoiseCalls + kWorkNoiseShare * low; }

std::string per_cpu(const std::vector<double>& v) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ", ") + fmt::format("{:.0f}", x);
    return "[" + s + "]";
}

std::vector<double> json_per_cpu(const json* a) {
    std::vector<double> v(4, 0);
    if (a && a->is_array())
        for (std::size_t i = 0; i < a->size() && i < v.size(); ++i) v[i] = (*a)[i].get<double>();
    return v;
}

// Per CPU: `got` lies in the band above `per_write` x the writes on that CPU.
void expect_per_write(Checks& c, const std::string& what, const std::vector<double>& got, double per_write) {
    bool ok = true;
    std::string want;
    for (std::size_t cpu = 0; cpu < kRefreshWrites.size(); ++cpu) {
        double low = per_write * kRefreshWrites[cpu];
        ok &= work_band(got[cpu], low);
        want += fmt::format("{}CPU {} {:.0f}", cpu ? ", " : "", cpu, low);
    }
    c.expect(ok, fmt::format("{}: {} (+ at most {} + {:.0f}%)", what, want, kWorkNoiseCalls, kWorkNoiseShare * 100),
             per_cpu(got));
}

// The dst_release proxy with the churn-split's ends on CPUs 0 and 2: the same
// handoffs as fentry sees (kHandoffsPerConnection).

void check_dst_proxy(Checks& c, const GuestResult& r) {
    auto doc = load_json(c, r, "dst.json");
    if (!doc) return;
    const json* tot = total_of(*doc, "dst_release");
    if (!tot || !at(*tot, {"handoffs"})) {
        c.fail("dst.json: dst_release with handoffs is in the totals (seen: " + show(tot) + ")");
        return;
    }
    c.expect(tot->value("mechanism", "") == "tracepoint", "dst.json: dst_release by its tracepoint proxy",
             show(at(*tot, {"mechanism"})));
    const json* wl = at(*doc, {"workload"});
    double conns = wl ? wl->value("connections", 0.0) : 0;
    c.expect(conns >= 50 && at(*wl, {"cpus"}) && (*wl)["cpus"] == json({0, 2}),
             "churn-split made at least 50 connections on CPUs 0 and 2", show(wl));
    auto tracked = handoff_array(*tot, "tracked"), cross = handoff_array(*tot, "cross_node");
    double touches = tracked[0] + tracked[1] + tracked[2] + tracked[3];
    double idle = tracked[1] + tracked[3], bound = kLocalCrossNodeCalls + kLocalCrossNodeShare * touches;
    c.expect(tracked[0] > 0 && tracked[2] > 0 && idle <= bound,
             fmt::format("touches on the workload's CPUs 0 and 2; CPUs 1 and 3 at most {:.0f}", bound),
             "tracked per CPU " + per_cpu(tracked));
    double x = h_total(*tot, "cross_node_total"), all = h_total(*tot, "handoffs_total");
    c.expect(x >= kHandoffsPerConnection * conns && x >= 0.9 * all,
             fmt::format("cross-node handoffs >= {} per connection and >= 90% of all", kHandoffsPerConnection),
             fmt::format("{} of {} handoffs cross-node, {} connections", x, all, conns));
    c.expect(cross[0] > 0 && cross[2] > 0 && cross[1] + cross[3] <= bound && matrix_at(*tot, 0, 1) > 0 &&
                 matrix_at(*tot, 1, 0) > 0,
             "cross-node handoffs taken on CPUs 0 and 2, both ways in the node matrix",
             fmt::format("cross_node per CPU {}, matrix {}", per_cpu(cross), show(at(*tot, {"handoffs", "node_matrix"}))));
    c.note(fmt::format("dst proxy: {} connections, {:.3f} cross-node handoffs per connection", conns,
                       conns > 0 ? x / conns : 0.0));
}

void check_queue_proxy(Checks& c, const GuestResult& r) {
    auto doc = load_json(c, r, "queue.json");
    if (!doc) return;
    const json* tot = total_of(*doc, "queue_work_on");
    if (!tot) {
        c.fail("queue.json: queue_work_on is in the totals (seen: missing)");
        return;
    }
    c.expect(tot->value("mechanism", "") == "tracepoint", "queue.json: queue_work_on by its tracepoint proxy",
             show(at(*tot, {"mechanism"})));
    expect_per_write(c, "queue_work_on calls per CPU", json_per_cpu(at(*tot, {"calls"})), kRefreshCpus);
    expect_per_write(c, "work queued for another CPU (handoffs.remote) per CPU", handoff_array(*tot, "remote"),
                     kRefreshCpus - 1);
}

void check_proxy_nodes(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "proxy-nodes");
    if (!reported(c, r)) return;
    check_dst_proxy(c, r);
    check_queue_proxy(c, r);
}

// The programs a recording's cost table lists: what the session loaded.
std::vector<std::string> loaded_programs(const json& doc) {
    std::vector<std::string> out;
    const json* cost = at(doc, {"cost"});
    if (cost && cost->is_array())
        for (auto& p : *cost)
            if (p.is_object()) out.push_back(p.value("program", ""));
    return out;
}

// One recording of the writes: totals.workqueue, whichever program queued.
void check_workq_recording(Checks& c, const GuestResult& r, const std::string& file, const std::string& queue_program) {
    auto doc = load_json(c, r, file);
    if (!doc) return;
    const json* w = at(*doc, {"totals", "workqueue"});
    if (!w) {
        c.fail(file + " has totals.workqueue (seen: missing)");
        return;
    }
    auto programs = loaded_programs(*doc);
    auto loaded = [&](const std::string& p) { return std::find(programs.begin(), programs.end(), p) != programs.end(); };
    const std::string other = queue_program == "hl_wq_queue" ? "hl_tp_queue_work_wq" : "hl_wq_queue";
    c.expect(loaded(queue_program) && !loaded(other), file + ": the queue side in " + queue_program + ", not " + other,
             fmt::format("programs {}", fmt::join(programs, ", ")));
    expect_per_write(c, file + ": work queued per queueing CPU (workqueue.queued)", json_per_cpu(at(*w, {"queued"})),
                     kRefreshCpus);
    expect_per_write(c, file + ": work queued for another CPU (workqueue.remote)", json_per_cpu(at(*w, {"remote"})),
                     kRefreshCpus - 1);
    double writes = 0;
    for (auto v : kRefreshWrites) writes += v;
    auto executed = json_per_cpu(at(*w, {"executed"}));
    // Each CPU runs the write's item, and a flush barrier when
    // schedule_on_each_cpu's flush_work finds that item not yet done (a
    // barrier is executed but never passes workqueue_queue_work): measured on
    // 6.1 80 writes gave 83-138 executions per CPU.
    double most = 2 * writes + kWorkNoiseCalls + kWorkNoiseShare * writes;
    c.expect(std::all_of(executed.begin(), executed.end(), [&](double v) { return v >= writes && v <= most; }),
             fmt::format("{}: every CPU executed one refresh_vm_stats item per write, on itself: {:.0f}..{:.0f} "
                         "(items, flush barriers, other work)",
                         file, writes, most),
             "executed per CPU " + per_cpu(executed));
    const json* fn = at(*w, {"work_functions", "refresh_vm_stats"});
    c.expect(fn && fn->is_number() && fn->get<double>() == kRefreshCpus * writes,
             fmt::format("{}: work function refresh_vm_stats queued exactly {:.0f} times", file, kRefreshCpus * writes),
             show(fn));
    const json* lat = at(*w, {"queue_to_execute", "count"});
    c.expect(lat && lat->is_number() && lat->get<double>() >= kRefreshCpus * writes,
             fmt::format("{}: at least {:.0f} queue-to-execute times measured (each item queued and run inside the "
                         "recording)",
                         file, kRefreshCpus * writes),
             show(lat));
}

void check_workqueue_nodes(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "workqueue-nodes");
    if (!reported(c, r)) return;
    check_workq_recording(c, r, "workq.json", "hl_wq_queue");
    check_workq_recording(c, r, "workq-proxy.json", "hl_tp_queue_work_wq");
}

// numa-local's irq_affinity change on the guest's device IRQ (--irqs-of): refused
// without --allow-global and nothing changed, an unknown name is bad usage, and with
// --allow-global the IRQ is on node 0's CPUs while held and back to its exact value after.
void check_irq_affinity(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "irq-affinity");
    if (!reported(c, r)) return;
    auto file = [&](const char* name) { return trim(slurp(r.files / name).value_or("(missing)")); };
    std::string before = file("before.txt"), node0 = file("node0.txt");
    std::string what = fmt::format("IRQ {} ({})", file("irq.txt"), file("name.txt"));
    c.expect(before != node0, what + " starts off node 0's CPUs alone, so the fix has something to change",
             fmt::format("before {}, node 0 {}", before, node0));
    c.expect(file("refused.rc") == "64", "without --allow-global `fixes apply` is refused with exit 64",
             "exit " + file("refused.rc") + ": " + file("refused.out"));
    c.expect(file("refused.out").find("--allow-global") != std::string::npos, "the refusal says to add --allow-global",
             file("refused.out"));
    c.expect(file("after-refused.txt") == before, "the refused run left the affinity as it was",
             fmt::format("before {}, after {}", before, file("after-refused.txt")));
    c.expect(file("unknown.rc") == "64" && file("unknown.out").find("'no-such-device-irq'") != std::string::npos,
             "a name that matches no IRQ is bad usage (exit 64) naming it",
             "exit " + file("unknown.rc") + ": " + file("unknown.out"));
    c.expect(file("applied.rc") == "0", "`fixes apply numa-local --irqs-of NAME --allow-global` exits 0",
             "exit " + file("applied.rc") + ": " + file("applied.out"));
    std::string during = file("during.txt");
    c.expect(("\n" + during + "\n").find("\n" + node0 + "\n") != std::string::npos,
             what + " was on node 0's CPUs while the fix was held", "sampled: " + during);
    c.expect(file("after.txt") == before, what + " is back to its exact previous affinity",
             fmt::format("before {}, after {}", before, file("after.txt")));
}

const std::map<std::string, std::function<void(Checks&, const fs::path&)>> kChecks = {
    {"allow-global", check_allow_global},
    {"handoff-sample", check_handoff_sample},
    {"proxy-nodes", check_proxy_nodes},
    {"workqueue-nodes", check_workqueue_nodes},
    {"validate-numa-local", check_validate_numa_local},
    {"diagnose-numa-local", check_diagnose_numa_local},
    {"irq-affinity", check_irq_affinity},
    {"record-tcp-crr", check_record_tcp_crr},
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
    if (auto why = slurp(dir / "failure")) c.fail("the guest run completed (seen: " + trim(*why) + ")");
    it->second(c, dir);
    if (c.failures() == 0) return 0;

    std::cout << fmt::format("\n{} check(s) failed.\n", c.failures());
    GuestResult r = load_result(dir, test);
    if (!r.output.empty()) std::cout << "last lines of the test's output:\n" << tail(r.output, 30);
    std::cout << "last lines of the guest console (" << (dir / "console.log").string() << "):\n"
              << tail(slurp(dir / "console.log").value_or("(no console log: did the boot test run?)"), 30);
    return 1;
}
