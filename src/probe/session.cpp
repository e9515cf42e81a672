// The live session: real attach attempts for the planner, ownership of every
// loaded object, and reading per-CPU counters and program run statistics.
#include "hotline/session.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <fmt/format.h>
#include <map>

#include "empty.skel.h"
#include "fentry.skel.h"
#include "kprobe.skel.h"
#include "probe/skeleton.hpp"
#include "proxy.skel.h"
#include "sample.skel.h"

namespace hotline {

// ---------------------------------------------------------------- libbpf logs
namespace {
thread_local LibbpfCapture* g_capture = nullptr;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
    if (g_capture) {
        char buf[2048];
        va_list cp;
        va_copy(cp, ap);
        vsnprintf(buf, sizeof buf, fmt, cp);
        va_end(cp);
        g_capture->append(buf);
        return 0;
    }
    if (level == LIBBPF_DEBUG || !std::getenv("HOTLINE_LIBBPF_DEBUG")) return 0;
    return vfprintf(stderr, fmt, ap);
}
}  // namespace

void install_libbpf_logger() {
    static bool done = false;
    if (!done) {
        libbpf_set_print(libbpf_print);
        done = true;
    }
}

LibbpfCapture::LibbpfCapture() : prev_(g_capture) {
    install_libbpf_logger();
    g_capture = this;
}
LibbpfCapture::~LibbpfCapture() { g_capture = prev_; }

std::string LibbpfCapture::tail(int n) const {
    std::size_t pos = text_.size();
    while (pos > 0 && (text_[pos - 1] == '\n')) --pos;
    int lines = 0;
    std::size_t i = pos;
    while (i > 0) {
        if (text_[i - 1] == '\n' && ++lines == n) break;
        --i;
    }
    return text_.substr(i, pos - i);
}

double monotonic_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

Status check_privileges(const KernelInfo& k) {
    if (!k.caps.can_bpf())
        return make_error("hotline needs CAP_BPF (or CAP_SYS_ADMIN) to load BPF programs", EPERM,
                          "run as root, or grant CAP_BPF and CAP_PERFMON: "
                          "setcap cap_bpf,cap_perfmon+ep hotline");
    if (!k.caps.can_perfmon())
        return make_error("hotline needs CAP_PERFMON (or CAP_SYS_ADMIN) to attach tracing programs",
                          EPERM, "run as root, or grant CAP_PERFMON");
    return ok_status();
}

Result<std::vector<TargetDef>> resolve_targets(const std::vector<std::string>& names) {
    std::vector<TargetDef> out;
    if (names.empty()) return builtin_targets();
    for (auto& n : names) {
        const TargetDef* t = find_target(n);
        if (!t)
            return make_error("unknown target \"" + n + "\"", EINVAL,
                              "valid targets: " + builtin_target_names());
        bool dup = false;
        for (auto& o : out) dup |= o.name == n;
        if (!dup) out.push_back(*t);
    }
    return out;
}

// ------------------------------------------------------------- attach attempts
namespace {

std::string errname(int err) {
    err = err < 0 ? -err : err;
    const char* n = strerrorname_np(err);
    return n ? n : fmt::format("errno {}", err);
}

struct Attached {
    std::unique_ptr<LoadedObject> obj;
    std::string target;
    Mechanism mech;
    std::vector<std::string> programs;  // names whose run stats belong to this target
};

struct SampledTarget {
    std::string target;
    SymRange range;
};

class RealAttacher final : public Attacher {
public:
    RealAttacher(const KernelInfo& k, const Topology& topo, const KernelBtf* btf,
                 const Kallsyms* ksyms, const SessionOptions& opts)
        : k_(k), topo_(topo), btf_(btf), ksyms_(ksyms), opts_(opts) {}

    FunctionFacts function_facts(const TargetDef& t) override {
        FunctionFacts f;
        f.in_btf = btf_ && btf_->has_func(t.name);
        f.in_kallsyms = ksyms_ && ksyms_->contains(t.name);
        f.has_range = ksyms_ && ksyms_->range(t.name).has_value();
        return f;
    }

    AttachOutcome attach(const TargetDef& t, Mechanism m) override {
        switch (m) {
            case Mechanism::kFentry: return attach_fentry(t);
            case Mechanism::kKprobe: return attach_kprobe(t);
            case Mechanism::kTracepoint: return attach_proxy(t);
            case Mechanism::kSampling: return attach_sampling(t);
            case Mechanism::kUnavailable: break;
        }
        return {false, "", false, Fidelity::kNone, "not a mechanism"};
    }

    std::vector<Attached> take_attached() { return std::move(attached_); }
    const std::vector<SampledTarget>& sampled() const { return sampled_; }

private:
    std::string load_reason(int err, const LibbpfCapture& cap) const {
        std::string r = errname(err) + " at load";
        bool perm = err == -EPERM || err == EPERM;
        if (perm && k_.caps.can_bpf() && k_.caps.can_perfmon())
            r += fmt::format(" (privileges are held: the kernel refuses this program type; lockdown={})",
                             k_.lockdown);
        else if (perm)
            r += " (missing CAP_BPF/CAP_PERFMON?)";
        if (err == -EACCES || err == -EINVAL) {
            std::string tail = cap.tail(8);
            if (!tail.empty()) r += "; verifier/libbpf log tail:\n" + tail;
        }
        return r;
    }

    AttachOutcome attach_fentry(const TargetDef& t) {
        AttachOutcome out;
        std::string first_reason;
        for (bool latency : {opts_.latency, false}) {
            if (!latency && !opts_.latency && !first_reason.empty()) break;
            LibbpfCapture cap;
            SkelGuard<hl_fentry_bpf> s(hl_fentry_bpf::open());
            if (!s) return {false, "", false, Fidelity::kNone, errname(errno) + " at open"};
            s->rodata->hl_latency = latency;
            bpf_program__set_attach_target(s->progs.hl_fentry, 0, t.name.c_str());
            bpf_program__set_attach_target(s->progs.hl_fexit, 0, t.name.c_str());
            bpf_program__set_autoload(s->progs.hl_fexit, latency);
            int err = hl_fentry_bpf::load(s.get());
            // Exit before entry: an entry that runs while its exit is not yet attached
            // leaves a timestamp on the per-CPU latency stack for good.
            if (!err && latency && !(s->links.hl_fexit = bpf_program__attach(s->progs.hl_fexit))) err = -errno;
            if (!err && !(s->links.hl_fentry = bpf_program__attach(s->progs.hl_fentry))) err = -errno;
            if (err) {
                std::string why = load_reason(err, cap);
                if (first_reason.empty()) first_reason = why;
                if (!latency) break;
                continue;
            }
            Attached a{s.release(), t.name, Mechanism::kFentry, {"hl_fentry"}};
            if (latency) a.programs.push_back("hl_fexit");
            attached_.push_back(std::move(a));
            out.ok = true;
            out.latency = latency;
            out.fidelity = Fidelity::kExact;
            out.attach = latency ? "fentry+fexit " + t.name
                                 : "fentry " + t.name + (opts_.latency ? " (fexit refused: " + first_reason + ")" : "");
            return out;
        }
        out.reason = first_reason;
        return out;
    }

    AttachOutcome attach_kprobe(const TargetDef& t) {
        AttachOutcome out;
        LibbpfCapture cap;
        SkelGuard<hl_kprobe_bpf> s(hl_kprobe_bpf::open());
        if (!s) return {false, "", false, Fidelity::kNone, errname(errno) + " at open"};
        s->rodata->hl_latency = opts_.latency;
        bpf_program__set_autoload(s->progs.hl_kretprobe, opts_.latency);
        int err = hl_kprobe_bpf::load(s.get());
        if (err) return {false, "", false, Fidelity::kNone, load_reason(err, cap)};
        // Exit before entry, as for fentry: no entry may run without its exit attached.
        bool latency = opts_.latency;
        std::string note;
        if (latency) {
            s->links.hl_kretprobe =
                bpf_program__attach_kprobe(s->progs.hl_kretprobe, true, t.name.c_str());
            if (!s->links.hl_kretprobe) {
                latency = false;
                note = " (kretprobe refused: " + errname(errno) + ")";
            }
        }
        s->links.hl_kprobe = bpf_program__attach_kprobe(s->progs.hl_kprobe, false, t.name.c_str());
        if (!s->links.hl_kprobe)
            return {false, "", false, Fidelity::kNone, errname(errno) + " at attach of kprobe:" + t.name};
        Attached a{s.release(), t.name, Mechanism::kKprobe, {"hl_kprobe"}};
        if (latency) a.programs.push_back("hl_kretprobe");
        attached_.push_back(std::move(a));
        out.ok = true;
        out.latency = latency;
        out.fidelity = Fidelity::kExact;
        out.attach = (latency ? "kprobe+kretprobe " : "kprobe ") + t.name + note;
        return out;
    }

    AttachOutcome attach_proxy(const TargetDef& t) {
        AttachOutcome out;
        LibbpfCapture cap;
        SkelGuard<hl_proxy_bpf> s(hl_proxy_bpf::open());
        if (!s) return {false, "", false, Fidelity::kNone, errname(errno) + " at open"};
        std::vector<bpf_program*> progs;
        if (t.proxy == Proxy::kQueueWork) progs = {s->progs.hl_tp_queue_work};
        if (t.proxy == Proxy::kSkbFree) progs = {s->progs.hl_tp_consume_skb, s->progs.hl_tp_kfree_skb};
        bpf_program* p;
        bpf_object__for_each_program(p, s->obj) {
            bool want = false;
            for (auto* q : progs) want |= q == p;
            bpf_program__set_autoload(p, want);
        }
        int err = hl_proxy_bpf::load(s.get());
        if (err) return {false, "", false, Fidelity::kNone, "tp_btf: " + load_reason(err, cap)};
        Attached a{nullptr, t.name, Mechanism::kTracepoint, {}};
        for (auto* q : progs) {
            bpf_link* l = bpf_program__attach(q);
            if (!l)
                return {false, "", false, Fidelity::kNone,
                        fmt::format("tp_btf: {} at attach of {}", errname(errno), bpf_program__name(q))};
            if (q == s->progs.hl_tp_queue_work) s->links.hl_tp_queue_work = l;
            if (q == s->progs.hl_tp_consume_skb) s->links.hl_tp_consume_skb = l;
            if (q == s->progs.hl_tp_kfree_skb) s->links.hl_tp_kfree_skb = l;
            a.programs.push_back(bpf_program__name(q));
        }
        a.obj = s.release();
        attached_.push_back(std::move(a));
        out.ok = true;
        out.fidelity = t.proxy_fidelity;
        out.attach = t.proxy_desc;
        return out;
    }

    // Checks that sampling can work for this target; the one sampling object for
    // all sampled targets is loaded after planning (see SessionImpl::start_sampling).
    AttachOutcome attach_sampling(const TargetDef& t) {
        auto r = ksyms_->range(t.name);
        if (!r) return {false, "", false, Fidelity::kNone, "no address range in /proc/kallsyms"};
        if (sampled_.size() >= HL_MAX_SAMPLE_TARGETS)
            return {false, "", false, Fidelity::kNone,
                    fmt::format("more than {} sampled targets", HL_MAX_SAMPLE_TARGETS)};
        perf_event_attr attr{};
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_CPU_CLOCK;
        attr.freq = 1;
        attr.sample_freq = opts_.sample_freq;
        attr.disabled = 1;
        int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, topo_.cpus.front(), -1, 0));
        if (fd < 0)
            return {false, "", false, Fidelity::kNone,
                    "perf_event_open(cpu-clock): " + errname(errno) +
                        (errno == EACCES ? " (kernel.perf_event_paranoid?)" : "")};
        close(fd);
        sampled_.push_back({t.name, *r});
        AttachOutcome out;
        out.ok = true;
        out.fidelity = Fidelity::kSampled;
        out.attach = fmt::format("cpu-clock sampling at {} Hz/CPU, IP in {} ({} bytes)",
                                 opts_.sample_freq, t.name, r->end - r->start);
        return out;
    }

    const KernelInfo& k_;
    const Topology& topo_;
    const KernelBtf* btf_;
    const Kallsyms* ksyms_;
    const SessionOptions& opts_;
    std::vector<Attached> attached_;
    std::vector<SampledTarget> sampled_;
};

// ------------------------------------------------------------------- session
class SessionImpl final : public Session {
public:
    const Plan& plan() const override { return plan_; }

    Result<Snapshot> read() const override {
        Snapshot s;
        s.t = monotonic_seconds();
        int ncpu = libbpf_num_possible_cpus();
        std::size_t width = std::size_t(topo_.max_cpu() + 1);
        auto cpu_of = [&](int idx) { return idx < int(topo_.cpus.size()) ? topo_.cpus[idx] : idx; };
        for (auto& a : attached_) {
            const TargetPlan* tp = plan_.find(a.target);
            TargetCounters c;
            c.target = a.target;
            c.mechanism = a.mech;
            c.fidelity = tp ? tp->fidelity : Fidelity::kNone;
            c.has_latency = tp && tp->latency;
            c.calls.assign(width, 0);
            c.events.assign(width, 0);
            std::vector<hl_counts> vals(ncpu);
            std::uint32_t key = 0;
            if (bpf_map_lookup_elem(a.obj->map_fd("counts"), &key, vals.data()))
                return make_error("reading counters of " + a.target, errno);
            for (int i = 0; i < ncpu; ++i) {
                int cpu = cpu_of(i);
                if (cpu >= int(width)) continue;
                c.calls[cpu] = vals[i].calls;
                c.events[cpu] = vals[i].events;
                c.lat_count += vals[i].lat_count;
                c.lat_sum_ns += vals[i].lat_sum_ns;
                c.lat_lost += vals[i].lat_lost;
                for (int b = 0; b < HL_HIST_SLOTS; ++b) c.hist[b] += vals[i].hist[b];
            }
            s.targets.push_back(std::move(c));
            for (auto& pname : a.programs) s.cost.push_back(prog_cost(a.obj->obj(), a.target, pname));
        }
        if (sampling_) {
            std::vector<hl_sample_counts> vals(ncpu);
            std::uint32_t key = 0;
            if (bpf_map_lookup_elem(sampling_->map_fd("samples"), &key, vals.data()))
                return make_error("reading sampling counters", errno);
            s.samples_total.assign(width, 0);
            s.samples_kernel.assign(width, 0);
            for (int i = 0; i < ncpu; ++i) {
                int cpu = cpu_of(i);
                if (cpu >= int(width)) continue;
                s.samples_total[cpu] = vals[i].samples;
                s.samples_kernel[cpu] = vals[i].kernel_samples;
            }
            for (std::size_t k = 0; k < sampled_.size(); ++k) {
                TargetCounters c;
                c.target = sampled_[k].target;
                c.mechanism = Mechanism::kSampling;
                c.fidelity = Fidelity::kSampled;
                c.calls.assign(width, 0);
                c.events = s.samples_total;
                for (int i = 0; i < ncpu; ++i) {
                    int cpu = cpu_of(i);
                    if (cpu < int(width)) c.calls[cpu] = vals[i].hits[k];
                }
                s.targets.push_back(std::move(c));
            }
            s.cost.push_back(prog_cost(sampling_->obj(), "(sampling)", "hl_sample"));
        }
        // Keep the plan's target order.
        std::vector<TargetCounters> ordered;
        for (auto& tp : plan_.targets)
            for (auto& c : s.targets)
                if (c.target == tp.target) ordered.push_back(std::move(c));
        s.targets = std::move(ordered);
        return s;
    }

    static ProgCost prog_cost(bpf_object* obj, const std::string& target, const std::string& name) {
        ProgCost pc;
        pc.target = target;
        pc.program = name;
        bpf_program* p = bpf_object__find_program_by_name(obj, name.c_str());
        if (!p || bpf_program__fd(p) < 0) return pc;
        bpf_prog_info info{};
        std::uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0) {
            pc.run_cnt = info.run_cnt;
            pc.run_time_ns = info.run_time_ns;
            pc.recursion_misses = info.recursion_misses;
        }
        return pc;
    }

    Status start_sampling(const SessionOptions& opts) {
        LibbpfCapture cap;
        SkelGuard<hl_sample_bpf> s(hl_sample_bpf::open());
        if (!s) return make_error("sampling: open", errno);
        for (std::size_t i = 0; i < sampled_.size(); ++i) {
            s->rodata->hl_ranges[i].start = sampled_[i].range.start;
            s->rodata->hl_ranges[i].end = sampled_[i].range.end;
        }
        s->rodata->hl_nranges = static_cast<std::uint32_t>(sampled_.size());
        int err = hl_sample_bpf::load(s.get());
        if (err) {
            Error e = make_error("sampling: load of the perf_event program", err);
            e.detail = cap.tail(8);
            return e;
        }
        auto obj = s.release();
        bpf_program* prog = bpf_object__find_program_by_name(obj->obj(), "hl_sample");
        for (int cpu : topo_.cpus) {
            perf_event_attr attr{};
            attr.size = sizeof attr;
            attr.type = PERF_TYPE_SOFTWARE;
            attr.config = PERF_COUNT_SW_CPU_CLOCK;
            attr.freq = 1;
            attr.sample_freq = opts.sample_freq;
            int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
            if (fd < 0) {
                if (errno == ENODEV) continue;  // offline CPU
                return make_error(fmt::format("sampling: perf_event_open on CPU {}", cpu), errno);
            }
            bpf_link* l = bpf_program__attach_perf_event(prog, fd);
            if (!l) {
                int e = errno;
                close(fd);
                return make_error(fmt::format("sampling: attach on CPU {}", cpu), e);
            }
            obj->own_link(l);  // the link owns the perf event fd
        }
        sampling_ = std::move(obj);
        return ok_status();
    }

    Plan plan_;
    Topology topo_;
    std::vector<Attached> attached_;
    std::vector<SampledTarget> sampled_;
    std::unique_ptr<LoadedObject> sampling_;
    int stats_fd_ = -1;
    std::unique_ptr<KernelBtf> btf_;

    ~SessionImpl() override {
        sampling_.reset();
        attached_.clear();
        if (stats_fd_ >= 0) close(stats_fd_);
    }
};

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const SessionOptions& opts, const KernelInfo& kernel,
                                               const Topology& topo) {
    install_libbpf_logger();
    if (auto st = check_privileges(kernel); !st) return st.error();
    auto targets = resolve_targets(opts.targets);
    if (!targets) return targets.error();
    if (opts.sample_freq <= 0 || opts.sample_freq > 100000)
        return make_error(fmt::format("bad sampling frequency {} Hz", opts.sample_freq), EINVAL,
                          "use 1..100000");

    auto impl = std::make_unique<SessionImpl>();
    impl->topo_ = topo;
    std::unique_ptr<KernelBtf> btf;
    if (kernel.btf) {
        auto b = KernelBtf::load();
        if (b) btf = std::make_unique<KernelBtf>(std::move(*b));
    }
    auto ksyms = Kallsyms::load();
    const Kallsyms* kp = ksyms ? &*ksyms : nullptr;

    // Run statistics for our own programs (the cost report); closed with the session.
    impl->stats_fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);

    PlanFacts facts;
    facts.btf = btf != nullptr;
    facts.kprobes = kernel.kprobes;
    facts.lockdown = kernel.lockdown;
    facts.can_bpf = kernel.caps.can_bpf();
    facts.can_perfmon = kernel.caps.can_perfmon();
    RealAttacher attacher(kernel, impl->topo_, btf.get(), kp, opts);
    PlanOptions po;
    po.forced = opts.forced;
    auto plan = make_plan(*targets, facts, attacher, po);
    impl->attached_ = attacher.take_attached();
    if (!plan) return plan.error();  // attached_ is torn down with impl
    impl->plan_ = std::move(*plan);
    impl->sampled_ = attacher.sampled();
    if (!impl->sampled_.empty()) {
        if (auto st = impl->start_sampling(opts); !st) {
            if (opts.forced) return st.error();
            for (auto& tp : impl->plan_.targets) {
                if (tp.mechanism != Mechanism::kSampling) continue;
                tp.rejected.push_back({Mechanism::kSampling, st.error().message()});
                tp.mechanism = Mechanism::kUnavailable;
                tp.fidelity = Fidelity::kNone;
                tp.unavailable_reason = "no mechanism could attach";
            }
            impl->sampled_.clear();
        }
    }
    impl->btf_ = std::move(btf);
    return std::unique_ptr<Session>(std::move(impl));
}

}  // namespace hotline
