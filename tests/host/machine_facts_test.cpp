// SPDX-License-Identifier: Apache-2.0
// The machine facts the host tests' expectations come from
// (tests/lib/machine_facts.hpp), each printed with where it was read, and each
// held to what any machine hotline supports must have, so a reader that read
// nothing cannot pass for a machine that has nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "machine_facts.hpp"

using hostfacts::MachineFacts;

TEST(MachineFactsHost, EveryFactIsReadAndPlausible) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const MachineFacts& mf = MachineFacts::get();
    for (const char* f : {"lockdown", "fentry", "fexit", "kprobe", "nodes", "dst_entry", "fast_pool_mix"})
        std::printf("%s\n", mf.why({f}).c_str());
    EXPECT_TRUE(std::set<std::string>({"none", "integrity", "confidentiality"}).count(mf.lockdown()))
        << mf.why({"lockdown"});
    for (const std::string& v : {mf.fentry(), mf.fexit(), mf.kprobe()})
        EXPECT_FALSE(v.empty() || v.rfind("errno ", 0) == 0) << mf.why({"fentry", "fexit", "kprobe"});
    // Every online CPU on exactly one node, and at least one node with CPUs.
    EXPECT_GE(mf.nodes_with_cpus(), 1) << mf.why({"nodes"});
    std::multiset<int> listed;
    for (auto& [node, cpus] : mf.nodes()) listed.insert(cpus.begin(), cpus.end());
    for (int cpu = 0; cpu < int(sysconf(_SC_NPROCESSORS_ONLN)); ++cpu)
        EXPECT_EQ(listed.count(cpu), 1u) << "CPU " << cpu << "; " << mf.why({"nodes"});
    // Every kernel since 4.x has a refcount in struct dst_entry and lwtstate
    // next to it; rtable begins with its dst_entry.
    const auto& d = mf.dst();
    EXPECT_TRUE(d.refcount == "__refcnt" || d.refcount == "__rcuref") << mf.why({"dst_entry"});
    EXPECT_GE(d.refcount_offset, 0) << mf.why({"dst_entry"});
    EXPECT_GT(d.lwtstate_offset, 0) << mf.why({"dst_entry"});
    EXPECT_GT(d.rt_genid_offset, d.refcount_offset) << mf.why({"dst_entry"});
}
