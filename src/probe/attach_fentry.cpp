// SPDX-License-Identifier: Apache-2.0
// fentry (+ fexit for latency) on the target function itself: exact counts.
#include <fmt/format.h>

#include <cerrno>

#include "attach.hpp"
#include "fentry.skel.h"

namespace hotline {

namespace {

// The entry program: generic, or the one reading the tracked object from argument N
// (the argument index must be a constant for the verifier).
std::string entry_program(const TargetDef& t, bool tracking) {
    if (!tracking) return "hl_fentry";
    if (t.object_arg == 2 && t.remote_cpu_arg == 0) return "hl_fentry_a2_cpu0";
    return fmt::format("hl_fentry_a{}", std::clamp(t.object_arg, 0, 4));
}

class FentryAttach final : public MechanismAttach {
public:
    AttachOutcome attach(const TargetDef& t, AttachEnv& env) override {
        bool try_latency = env.opts.latency;
        std::string exit_refused;
        if (auto refusal = preflight(t, env, &try_latency, &exit_refused)) return refused(*refusal);
        std::string first_reason;
        for (bool latency : {try_latency, false}) {
            if (!latency && !try_latency && !first_reason.empty()) break;
            std::string why;
            if (attach_once(t, env, latency, &why)) {
                std::string exit_why = !exit_refused.empty() ? exit_refused : first_reason;
                AttachOutcome out{true, "", latency, Fidelity::kExact, ""};
                out.attach = latency ? "fentry+fexit " + t.name
                                     : "fentry " + t.name +
                                           (env.opts.latency ? " (fexit refused: " + exit_why + ")" : "");
                return out;
            }
            if (first_reason.empty()) first_reason = why;
            if (!latency) break;
        }
        return refused(first_reason);
    }

private:
    // Asks with a minimal program on the same function first: opening the object
    // parses vmlinux BTF and relocates every program, a slow way to hear "no".
    // The kernel refuses a program type or an attach target before it verifies
    // any code, so the minimal program hears the same refusal the real one would.
    static std::optional<std::string> preflight(const TargetDef& t, const AttachEnv& env, bool* try_latency,
                                                std::string* exit_refused) {
        int id = env.func_id(t.name);
        if (id <= 0) return std::nullopt;
        std::string log;
        if (int e = probe_tracing_load(id, false, &log)) return env.load_reason(e, log);
        if (*try_latency)
            if (int e = probe_tracing_load(id, true, &log)) {
                *exit_refused = env.load_reason(e, log);
                *try_latency = false;
            }
        return std::nullopt;
    }

    static bool attach_once(const TargetDef& t, AttachEnv& env, bool latency, std::string* why) {
        LibbpfCapture cap;
        SkelGuard<hl_fentry_bpf> s(hl_fentry_bpf::open());
        if (!s) {
            *why = errname(errno) + " at open";
            return false;
        }
        s->rodata->hl_latency = latency;
        std::uint32_t slot = 0;
        if (auto e = env.direct_slot(t.name, &slot); e || (e = share_hits(s.get(), env.hits_fd, slot))) {
            *why = *e;
            return false;
        }
        bool tracking = configure_tracking(s.get(), t, env.opts, false);
        std::string entry_name = entry_program(t, tracking);
        bpf_program* entry = bpf_object__find_program_by_name(s->obj, entry_name.c_str());
        bpf_program* p;
        bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, p == entry);
        bpf_program__set_attach_target(entry, 0, t.name.c_str());
        bpf_program__set_attach_target(s->progs.hl_fexit, 0, t.name.c_str());
        bpf_program__set_autoload(s->progs.hl_fexit, latency);
        if (int err = hl_fentry_bpf::load(s.get())) {
            *why = env.load_reason(err, cap.tail(8));
            return false;
        }
        bpf_program* fexit = s->progs.hl_fexit;
        auto obj = s.release();
        // Exit before entry: an entry that runs while its exit is not yet attached
        // leaves a timestamp on the per-CPU latency stack for good.
        for (bpf_program* prog : {latency ? fexit : nullptr, entry}) {
            if (!prog) continue;
            bpf_link* l = bpf_program__attach(prog);
            if (!l) {
                int err = -errno;
                *why = env.load_reason(err, cap.tail(8));
                return false;
            }
            obj->own_link(l);
        }
        Attached a{std::move(obj), t.name, Mechanism::kFentry, {entry_name}, tracking, t.object_type, slot, {}, {}};
        if (latency) a.programs.push_back("hl_fexit");
        env.attached.push_back(std::move(a));
        return true;
    }
};

}  // namespace

std::unique_ptr<MechanismAttach> make_fentry_attach() { return std::make_unique<FentryAttach>(); }

}  // namespace hotline
