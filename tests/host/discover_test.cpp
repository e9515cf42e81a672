// SPDX-License-Identifier: Apache-2.0
// `hotline discover` against ground truths this host can stage: a pipe between
// two CPUs hands the reader's and writer's task_structs over at every wakeup,
// the same pipe on one CPU does not; sockets each CPU keeps to itself are not
// shared, connections served on the next CPU are, and so is one listening
// socket that servers on two CPUs accept from.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "host_util.hpp"

using namespace hosttest;

namespace {

nlohmann::json discover(const std::string& args) {
    std::string f = temp_path("discover.json");
    CmdResult r = run(hosttest::hotline() + " discover -o " + f + " " + args);
    EXPECT_EQ(r.rc, 0) << r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    EXPECT_TRUE(j.contains("discover")) << r.out << r.err;
    return j.value("discover", nlohmann::json::object());
}

const nlohmann::json* type_of(const nlohmann::json& d, const std::string& type) {
    for (const auto& t : d["types"])
        if (t["type"] == type) return &t;
    return nullptr;
}

// Rank (0-based) of `type` among the types by cross-CPU handoffs, or -1.
int rank_of(const nlohmann::json& d, const std::string& type) {
    std::vector<std::pair<double, std::string>> by;
    for (const auto& t : d["types"]) by.push_back({t["handoffs_per_s"].get<double>(), t["type"]});
    std::sort(by.rbegin(), by.rend());
    for (std::size_t i = 0; i < by.size(); ++i)
        if (by[i].second == type) return int(i);
    return -1;
}

// Handoffs of the `n` hottest objects of a type.
std::uint64_t hottest_handoffs(const nlohmann::json& d, const std::string& type, std::size_t n) {
    const auto* t = type_of(d, type);
    std::uint64_t sum = 0;
    if (!t) return 0;
    for (std::size_t i = 0; i < n && i < (*t)["hottest"].size(); ++i) sum += (*t)["hottest"][i]["handoffs"].get<std::uint64_t>();
    return sum;
}

// Two processes passing a byte back and forth through two pipes, each woken by
// the other's write: 20,000 wakeups each.
std::string pingpong(int cpu_a, int cpu_b) {
    return fmt::format("-- python3 {}/pipe_pingpong.py 20000 {} {}", HOST_HELPERS, cpu_a, cpu_b);
}

}  // namespace

TEST(DiscoverHost, APipeBetweenTwoCpusHandsItsTasksOver) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: no handoff between CPUs to stage";
    // Every object tracked: sampling by address could miss the two tasks.
    auto across = discover("--sample 1 " + pingpong(0, 1));
    int rank = rank_of(across, "task_struct");
    EXPECT_GE(rank, 0) << across.dump(1);
    EXPECT_LT(rank, 3) << "task_struct is not among the top 3 types: " << across["types"].dump(1);
    auto alone = discover("--sample 1 " + pingpong(0, 0));
    std::uint64_t two_cpus = hottest_handoffs(across, "task_struct", 2);
    std::uint64_t one_cpu = hottest_handoffs(alone, "task_struct", 2);
    // The two hottest task_structs: the pipeline's on two CPUs (every wakeup a
    // handoff); on one CPU, whatever the machine woke elsewhere, the
    // pipeline's tasks not moving at all.
    EXPECT_GE(two_cpus, 10 * std::max<std::uint64_t>(one_cpu, 1)) << two_cpus << " vs " << one_cpu;
}

TEST(DiscoverHost, ReportsWhatATouchIsAndTheProgramsCost) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    auto d = discover("-d 2 --workload churn");
    EXPECT_NE(d.value("touch", "").find("not a memory access"), std::string::npos);
    EXPECT_GT(d.value("attach_points", 0), 10);
    EXPECT_GT(d.value("program_runs_per_s", 0.0), 0.0);
    EXPECT_GT(d.value("attach_seconds", 0.0), 0.0);  // its goal is bench_overhead's, not a test's
    ASSERT_FALSE(d["types"].empty());
    for (const auto& t : d["types"]) {
        for (const auto& o : t["hottest"]) {
            std::string id = o["object"];
            EXPECT_EQ(id.rfind(t["type"].get<std::string>() + "#", 0), 0u) << id;
            EXPECT_EQ(id.find("0x"), std::string::npos) << "an address shown: " << id;
        }
    }
}

TEST(DiscoverHost, SocketsKeptPerCpuAreNotSharedAndServedOnTheNextCpuAre) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: no handoff between CPUs to stage";
    auto share = [](const nlohmann::json& d) {
        const auto* t = type_of(d, "sock");
        if (!t) return 0.0;
        double touches = (*t)["touches_per_s"];
        return touches > 0 ? (*t)["handoffs_per_s"].get<double>() / touches : 0.0;
    };
    auto own = discover("--types sock --sample 1 -d 3 --workload churn");
    auto split = discover("--types sock --sample 1 -d 3 --workload churn-split");
    ASSERT_TRUE(type_of(split, "sock")) << split.dump(1);
    // The default set sees a socket where it is written and where its data or
    // FIN arrives: each client socket hands over once per connection, the
    // server's (a sink: it only reads) never, so about one touch in five is a
    // handoff (0.20-0.21 measured); served on its own CPU, none.
    EXPECT_GT(share(split), 0.1) << split.dump(1);
    EXPECT_LT(share(own), share(split) / 5) << own.dump(1);
}

// tcp-crr's pairs keep both ends on one CPU; with one listening socket for
// every server, each handshake completes (sk_data_ready on the listener) on
// its client's CPU, so the listener moves between the CPUs; with a listener
// per pair no socket of the scenario does.
TEST(DiscoverHost, OneListenerForEveryServerIsHandedOverAndOnePerPairIsNot) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: no handoff between CPUs to stage";
    const std::string crr = "--types sock --sample 1 -d 2 --scenario tcp-crr --cpus 0,1";
    auto shared = discover(crr + " --shared-listener");
    auto per_pair = discover(crr);
    std::uint64_t listener = hottest_handoffs(shared, "sock", 1);
    std::uint64_t busiest = hottest_handoffs(per_pair, "sock", 1);
    EXPECT_GE(listener, 10 * std::max<std::uint64_t>(busiest, 1))
        << "the shared listener's handoffs against the busiest socket's with a listener per pair:\n"
        << shared["types"].dump(1) << "\n" << per_pair["types"].dump(1);
}

TEST(DiscoverHost, ThePageRanksTheTypesAndListsTheirLines) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    std::string page = temp_path("discover.html");
    CmdResult r = run(hosttest::hotline() + " discover -d 2 --workload churn-split --types sock,sk_buff --html " + page);
    ASSERT_EQ(r.rc, 0) << r.err;
    std::string html = slurp(page);
    unlink(page.c_str());
    EXPECT_NE(html.find("<h2>Discovered types</h2>"), std::string::npos);
    EXPECT_NE(html.find("Handoffs by type"), std::string::npos);
    EXPECT_NE(html.find("struct sock: fields by cache line"), std::string::npos) << "the top type's layout";
    EXPECT_EQ(html.find("<script"), std::string::npos);
}

// fentry on a function: watched where the kernel loads fentry programs,
// refused by name with the kernel's reason where it does not (lockdown), and
// the tracepoints attach either way.
TEST(DiscoverHost, AFunctionTheKernelRefusesIsNamedAndTheRestAttach) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const auto& facts = hostfacts::MachineFacts::get();
    auto d = discover("-d 1 --tracepoints sched_switch --functions dst_release --workload churn");
    const auto& refused = d["refused"];
    bool named = false;
    for (const auto& r : refused) named |= r["attach"] == "function dst_release arg 0";
    if (facts.fentry_loads()) {
        EXPECT_FALSE(named) << refused.dump() << " (fentry loads here: " << facts.fentry() << ")";
        EXPECT_EQ(d["attach_points"], 3) << "sched_switch's two tasks and dst_release's route";
    } else {
        EXPECT_TRUE(named) << refused.dump() << " (fentry refused here: " << facts.fentry() << ")";
        EXPECT_EQ(d["attach_points"], 2) << "sched_switch's two tasks";
        EXPECT_NE(rank_of(d, "task_struct"), -1) << "the tracepoints attached anyway";
    }
}

// The default duty cycle detaches the programs half of each period: the
// machine runs them about half as often as when they stay attached, and the
// rates are per attached second.  churn keeps both CPUs equally busy
// throughout, so the runs per second of the two sessions compare.
TEST(DiscoverHost, TheDefaultDutyCycleDetachesTheProgramsHalfTheTime) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const double secs = 4;
    auto half = discover("-d 4 --workload churn");
    auto full = discover("-d 4 --workload churn --duty-cycle 100");
    const auto& duty = half["duty_cycle"];
    ASSERT_EQ(duty["percent"], 50) << half.dump(1);
    // Two 1-s windows of a 4-s recording, and the set-up before the workload.
    EXPECT_GT(duty["watched_s"].get<double>(), 0.4 * secs) << duty.dump();
    EXPECT_LT(duty["watched_s"].get<double>(), 0.7 * secs) << duty.dump();
    EXPECT_GT(full["duty_cycle"]["watched_s"].get<double>(), 0.95 * secs) << full["duty_cycle"].dump();
    const double runs_half = half["program_runs_per_s"], runs_full = full["program_runs_per_s"];
    EXPECT_LT(runs_half, 0.75 * runs_full) << "runs/s with the duty cycle " << runs_half << ", attached throughout "
                                           << runs_full;
}
