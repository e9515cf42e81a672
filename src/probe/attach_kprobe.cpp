// SPDX-License-Identifier: Apache-2.0
// kprobe (+ kretprobe for latency) on the target function: exact counts where
// fentry is refused.
#include <cerrno>

#include "attach.hpp"
#include "kprobe.skel.h"

namespace hotline {

namespace {

class KprobeAttach final : public MechanismAttach {
public:
    AttachOutcome attach(const TargetDef& t, AttachEnv& env) override {
        LibbpfCapture cap;
        SkelGuard<hl_kprobe_bpf> s(hl_kprobe_bpf::open());
        if (!s) return refused(errname(errno) + " at open");
        s->rodata->hl_latency = env.opts.latency;
        std::uint32_t slot = 0;
        if (auto e = env.direct_slot(t.name, &slot); e || (e = share_hits(s.get(), env.hits_fd, slot)))
            return refused(*e);
        bool tracking = configure_tracking(s.get(), t, env.opts, false);
        bpf_program__set_autoload(s->progs.hl_kretprobe, env.opts.latency);
        if (int err = hl_kprobe_bpf::load(s.get())) return refused(env.load_reason(err, cap.tail(8)));
        bpf_program* entry = s->progs.hl_kprobe;
        bpf_program* exit = s->progs.hl_kretprobe;
        auto obj = s.release();
        // Exit before entry, as for fentry: no entry may run without its exit attached.
        bool latency = env.opts.latency;
        std::string note;
        const std::string fn = t.name;
        auto attach_exit = [exit, fn] { return bpf_program__attach_kprobe(exit, true, fn.c_str()); };
        auto attach_entry = [entry, fn] { return bpf_program__attach_kprobe(entry, false, fn.c_str()); };
        if (latency && !obj->attach_link("hl_kretprobe", attach_exit)) {
            latency = false;
            note = " (kretprobe refused: " + errname(errno) + ")";
        }
        if (!obj->attach_link("hl_kprobe", attach_entry))
            return refused(errname(errno) + " at attach of kprobe:" + t.name);
        Attached a{std::move(obj), t.name, Mechanism::kKprobe, {"hl_kprobe"}, tracking, t.object_type, slot, {}, {}};
        if (latency) a.programs.push_back("hl_kretprobe");
        env.attached.push_back(std::move(a));
        return {true, (latency ? "kprobe+kretprobe " : "kprobe ") + t.name + note, latency, Fidelity::kExact, ""};
    }
};

}  // namespace

std::unique_ptr<MechanismAttach> make_kprobe_attach() { return std::make_unique<KprobeAttach>(); }

}  // namespace hotline
