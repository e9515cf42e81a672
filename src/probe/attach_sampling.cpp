// SPDX-License-Identifier: Apache-2.0
// cpu-clock sampling: checks that sampling can work for a target; the one
// sampling object for all sampled targets is loaded after planning
// (start_sampling), as its address ranges are read-only data.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "attach.hpp"
#include "hotline/base/perf_event.hpp"
#include "sample.skel.h"

namespace hotline {

namespace {

class SamplingAttach final : public MechanismAttach {
public:
    AttachOutcome attach(const TargetDef& t, AttachEnv& env) override {
        const Kallsyms* ks = env.ksyms.get().get();
        auto r = ks ? ks->range(t.name) : std::nullopt;
        if (!r) return refused("no address range in /proc/kallsyms");
        if (env.sampled.size() >= HL_MAX_SAMPLE_TARGETS)
            return refused(fmt::format("more than {} sampled targets", HL_MAX_SAMPLE_TARGETS));
        int fd = open_cpu_clock_event(env.topo.cpus.front(), env.opts.sample_freq, true, 0);
        if (fd < 0) {
            int err = errno;
            return refused("perf_event_open(cpu-clock): " + errname(err) +
                           (err == EACCES ? " (kernel.perf_event_paranoid?)" : ""));
        }
        close(fd);
        env.sampled.push_back({t.name, *r});
        return {true,
                fmt::format("cpu-clock sampling at {} Hz/CPU, IP in {} ({} bytes)", env.opts.sample_freq, t.name,
                            r->end - r->start),
                false, Fidelity::kSampled, ""};
    }
};

}  // namespace

std::unique_ptr<MechanismAttach> make_sampling_attach() { return std::make_unique<SamplingAttach>(); }

Result<std::unique_ptr<LoadedObject>> start_sampling(const std::vector<SampledTarget>& targets, const Topology& topo,
                                                     int sample_freq) {
    LibbpfCapture cap;
    SkelGuard<hl_sample_bpf> s(hl_sample_bpf::open());
    if (!s) return make_error("sampling: open", errno);
    for (std::size_t i = 0; i < targets.size(); ++i) {
        s->rodata->hl_ranges[i].start = targets[i].range.start;
        s->rodata->hl_ranges[i].end = targets[i].range.end;
    }
    s->rodata->hl_nranges = static_cast<std::uint32_t>(targets.size());
    if (int err = hl_sample_bpf::load(s.get())) {
        Error e = make_error("sampling: load of the perf_event program", err);
        e.detail = cap.tail(8);
        return e;
    }
    bpf_program* prog = s->progs.hl_sample;
    auto obj = s.release();
    for (int cpu : topo.cpus) {
        // The link owns the perf event: each attach opens one.
        auto attach = [prog, cpu, sample_freq]() -> bpf_link* {
            int fd = open_cpu_clock_event(cpu, sample_freq, false, PERF_FLAG_FD_CLOEXEC);
            if (fd < 0) return nullptr;
            bpf_link* l = bpf_program__attach_perf_event(prog, fd);
            if (!l) {
                int e = errno;
                close(fd);
                errno = e;
            }
            return l;
        };
        if (obj->attach_link(fmt::format("hl_sample on CPU {}", cpu), attach)) continue;
        if (errno == ENODEV) continue;  // offline CPU
        return make_error(fmt::format("sampling: attach on CPU {}", cpu), errno);
    }
    return obj;
}

}  // namespace hotline
