// SPDX-License-Identifier: Apache-2.0
// The live session: orchestrates target resolution, planning with real attach
// attempts (one MechanismAttach per mechanism), the objects every plan needs
// besides, and reading the counters.
#include "hotline/base/log.hpp"
#include "hotline/base/util.hpp"
#include "hotline/probe/session.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <optional>

#include "attach.hpp"
#include "attach_windows.hpp"
#include "counter_readers.hpp"
#include "hotline/kernel/btf_layout.hpp"
#include "hotline/probe/prog_stats.hpp"
#include "hotline/probe/run_stats_window.hpp"
#include "startup_heap.hpp"
#include "workq.skel.h"

namespace hotline {

Result<std::vector<TargetDef>> resolve_targets(const std::vector<std::string>& names,
                                               const std::vector<std::string>& funcs) {
    std::vector<TargetDef> out;
    if (names.empty() && funcs.empty()) return builtin_targets();
    for (auto& n : names) {
        const TargetDef* t = find_target(n);
        if (!t) return make_error(unknown_name_message("target", n, builtin_target_names()), EINVAL,
                                  "valid targets: " + builtin_target_names());
        bool dup = false;
        for (auto& o : out) dup |= o.name == n;
        if (!dup) out.push_back(*t);
    }
    for (auto& f : funcs) {
        auto t = parse_func_spec(f);
        if (!t) return t.error();
        for (auto& o : out)
            if (o.name == t->name)
                return make_error("target " + t->name + " given twice", EINVAL,
                                  "name it once, either in --targets or in --func");
        out.push_back(*t);
    }
    return out;
}

Status check_session_options(const SessionOptions& opts) {
    if (opts.handoff_sample < 1)
        return make_error("--handoff-sample must be 1 or more", EINVAL, "use 1 (every object) or N > 1 (one object in N)");
    if (opts.owner_capacity < 16 || opts.owner_capacity > (1u << 22))
        return make_error(fmt::format("bad owner map size {}", opts.owner_capacity), EINVAL, "use 16..4194304");
    if (opts.sample_freq <= 0 || opts.sample_freq > 100000)
        return make_error(fmt::format("bad sampling frequency {} Hz", opts.sample_freq), EINVAL, "use 1..100000");
    if (opts.duty_percent < 1 || opts.duty_percent > 100)
        return make_error(fmt::format("bad duty cycle {}%", opts.duty_percent), EINVAL,
                          "use 1..100 (the percent of the time the programs are attached)");
    if (opts.track_percent < 1 || opts.track_percent > 100)
        return make_error(fmt::format("bad tracking share {}%", opts.track_percent), EINVAL,
                          "use 1..100 (the percent of the time handoffs are tracked)");
    if (opts.duty_period < kMinDutyPeriod || opts.duty_period > kMaxDutyPeriod)
        return make_error(fmt::format("bad window period {} ms", opts.duty_period.count()), EINVAL,
                          fmt::format("use {}..{} s", kMinDutyPeriod.count() / 1000, kMaxDutyPeriod.count() / 1000));
    if (opts.track_percent < 100 && opts.duty_percent < 100)
        return make_error("handoff tracking windows within attach windows", EINVAL,
                          "set either the duty cycle or the tracking share below 100, not both");
    return ok_status();
}

namespace {

bool has_layout(const TargetDef& t) { return !t.object_type.empty() && t.object_type != "object"; }

// Everything planning and the report need from BTF, taken at once: the parsed BTF
// is freed before libbpf parses its own copy for each object it loads.
struct BtfFacts {
    bool have_btf = false;
    std::map<std::string, int> func_ids;
    std::vector<std::pair<std::string, Result<LineLayout>>> layouts;  // by object type
    std::map<std::string, std::string> finding_types;                 // by target: the finding's member type
};

// Custom targets: the tracked argument's type comes from BTF.
Status type_custom_targets(const KernelBtf* btf, std::vector<TargetDef>& targets) {
    for (auto& t : targets) {
        if (!t.custom || t.object == ObjectKind::kNone) continue;
        t.object_type = func_arg_struct(btf ? btf->raw() : nullptr, t.name, t.object_arg);
        if (!t.object_type.empty()) continue;
        if (btf && btf->has_func(t.name))
            return make_error(fmt::format("--func {}:arg{}: argument {} is not a pointer to a struct", t.name,
                                          t.object_arg, t.object_arg),
                              EINVAL, "pick the argument that points to the shared object");
        t.object_type = "object";
    }
    return ok_status();
}

Result<BtfFacts> take_btf_facts(const KernelInfo& kernel, std::vector<TargetDef>& targets) {
    std::unique_ptr<KernelBtf> btf;
    if (kernel.btf)
        if (auto b = KernelBtf::load()) btf = std::make_unique<KernelBtf>(std::move(*b));
    if (auto st = type_custom_targets(btf.get(), targets); !st) return st.error();
    BtfFacts f;
    f.have_btf = btf != nullptr;
    std::vector<std::string> names;
    for (auto& t : targets) names.push_back(t.name);
    if (btf) f.func_ids = btf->func_ids(names);
    for (auto& t : targets) {
        if (t.finding) f.finding_types[t.name] = btf ? btf->member_type(t.finding->btf_struct, t.finding->btf_member) : "";
        if (!has_layout(t)) continue;
        bool seen = false;
        for (auto& l : f.layouts) seen |= l.first == t.object_type;
        if (!seen) f.layouts.emplace_back(t.object_type, object_layout(btf ? btf->raw() : nullptr, t.object_type));
    }
    return f;
}

PlanFacts plan_facts(const KernelInfo& kernel, bool have_btf) {
    PlanFacts facts;
    facts.btf = have_btf;
    facts.kprobes = kernel.kprobes;
    facts.lockdown = kernel.lockdown;
    facts.can_bpf = kernel.caps.can_bpf();
    facts.can_perfmon = kernel.caps.can_perfmon();
    return facts;
}

// The planner's seam to the kernel: facts from BTF and kallsyms, attempts through
// the mechanism's attach implementation.
class RealAttacher final : public Attacher {
public:
    RealAttacher(const KernelInfo& k, const Topology& topo, const std::map<std::string, int>& func_ids,
                 BackgroundKallsyms& ksyms, const SessionOptions& opts, int hits_fd, WorkqMaps workq)
        : env_(k, topo, opts, func_ids, ksyms, hits_fd),
          mechanisms_{make_fentry_attach(), make_kprobe_attach(), make_proxy_attach(), make_sampling_attach()} {
        env_.workq = workq;
    }

    FunctionFacts function_facts(const TargetDef& t) override {
        FunctionFacts f;
        f.in_btf = env_.func_id(t.name) > 0;
        f.kallsyms_known = false;
        return f;
    }
    bool kallsyms_pending() override { return env_.ksyms.pending(); }
    void kallsyms_facts(const TargetDef& t, FunctionFacts& f) override {
        const Kallsyms* ks = env_.ksyms.get().get();
        f.in_kallsyms = ks && ks->contains(t.name);
        f.has_range = ks && ks->range(t.name).has_value();
    }
    AttachOutcome attach(const TargetDef& t, Mechanism m) override {
        auto i = static_cast<std::size_t>(m);
        if (i >= mechanisms_.size()) return refused("not a mechanism");
        return mechanisms_[i]->attach(t, env_);
    }

    std::vector<Attached> take_attached() { return std::move(env_.attached); }
    const std::vector<SampledTarget>& sampled() const { return env_.sampled; }
    bool workq_queue_side_taken() const { return env_.workq.queue_side_taken; }

private:
    AttachEnv env_;
    // Indexed by Mechanism, in kMechanismOrder.
    std::array<std::unique_ptr<MechanismAttach>, 4> mechanisms_;
};

using WorkqSkeleton = SkelGuard<hl_workq_bpf>;

// Opened and loaded, not attached: nothing of it runs until attach_workq_object.
Result<std::unique_ptr<WorkqSkeleton>> load_workq() {
    LibbpfCapture cap;
    auto s = std::make_unique<WorkqSkeleton>(hl_workq_bpf::open());
    if (!*s) return make_error("workqueue attribution: open", errno);
    (*s)->rodata->hl_nr_cpus = std::uint32_t(libbpf_num_possible_cpus());
    if (int err = hl_workq_bpf::load(s->get())) {
        Error e = make_error("workqueue attribution: load", err);
        e.detail = cap.tail(6);
        return e;
    }
    return s;
}

// queue_side_in_proxy: the queue_work_on proxy's program does hl_wq_queue's work.
Result<std::unique_ptr<LoadedObject>> attach_workq_object(WorkqSkeleton& s, bool queue_side_in_proxy) {
    bpf_program* queue = s->progs.hl_wq_queue;
    auto obj = s.release();
    bpf_program* p;
    bpf_object__for_each_program(p, obj->obj()) {
        if (p == queue && queue_side_in_proxy) continue;
        if (!obj->attach_link(bpf_program__name(p), [p] { return bpf_program__attach(p); }))
            return make_error(fmt::format("workqueue attribution: attach of {}", bpf_program__name(p)), errno);
    }
    return obj;
}

WorkqMaps workq_maps(const WorkqSkeleton& s) {
    return {bpf_map__fd(s->maps.workq), bpf_map__fd(s->maps.work_funcs), bpf_map__fd(s->maps.queued_at)};
}

class SessionImpl final : public Session {
public:
    SessionImpl(const SessionOptions& opts, const Topology& topo)
        : opts_(opts), topo_(topo), reader_(topo_, opts.handoff_sample) {}
    ~SessionImpl() override {
        stats_window_.reset();  // its thread reads the programs' run counts and windows_' attached time
        windows_.reset();       // its thread attaches and detaches the links
        track_windows_.reset();
        workq_.reset();
        workq_loaded_.reset();
        sampling_.reset();
        attached_.clear();
        if (hits_fd_ >= 0) close(hits_fd_);
        if (stats_fd_ >= 0) close(stats_fd_);
    }

    const Plan& plan() const override { return plan_; }
    const SessionInfo& info() const override { return info_; }
    const Kallsyms* kallsyms() const override { return ksyms_.get(); }

    Status plan_and_attach(const std::vector<TargetDef>& targets, const KernelInfo& kernel, const BtfFacts& btf,
                           BackgroundKallsyms& ksyms);
    void describe_layouts(const std::vector<TargetDef>& targets, const BtfFacts& btf);
    void load_workq_early(const std::vector<TargetDef>& targets);
    void attach_workq(const std::vector<TargetDef>& targets);
    void finish(const std::vector<TargetDef>& targets, const BtfFacts& btf, BackgroundKallsyms& ksyms);
    void start_run_stats();
    void start_windows();
    void start_track_windows();
    Result<Snapshot> read() const override;

private:
    // Every program of the session with the target its cost is reported under.
    template <class Fn>
    void for_each_program(Fn&& fn) const;
    std::vector<ProgCost> read_cost() const;

    // Planned targets of the registry that are observable, in plan order.
    std::vector<const TargetDef*> observable(const std::vector<TargetDef>& targets) const;

    SessionOptions opts_;
    Topology topo_;
    CounterReader reader_;
    Plan plan_;
    SessionInfo info_;
    std::unique_ptr<Kallsyms> ksyms_;
    std::vector<Attached> attached_;
    std::vector<SampledTarget> sampled_;
    std::unique_ptr<LoadedObject> sampling_;
    std::unique_ptr<LoadedObject> workq_;
    // Loaded before planning, attached after it when a planned target wants it.
    std::optional<Result<std::unique_ptr<WorkqSkeleton>>> workq_loaded_;
    bool workq_queue_in_proxy_ = false;  // hl_wq_queue's work is done by the queue_work_on proxy
    mutable std::mutex read_mu_;  // one read() at a time
    int stats_fd_ = -1;  // time_every_run
    std::unique_ptr<RunStatsWindow::Member> stats_window_;  // otherwise
    mutable std::optional<RunCostScaler> cost_scaler_;
    int hits_fd_ = -1;  // the `hits` map every attached object shares
    double opened_at_ = monotonic_seconds();
    std::unique_ptr<AttachWindows> windows_;  // with SessionOptions::duty_percent < 100
    std::unique_ptr<AttachWindows> track_windows_;  // with SessionOptions::track_percent < 100
};

Status SessionImpl::plan_and_attach(const std::vector<TargetDef>& targets, const KernelInfo& kernel,
                                    const BtfFacts& btf, BackgroundKallsyms& ksyms) {
    // One per-CPU hit-counter map for all targets: counting a rare target then
    // writes a cache line that the busy ones keep warm.
    hits_fd_ = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "hits", sizeof(std::uint32_t), sizeof(hl_hits), 1, nullptr);
    if (hits_fd_ < 0) return make_error("creating the hit-counter map", errno);
    // The queue_work_on proxy does the attribution's queue side in the workqueue
    // object's maps when that object is loaded (it is only when attribution is on).
    WorkqMaps workq = workq_loaded_ && *workq_loaded_ ? workq_maps(***workq_loaded_) : WorkqMaps{};
    RealAttacher attacher(kernel, topo_, btf.func_ids, ksyms, opts_, hits_fd_, workq);
    PlanOptions po;
    po.forced = opts_.forced;
    po.absent_is_error = !opts_.targets.empty() || !opts_.funcs.empty();
    auto plan = make_plan(targets, plan_facts(kernel, btf.have_btf), attacher, po);
    attached_ = attacher.take_attached();
    workq_queue_in_proxy_ = attacher.workq_queue_side_taken();
    if (!plan) return plan.error();  // attached_ is torn down with the session
    plan_ = std::move(*plan);
    sampled_ = attacher.sampled();
    if (sampled_.empty()) return ok_status();
    auto obj = hotline::start_sampling(sampled_, topo_, opts_.sample_freq);
    if (obj) {
        sampling_ = std::move(*obj);
        return ok_status();
    }
    if (opts_.forced) return obj.error();
    for (auto& tp : plan_.targets) {
        if (tp.mechanism != Mechanism::kSampling) continue;
        tp.rejected.push_back({Mechanism::kSampling, obj.error().message()});
        tp.mechanism = Mechanism::kUnavailable;
        tp.fidelity = Fidelity::kNone;
        tp.unavailable_reason = "no mechanism could attach";
    }
    sampled_.clear();
    return ok_status();
}

std::vector<const TargetDef*> SessionImpl::observable(const std::vector<TargetDef>& targets) const {
    std::vector<const TargetDef*> out;
    for (auto& t : targets)
        if (const TargetPlan* tp = plan_.find(t.name); tp && tp->observable()) out.push_back(&t);
    return out;
}

// Layouts of the object types watched, in target order.
void SessionImpl::describe_layouts(const std::vector<TargetDef>& targets, const BtfFacts& btf) {
    std::vector<std::string> types;
    for (const TargetDef* t : observable(targets))
        if (has_layout(*t) && std::find(types.begin(), types.end(), t->object_type) == types.end())
            types.push_back(t->object_type);
    for (auto& ty : types)
        for (auto& [name, l] : btf.layouts) {
            if (name != ty) continue;
            if (l) info_.layouts.push_back(l.value());
            else info_.notes.push_back("layout of " + ty + ": " + l.error().message());
        }
}

// The workqueue object does not depend on the plan, only whether it is attached
// does: loading it before planning puts its load (a vmlinux BTF parse and the
// verifier) in the time the planner would otherwise wait for the kallsyms table.
void SessionImpl::load_workq_early(const std::vector<TargetDef>& targets) {
    bool may_want = false;
    for (auto& t : targets) may_want |= t.workqueue_attribution;
    if (may_want && opts_.workq) workq_loaded_ = load_workq();
}

void SessionImpl::attach_workq(const std::vector<TargetDef>& targets) {
    bool wanted = false;
    for (const TargetDef* t : observable(targets)) wanted |= t->workqueue_attribution;
    auto loaded = std::move(workq_loaded_);
    workq_loaded_.reset();
    if (!wanted) return;  // a loaded object is freed unattached
    if (!opts_.workq) {
        info_.workq = "off (--no-workq)";
        return;
    }
    if (!loaded) loaded = load_workq();
    auto obj = *loaded ? attach_workq_object(***loaded, workq_queue_in_proxy_)
                       : Result<std::unique_ptr<LoadedObject>>(loaded->error());
    if (!obj) {
        info_.workq = obj.error().message();
    } else {
        workq_ = std::move(*obj);
        info_.workq = workq_queue_in_proxy_ ? "attached: tp_btf workqueue_queue_work (in the queue_work_on proxy's "
                                              "program), workqueue_execute_start, irq_handler_entry"
                                            : "attached: tp_btf workqueue_queue_work, workqueue_execute_start, "
                                              "irq_handler_entry";
    }
}

// Symbols are needed from the first read on (work functions, owners); nothing
// before this point needed them unless the plan did.
void SessionImpl::finish(const std::vector<TargetDef>& targets, const BtfFacts& btf, BackgroundKallsyms& ksyms) {
    ksyms_ = std::move(ksyms.get());
    reader_.set_kallsyms(ksyms_.get());
    for (const TargetDef* t : observable(targets)) {
        if (!t->finding) continue;
        auto it = btf.finding_types.find(t->name);
        std::string text = t->finding->describe(it == btf.finding_types.end() ? "" : it->second,
                                                ksyms_ && ksyms_->contains(t->finding->symbol));
        info_.random_mix += (info_.random_mix.empty() ? "" : "\n") + text;
    }
}

template <class Fn>
void SessionImpl::for_each_program(Fn&& fn) const {
    for (auto& a : attached_)
        for (auto& pname : a.programs) fn(*a.obj, a.target, pname);
    if (workq_) {
        if (!workq_queue_in_proxy_) fn(*workq_, "(workqueue)", "hl_wq_queue");
        for (const char* p : {"hl_wq_execute", "hl_wq_irq"}) fn(*workq_, "(workqueue)", p);
    }
    if (sampling_) fn(*sampling_, "(sampling)", "hl_sample");
}

std::vector<ProgCost> SessionImpl::read_cost() const {
    std::vector<ProgCost> cost;
    auto read_counts = [&] {
        for_each_program([&](const LoadedObject& o, const std::string& target, const std::string& prog) {
            cost.push_back(prog_cost(o.obj(), target, prog));
        });
    };
    if (cost_scaler_) cost_scaler_->read_scaled(*stats_window_, cost, read_counts);
    else read_counts();
    return cost;
}

// Run statistics of our own programs (the cost report), from here on: the
// programs are all attached, so the window's check for someone else's
// statistics sees every one of them.  After start_windows: the window times
// runs by the programs' attached time.
void SessionImpl::start_run_stats() {
    if (opts_.time_every_run) {
        stats_fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);
        return;
    }
    auto runs = [this] {
        std::uint64_t runs = 0;
        for_each_program([&](const LoadedObject& o, const std::string&, const std::string& prog) {
            if (auto st = prog_run_stats(o.obj(), prog.c_str())) runs += st->run_cnt;
        });
        return runs;
    };
    AttachedClock attached;  // unset: attached throughout
    if (windows_) attached = [w = windows_.get()] { return w->watched_ns(); };
    stats_window_ = RunStatsWindow::join(runs, attached);
    cost_scaler_.emplace(*stats_window_);
}

// Every value of an array map zeroed (per-CPU ones on every CPU); false when a
// write failed.
bool zero_array_map(int fd) {
    bpf_map_info info{};
    std::uint32_t len = sizeof info;
    if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) return false;
    const bool per_cpu = info.type == BPF_MAP_TYPE_PERCPU_ARRAY;
    const std::size_t value = per_cpu ? ((info.value_size + 7) / 8 * 8) * std::size_t(libbpf_num_possible_cpus())
                                      : info.value_size;
    std::vector<std::uint8_t> zeros(value, 0);
    bool ok = true;
    for (std::uint32_t key = 0; key < info.max_entries; ++key)
        ok &= bpf_map_update_elem(fd, &key, zeros.data(), BPF_ANY) == 0;
    return ok;
}

// Attach windows, once everything is attached.  A tracing program's link cannot
// be made again reliably (AttachWindows): a session with one stays attached
// throughout, and says so.
void SessionImpl::start_windows() {
    if (opts_.duty_percent >= 100) return;
    std::vector<OwnedLink*> links;
    auto take = [&links](LoadedObject& o) {
        for (OwnedLink& l : o.links()) links.push_back(&l);
    };
    for (auto& a : attached_) {
        if (a.mech == Mechanism::kFentry) {
            info_.notes.push_back(fmt::format("attached throughout, not {}% of the time: {} is watched by fentry, "
                                              "whose programs cannot be detached and attached again reliably",
                                              opts_.duty_percent, a.target));
            return;
        }
        take(*a.obj);
    }
    if (workq_) take(*workq_);
    if (sampling_) take(*sampling_);
    // Entries whose exit fell in a window off, work queued whose execute did:
    // cleared, or the next window would time them across the gap.
    std::vector<int> pairing;
    for (auto& a : attached_) pairing.push_back(a.obj->map_fd("lat_stack"));
    if (workq_) pairing.push_back(workq_->map_fd("queued_at"));
    std::erase(pairing, -1);
    windows_ = std::make_unique<AttachWindows>(
        std::move(links),
        DutyCycle{.percent = opts_.duty_percent, .period = opts_.duty_period, .phase = opts_.duty_phase},
        [pairing] {
            for (int fd : pairing) zero_array_map(fd);
        });
}

// The tracking gate (handoff.bpf.h) of every object that tracks handoffs.
void set_track_gates(const std::vector<int>& gates, std::uint32_t value) {
    const std::uint32_t key = 0;
    for (int fd : gates)
        if (bpf_map_update_elem(fd, &key, &value, BPF_ANY))
            log_at(LogLevel::kWarn, "setting a handoff tracking gate: {}", errname(errno));
}

// Handoff tracking in windows, the programs attached throughout: each window
// opens a new generation, so that no handoff pairs a touch from before a
// window off with one after it.
void SessionImpl::start_track_windows() {
    if (opts_.track_percent >= 100) return;
    std::vector<int> gates;
    for (auto& a : attached_)
        if (int fd = a.handoffs ? a.obj->map_fd("track_gate") : -1; fd >= 0) gates.push_back(fd);
    if (gates.empty()) return;
    auto gen = std::make_shared<std::uint32_t>(0);  // the gates' value until the first window closes
    track_windows_ = std::make_unique<AttachWindows>(
        std::vector<OwnedLink*>{},
        DutyCycle{.percent = opts_.track_percent, .period = opts_.duty_period, .phase = opts_.duty_phase},
        [gates, gen] {
            *gen = (*gen + 1) & HL_GEN_MASK;
            set_track_gates(gates, *gen);
        },
        [gates] { set_track_gates(gates, HL_TRACK_OFF); });
}

Result<Snapshot> SessionImpl::read() const {
    // `serve` reads from concurrent scrape threads: the object ids and the
    // owner-table mappings made on first read are shared state.
    std::lock_guard<std::mutex> g(read_mu_);
    Snapshot s;
    s.t = monotonic_seconds();
    s.attached_s = windows_ ? windows_->watched_seconds() : s.t - opened_at_;
    s.duty_percent = windows_ ? opts_.duty_percent : 100;
    s.tracking_s = track_windows_ ? track_windows_->watched_seconds() : s.attached_s;
    s.track_percent = track_windows_ ? opts_.track_percent : 100;
    s.duty_period_s = windows_ || track_windows_ ? std::chrono::duration<double>(opts_.duty_period).count() : 0;
    std::vector<hl_hits> hits;
    if (!attached_.empty()) {
        auto h = reader_.read_hits(hits_fd_);
        if (!h) return h.error();
        hits = std::move(*h);
    }
    for (auto& a : attached_)
        if (auto st = reader_.read_target(a, hits, plan_.find(a.target), s); !st) return st.error();
    if (workq_) {
        if (auto st = reader_.read_workq(*workq_, s); !st) return st.error();
    }
    if (sampling_) {
        if (auto st = reader_.read_sampling(*sampling_, sampled_, s); !st) return st.error();
    }
    s.cost = read_cost();
    // Keep the plan's target order.
    std::vector<TargetCounters> ordered;
    for (auto& tp : plan_.targets)
        for (auto& c : s.targets)
            if (c.target == tp.target) ordered.push_back(std::move(c));
    s.targets = std::move(ordered);
    return s;
}

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const SessionOptions& opts, const KernelInfo& kernel,
                                               const Topology& topo) {
    install_libbpf_logger();
    if (auto st = check_privileges(kernel); !st) return st.error();
    auto targets = opts.watch_targets ? resolve_targets(opts.targets, opts.funcs)
                                      : Result<std::vector<TargetDef>>(std::vector<TargetDef>{});
    if (!targets) return targets.error();
    if (auto st = check_session_options(opts); !st) return st.error();

    StartupHeap heap;
    BackgroundKallsyms ksyms;
    auto btf = take_btf_facts(kernel, *targets);
    if (!btf) return btf.error();
    auto impl = std::make_unique<SessionImpl>(opts, topo);
    impl->load_workq_early(*targets);
    if (auto st = impl->plan_and_attach(*targets, kernel, *btf, ksyms); !st) return st.error();
    impl->describe_layouts(*targets, *btf);
    impl->attach_workq(*targets);
    impl->finish(*targets, *btf, ksyms);
    impl->start_windows();
    impl->start_run_stats();
    impl->start_track_windows();
    return std::unique_ptr<Session>(std::move(impl));
}

}  // namespace hotline
