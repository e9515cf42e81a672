// SPDX-License-Identifier: Apache-2.0
// Partial attach failures on the real kernel (root): the Nth BPF attach of a
// session fails (tests/lib/faultfs.cpp, linked into this binary), and the
// programs attached before it are all detached before Session::open returns.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "hotline/kernel/kernel.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/model/topology.hpp"

extern "C" void hl_fault_set(const char* spec);
extern "C" long hl_fault_hits();

namespace {

// BPF objects this process holds: programs, links and maps are anon-inode fds.
int own_bpf_fds() {
    int n = 0;
    for (auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        auto target = std::filesystem::read_symlink(e.path(), ec).string();
        if (!ec && target.rfind("anon_inode:bpf", 0) == 0) ++n;
    }
    return n;
}

// The ids of hotline's programs loaded anywhere on the machine.  Ids are never
// reused, so a program of the failed session would be one not seen before.
std::set<__u32> loaded_hotline_programs() {
    std::set<__u32> ids;
    for (__u32 id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
        int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_prog_info info{};
        __u32 len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && std::string(info.name).rfind("hl_", 0) == 0) ids.insert(id);
        close(fd);
    }
    return ids;
}

// Programs loaded now that were not in `before`, once the kernel has had time to
// free what was released: it drops a closed tracepoint link's program only after
// an RCU grace period (the link's deferred dealloc), so a released program can be
// listed for a moment; a leaked one is listed for good.
std::set<__u32> programs_not_in(const std::set<__u32>& before) {
    std::set<__u32> left;
    for (int i = 0; i < 200; ++i) {
        left.clear();
        for (__u32 id : loaded_hotline_programs())
            if (!before.count(id)) left.insert(id);
        if (left.empty()) break;
        usleep(10 * 1000);
    }
    return left;
}

}  // namespace

TEST(PartialAttach, ASessionWhoseLaterAttachFailsDetachesEverything) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    auto topo = hotline::read_topology();
    ASSERT_TRUE(topo) << topo.error().message();
    auto kernel = hotline::probe_kernel();
    hotline::SessionOptions so;
    so.workq = false;
    so.latency = false;
    // The targets with tracepoint proxies, held to them (where fentry loads, it
    // would be planned first); a session without faults attaches them all.
    for (auto& t : hotline::builtin_targets())
        if (t.proxy) so.targets.push_back(t.name);
    so.forced = hotline::Mechanism::kTracepoint;  // a failed attach is then an error, not a fallback
    {
        auto probe = hotline::Session::open(so, kernel, *topo);
        ASSERT_TRUE(probe) << probe.error().message();
    }
    ASSERT_GE(so.targets.size(), 2u) << "needs two tracepoint-proxy targets";
    const int fds = own_bpf_fds();
    const std::set<__u32> programs = loaded_hotline_programs();
    int failed_sessions = 0;
    for (int nth : {2, 3, 5}) {
        SCOPED_TRACE("attach #" + std::to_string(nth) + " fails");
        hl_fault_set(("bpf_attach::" + std::to_string(nth) + ":EPERM").c_str());
        auto s = hotline::Session::open(so, kernel, *topo);
        long hits = hl_fault_hits();
        hl_fault_set("");
        if (hits == 0) continue;  // fewer attaches than nth on this kernel
        ++failed_sessions;
        ASSERT_FALSE(s) << "the failed attach was not reported";
        EXPECT_NE(s.error().message().find("EPERM"), std::string::npos) << s.error().message();
        EXPECT_EQ(own_bpf_fds(), fds) << "programs, links or maps of the failed session are still open";
        for (__u32 id : programs_not_in(programs))
            ADD_FAILURE() << "program id " << id << " of the failed session is still loaded after 2 s";
    }
    EXPECT_GE(failed_sessions, 1) << "no attach after the first was made, so none could fail";
}
