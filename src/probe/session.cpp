// The live session: real attach attempts for the planner, ownership of every
// loaded object, and reading per-CPU counters and program run statistics.
#include "hotline/session.hpp"
#include "hotline/btf_layout.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <fmt/format.h>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>

#include "empty.skel.h"
#include "fentry.skel.h"
#include "kprobe.skel.h"
#include "hotline/bpf_skeleton.hpp"
#include "proxy.skel.h"
#include "sample.skel.h"
#include "workq.skel.h"
#include <algorithm>

namespace hotline {

// ---------------------------------------------------------------- libbpf logs
namespace {
thread_local LibbpfCapture* g_capture = nullptr;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
    if (g_capture) {
        // Verifier logs arrive as one message of many kilobytes: format it whole.
        va_list cp;
        va_copy(cp, ap);
        char* buf = nullptr;
        if (vasprintf(&buf, fmt, cp) >= 0 && buf) {
            g_capture->append(buf);
            free(buf);
        }
        va_end(cp);
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

Result<std::vector<TargetDef>> resolve_targets(const std::vector<std::string>& names,
                                               const std::vector<std::string>& funcs) {
    std::vector<TargetDef> out;
    if (names.empty() && funcs.empty()) return builtin_targets();
    for (auto& n : names) {
        const TargetDef* t = find_target(n);
        if (!t)
            return make_error("unknown target \"" + n + "\"", EINVAL,
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

namespace {
// The finding from its two facts: the type of fast_pool.mix ("" without BTF) and
// whether the function is in kallsyms.
std::string random_mix_text(const std::string& mix, bool sym) {
    if (!sym && mix.empty())
        return "mix_interrupt_randomness is not in this kernel: add_interrupt_randomness mixes inline "
               "(before 5.18, or the path was changed): no queue_work_on from it";
    if (mix == "timer_list")
        return "mix_interrupt_randomness runs from a per-CPU timer on this kernel (fast_pool.mix is a "
               "timer_list: 748bc4dd9e66 is present): the interrupt path queues no work";
    if (mix == "work_struct")
        return "mix_interrupt_randomness is queued with queue_work_on from the interrupt path on this "
               "kernel (fast_pool.mix is a work_struct: 58340f8e952b without 748bc4dd9e66): "
               "see the work-function table";
    return "mix_interrupt_randomness is present; fast_pool.mix type unknown (" + (mix.empty() ? std::string("no BTF") : mix) + ")";
}
}  // namespace

std::string random_mix_finding(const KernelBtf* btf, const Kallsyms* ksyms) {
    return random_mix_text(btf ? btf->member_type("fast_pool", "mix") : "",
                           ksyms && ksyms->contains("mix_interrupt_randomness"));
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
    bool handoffs = false;
    std::string object_type;
    std::uint32_t slot = 0;  // index in the session's shared `hits` map
    // The owner table and its work functions, mapped on first read (both maps are
    // mmapable): a scan of the mapping replaces batch-lookup syscalls each interval.
    mutable std::shared_ptr<const void> owners_view, aux_view;
};

// A read-only shared mapping of an mmapable array map, unmapped with the last owner.
Result<std::shared_ptr<const void>> map_view(bpf_map* m, int fd) {
    std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::size_t bytes = std::size_t(bpf_map__value_size(m)) * bpf_map__max_entries(m);
    bytes = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return make_error(fmt::format("mapping the {} map", bpf_map__name(m)), errno);
    return std::shared_ptr<const void>(p, [bytes](const void* q) { munmap(const_cast<void*>(q), bytes); });
}

// Handoff tracking settings shared by the fentry, kprobe and proxy objects.
template <class S>
bool configure_tracking(S* s, const TargetDef& t, const SessionOptions& o, bool proxy) {
    bool on = o.handoffs && (proxy ? t.proxy != Proxy::kNone : t.object != ObjectKind::kNone);
    s->rodata->hl_obj_mode = !on ? HL_OBJ_NONE : t.object == ObjectKind::kSkbDst && !proxy ? HL_OBJ_SKB_DST : HL_OBJ_ARG;
    s->rodata->hl_obj_arg = t.object_arg < 0 ? 0 : std::uint32_t(t.object_arg);
    s->rodata->hl_obj_is_work = t.object_type == "work_struct";
    s->rodata->hl_handoff_sample = std::uint32_t(std::max(1, o.handoff_sample));
    s->rodata->hl_remote_arg = t.remote_cpu_arg < 0 ? 0xff : std::uint32_t(t.remote_cpu_arg);
    s->rodata->hl_nr_cpus = std::uint32_t(libbpf_num_possible_cpus());
    // A power-of-two number of 2-way sets covering at least the requested size.
    std::uint32_t cap = 2;
    while (cap < o.owner_capacity && cap < (1u << 22)) cap <<= 1;
    if (!on) cap = 2;
    s->rodata->hl_owner_sets = cap / 2;
    bpf_map__set_max_entries(s->maps.owners, cap);
    bpf_map__set_max_entries(s->maps.owner_aux, cap);
    return on;
}

struct SampledTarget {
    std::string target;
    SymRange range;
};

// Start-up parses vmlinux BTF here and again in libbpf for every object it loads,
// each time into ~11 MB of fresh buffers.  While a session opens, freed big buffers
// stay in the heap so that each parse reuses the pages the last one faulted in
// (page faults were a fifth of start-up CPU); then the heap is trimmed, as a
// session can run for days.  The thresholds set after keep per-interval buffers
// (owner-table batches of 128 KiB) in the heap, while one-off buffers of a MiB
// and more go back to the system when freed.
class StartupHeap {
public:
    StartupHeap() {
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
    }
    ~StartupHeap() {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        mallopt(M_TRIM_THRESHOLD, 2 << 20);
        malloc_trim(0);
    }
    StartupHeap(const StartupHeap&) = delete;
    StartupHeap& operator=(const StartupHeap&) = delete;
};

// /proc/kallsyms on a thread of its own: the kernel takes tens of milliseconds to
// format it, time in which vmlinux BTF is parsed and the first objects load.
class BackgroundKallsyms {
public:
    BackgroundKallsyms() {
        auto load = [] { return Kallsyms::load(); };
        try {
            pending_ = std::async(std::launch::async, load);
        } catch (const std::system_error&) {
            pending_ = std::async(std::launch::deferred, load);  // no thread: read it when asked
        }
    }
    // Still being read (a deferred load counts as ready: it runs when asked).
    bool pending() const {
        return pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::timeout;
    }
    // Waits for the table on first use; null when /proc/kallsyms could not be read.
    std::unique_ptr<Kallsyms>& get() {
        if (pending_.valid())
            if (auto r = pending_.get(); r) table_ = std::make_unique<Kallsyms>(std::move(*r));
        return table_;
    }

private:
    std::future<Result<Kallsyms>> pending_;
    std::unique_ptr<Kallsyms> table_;
};

class RealAttacher final : public Attacher {
public:
    // func_ids: each target's BTF function id (0: not a BTF function), taken before
    // the parsed BTF was freed.
    RealAttacher(const KernelInfo& k, const Topology& topo, const std::map<std::string, int>& func_ids,
                 BackgroundKallsyms& ksyms, const SessionOptions& opts, int hits_fd)
        : k_(k), topo_(topo), func_ids_(func_ids), ksyms_(ksyms), opts_(opts), hits_fd_(hits_fd) {}

    FunctionFacts function_facts(const TargetDef& t) override {
        FunctionFacts f;
        f.in_btf = func_id(t.name) > 0;
        f.kallsyms_known = false;
        return f;
    }

    bool kallsyms_pending() override { return ksyms_.pending(); }
    void kallsyms_facts(const TargetDef& t, FunctionFacts& f) override {
        const Kallsyms* ks = ksyms_.get().get();
        f.in_kallsyms = ks && ks->contains(t.name);
        f.has_range = ks && ks->range(t.name).has_value();
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
    // Points the object at the session's one `hits` map and gives the target its
    // slot there (the same slot on every attempt for the same target).
    // Proxies have fixed slots (HL_SLOT_*); *slot is set to the one used.
    template <class S>
    std::optional<std::string> share_hits(S* s, const std::string& target, std::uint32_t* slot) {
        if (*slot == kNoSlot) {
            auto it = slots_.find(target);
            if (it == slots_.end()) {
                if (HL_FIRST_SLOT + slots_.size() >= HL_MAX_TARGETS)
                    return fmt::format("more than {} directly probed targets in one session",
                                       HL_MAX_TARGETS - HL_FIRST_SLOT);
                it = slots_.emplace(target, std::uint32_t(HL_FIRST_SLOT + slots_.size())).first;
            }
            *slot = it->second;
        }
        s->rodata->hl_slot = *slot;
        if (int err = bpf_map__reuse_fd(s->maps.hits, hits_fd_))
            return "sharing the hit counters: " + errname(err);
        return std::nullopt;
    }
    static constexpr std::uint32_t kNoSlot = ~0u;

    std::string load_reason(int err, const LibbpfCapture& cap) const { return load_reason(err, cap.tail(8)); }
    std::string load_reason(int err, const std::string& log_tail) const {
        std::string r = errname(err) + " at load";
        bool perm = err == -EPERM || err == EPERM;
        if (perm && k_.caps.can_bpf() && k_.caps.can_perfmon())
            r += fmt::format(" (privileges are held: the kernel refuses this program type; lockdown={})",
                             k_.lockdown);
        else if (perm)
            r += " (missing CAP_BPF/CAP_PERFMON?)";
        if ((err == -EACCES || err == -EINVAL) && !log_tail.empty()) r += "; verifier/libbpf log tail:\n" + log_tail;
        return r;
    }

    AttachOutcome attach_fentry(const TargetDef& t) {
        AttachOutcome out;
        // Ask with a minimal program on the same function first: opening the object
        // parses vmlinux BTF and relocates every program, a slow way to hear "no".
        // The kernel refuses a program type or an attach target before it verifies
        // any code, so the minimal program hears the same refusal the real one would.
        bool try_latency = opts_.latency;
        std::string exit_refused;
        if (int id = func_id(t.name); id > 0) {
            std::string log;
            if (int e = probe_tracing_load(id, false, &log)) {
                out.reason = load_reason(e, log);
                return out;
            }
            if (try_latency)
                if (int e = probe_tracing_load(id, true, &log)) {
                    exit_refused = load_reason(e, log);
                    try_latency = false;
                }
        }
        std::string first_reason;
        for (bool latency : {try_latency, false}) {
            if (!latency && !try_latency && !first_reason.empty()) break;
            LibbpfCapture cap;
            SkelGuard<hl_fentry_bpf> s(hl_fentry_bpf::open());
            if (!s) return {false, "", false, Fidelity::kNone, errname(errno) + " at open"};
            s->rodata->hl_latency = latency;
            std::uint32_t slot = kNoSlot;
            if (auto why = share_hits(s.get(), t.name, &slot)) return {false, "", false, Fidelity::kNone, *why};
            bool tracking = configure_tracking(s.get(), t, opts_, false);
            bpf_program* entry = s->progs.hl_fentry;
            if (tracking) {
                bpf_program* by_arg[] = {s->progs.hl_fentry_a0, s->progs.hl_fentry_a1, s->progs.hl_fentry_a2,
                                         s->progs.hl_fentry_a3, s->progs.hl_fentry_a4};
                entry = by_arg[std::clamp(t.object_arg, 0, 4)];
                if (t.object_arg == 2 && t.remote_cpu_arg == 0) entry = s->progs.hl_fentry_a2_cpu0;
            }
            bpf_program* p;
            bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, false);
            bpf_program__set_autoload(entry, true);
            bpf_program__set_attach_target(entry, 0, t.name.c_str());
            bpf_program__set_attach_target(s->progs.hl_fexit, 0, t.name.c_str());
            bpf_program__set_autoload(s->progs.hl_fexit, latency);
            int err = hl_fentry_bpf::load(s.get());
            // Exit before entry: an entry that runs while its exit is not yet attached
            // leaves a timestamp on the per-CPU latency stack for good.
            if (!err && latency && !(s->links.hl_fexit = bpf_program__attach(s->progs.hl_fexit))) err = -errno;
            if (!err) {
                bpf_link* l = bpf_program__attach(entry);
                if (!l) err = -errno;
                // Keep the link in its skeleton slot so destroy frees it once.
                bpf_link** slots[] = {&s->links.hl_fentry,    &s->links.hl_fentry_a0, &s->links.hl_fentry_a1,
                                      &s->links.hl_fentry_a2, &s->links.hl_fentry_a3, &s->links.hl_fentry_a4,
                                      &s->links.hl_fentry_a2_cpu0};
                bpf_program* progs[] = {s->progs.hl_fentry,    s->progs.hl_fentry_a0, s->progs.hl_fentry_a1,
                                        s->progs.hl_fentry_a2, s->progs.hl_fentry_a3, s->progs.hl_fentry_a4,
                                        s->progs.hl_fentry_a2_cpu0};
                for (int i = 0; i < 7; ++i)
                    if (progs[i] == entry) *slots[i] = l;
            }
            if (err) {
                std::string why = load_reason(err, cap);
                if (first_reason.empty()) first_reason = why;
                if (!latency) break;
                continue;
            }
            std::string entry_name = bpf_program__name(entry);
            Attached a{s.release(), t.name, Mechanism::kFentry, {entry_name}, tracking, t.object_type, slot, {}, {}};
            if (latency) a.programs.push_back("hl_fexit");
            attached_.push_back(std::move(a));
            out.ok = true;
            out.latency = latency;
            out.fidelity = Fidelity::kExact;
            std::string exit_why = !exit_refused.empty() ? exit_refused : first_reason;
            out.attach = latency ? "fentry+fexit " + t.name
                                 : "fentry " + t.name + (opts_.latency ? " (fexit refused: " + exit_why + ")" : "");
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
        std::uint32_t slot = kNoSlot;
        if (auto why = share_hits(s.get(), t.name, &slot)) return {false, "", false, Fidelity::kNone, *why};
        bool tracking = configure_tracking(s.get(), t, opts_, false);
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
        Attached a{s.release(), t.name, Mechanism::kKprobe, {"hl_kprobe"}, tracking, t.object_type, slot, {}, {}};
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
        bool tracking = configure_tracking(s.get(), t, opts_, true);
        std::vector<bpf_program*> progs;
        std::uint32_t slot = kNoSlot;
        if (t.proxy == Proxy::kQueueWork) {
            progs = {tracking ? s->progs.hl_tp_queue_work_track : s->progs.hl_tp_queue_work};
            slot = HL_SLOT_QUEUE_WORK;
        }
        if (t.proxy == Proxy::kSkbFree) {
            progs = {tracking ? s->progs.hl_tp_consume_skb_track : s->progs.hl_tp_consume_skb,
                     tracking ? s->progs.hl_tp_kfree_skb_track : s->progs.hl_tp_kfree_skb};
            slot = HL_SLOT_SKB_FREE;
        }
        bpf_program* p;
        bpf_object__for_each_program(p, s->obj) {
            bool want = false;
            for (auto* q : progs) want |= q == p;
            bpf_program__set_autoload(p, want);
        }
        if (auto why = share_hits(s.get(), t.name, &slot)) return {false, "", false, Fidelity::kNone, *why};
        int err = hl_proxy_bpf::load(s.get());
        if (err) return {false, "", false, Fidelity::kNone, "tp_btf: " + load_reason(err, cap)};
        Attached a{nullptr, t.name, Mechanism::kTracepoint, {}, tracking, t.object_type, slot, {}, {}};
        for (auto* q : progs) {
            bpf_link* l = bpf_program__attach(q);
            if (!l)
                return {false, "", false, Fidelity::kNone,
                        fmt::format("tp_btf: {} at attach of {}", errname(errno), bpf_program__name(q))};
            if (q == s->progs.hl_tp_queue_work) s->links.hl_tp_queue_work = l;
            if (q == s->progs.hl_tp_consume_skb) s->links.hl_tp_consume_skb = l;
            if (q == s->progs.hl_tp_kfree_skb) s->links.hl_tp_kfree_skb = l;
            if (q == s->progs.hl_tp_queue_work_track) s->links.hl_tp_queue_work_track = l;
            if (q == s->progs.hl_tp_consume_skb_track) s->links.hl_tp_consume_skb_track = l;
            if (q == s->progs.hl_tp_kfree_skb_track) s->links.hl_tp_kfree_skb_track = l;
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
        const Kallsyms* ks = ksyms_.get().get();
        auto r = ks ? ks->range(t.name) : std::nullopt;
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

    int func_id(const std::string& name) const {
        auto it = func_ids_.find(name);
        return it == func_ids_.end() ? 0 : it->second;
    }

    const KernelInfo& k_;
    const Topology& topo_;
    const std::map<std::string, int>& func_ids_;
    BackgroundKallsyms& ksyms_;
    const SessionOptions& opts_;
    std::vector<Attached> attached_;
    std::vector<SampledTarget> sampled_;
    int hits_fd_;
    std::map<std::string, std::uint32_t> slots_;
};

// ------------------------------------------------------------------- session
class SessionImpl final : public Session {
public:
    const Plan& plan() const override { return plan_; }
    const SessionInfo& info() const override { return info_; }
    const Kallsyms* kallsyms() const override { return ksyms_; }

    // Stable per-session id of an object address; the address itself is never shown.
    std::uint64_t object_id(const std::string& target, std::uint64_t addr) const {
        auto [it, fresh] = ids_.try_emplace({target, addr}, next_id_);
        if (fresh) ++next_id_;
        return it->second;
    }

    Status read_handoffs(const Attached& a, TargetCounters& c, std::vector<HotObject>& objects, int ncpu,
                         std::size_t width) const {
        c.has_handoffs = true;
        c.object_type = a.object_type;
        auto& h = c.handoffs;
        size_per_cpu(h, kHandoffFields, width);
        int nn = std::min<int>(HL_MAX_NODES, topo_.nodes.empty() ? 1 : topo_.nodes.back() + 1);
        h.matrix.assign(std::size_t(nn), std::vector<std::uint64_t>(std::size_t(nn), 0));
        std::vector<hl_handoff_counts> vals(ncpu);
        std::uint32_t key = 0;
        if (bpf_map_lookup_elem(a.obj->map_fd("handoffs"), &key, vals.data()))
            return make_error("reading handoffs of " + a.target, errno);
        for (int i = 0; i < ncpu; ++i) {
            int cpu = i < int(topo_.cpus.size()) ? topo_.cpus[i] : i;
            if (cpu >= int(width)) continue;
            const auto& v = vals[i];
            add_cpu_value(h, kHandoffFields, AbiSource::kHandoffCounts, &v, cpu);
            int to = std::min(topo_.node_of(cpu), nn - 1);
            for (int f = 0; f < nn; ++f) h.matrix[f][to] += v.from_node[f];
        }
        // The owner table: every live object with its handoff counts, scanned in
        // its mapping.  Ways are written by BPF programs while this runs; a way is
        // read field by field, so a torn read can pair one object with another's
        // counts for one interval (the slot contents are best effort anyway).
        bpf_map* m = bpf_object__find_map_by_name(a.obj->obj(), "owners");
        bpf_map* mx = bpf_object__find_map_by_name(a.obj->obj(), "owner_aux");
        if (!m || !mx) return make_error("no owner table in the object of " + a.target, ENOENT);
        h.capacity = bpf_map__max_entries(m);
        h.sample = std::max(1, opts_.handoff_sample);
        if (!a.owners_view) {
            auto v = map_view(m, bpf_map__fd(m));
            if (!v) return v.error();
            auto x = map_view(mx, bpf_map__fd(mx));
            if (!x) return x.error();
            a.owners_view = std::move(*v);
            a.aux_view = std::move(*x);
        }
        const auto* owners = static_cast<const volatile hl_owner*>(a.owners_view.get());
        const auto* aux = static_cast<const volatile std::uint64_t*>(a.aux_view.get());
        bool work = ksyms_ && a.object_type == "work_struct";
        std::uint64_t live = 0;
        for (std::uint32_t i = 0; i < h.capacity; ++i) {
            const volatile hl_owner& o = owners[i];
            std::uint64_t obj = o.obj;
            if (!obj) continue;
            ++live;
            std::uint64_t handoffs = o.handoffs;
            if (!handoffs) continue;
            HotObject ho;
            ho.target = a.target;
            ho.type = a.object_type;
            ho.id = object_id(a.target, obj);
            ho.handoffs = handoffs;
            ho.cross_node = o.cross_node;
            ho.last_cpu = int(o.cpu_node & 0xffff);
            if (std::uint64_t fn = work ? aux[i] : 0) ho.detail = ksyms_->symbolize(fn).value_or("");
            objects.push_back(std::move(ho));
        }
        h.live_objects = live;
        return ok_status();
    }

    Status read_workq(Snapshot& s, int ncpu, std::size_t width) const {
        s.has_workq = true;
        auto& w = s.workq;
        size_per_cpu(w, kWorkqFields, width);
        std::vector<hl_workq_counts> vals(ncpu);
        std::uint32_t key = 0;
        if (bpf_map_lookup_elem(workq_->map_fd("workq"), &key, vals.data()))
            return make_error("reading workqueue counters", errno);
        for (int i = 0; i < ncpu; ++i) {
            int cpu = i < int(topo_.cpus.size()) ? topo_.cpus[i] : i;
            if (cpu >= int(width)) continue;
            add_cpu_value(w, kWorkqFields, AbiSource::kWorkqCounts, &vals[i], cpu);
        }
        int fd = workq_->map_fd("work_funcs");
        std::uint64_t k = 0, next = 0;
        std::vector<std::uint64_t> per(ncpu);
        bool first = true;
        while (bpf_map_get_next_key(fd, first ? nullptr : &k, &next) == 0) {
            first = false;
            k = next;
            if (bpf_map_lookup_elem(fd, &k, per.data())) continue;
            std::uint64_t n = 0;
            for (auto x : per) n += x;
            std::string name = ksyms_ ? ksyms_->symbolize(k).value_or("") : "";
            if (name.empty()) name = "(unknown function)";
            w.funcs[name] += n;
        }
        return ok_status();
    }

    Result<Snapshot> read() const override {
        // `serve` reads from concurrent scrape threads: the object ids and the
        // owner-table mappings made on first read are shared state.
        std::lock_guard<std::mutex> g(read_mu_);
        Snapshot s;
        s.t = monotonic_seconds();
        int ncpu = libbpf_num_possible_cpus();
        std::size_t width = std::size_t(topo_.max_cpu() + 1);
        auto cpu_of = [&](int idx) { return idx < int(topo_.cpus.size()) ? topo_.cpus[idx] : idx; };
        std::vector<hl_hits> hits(static_cast<std::size_t>(ncpu));
        std::uint32_t zero = 0;
        if (!attached_.empty() && bpf_map_lookup_elem(hits_fd_, &zero, hits.data()))
            return make_error("reading the hit counters", errno);
        for (auto& a : attached_) {
            const TargetPlan* tp = plan_.find(a.target);
            TargetCounters c;
            c.target = a.target;
            c.mechanism = a.mech;
            c.fidelity = tp ? tp->fidelity : Fidelity::kNone;
            c.has_latency = tp && tp->latency;
            size_per_cpu(c, kTargetFields, width);
            std::vector<hl_counts> vals(ncpu);
            std::uint32_t key = 0;
            if (bpf_map_lookup_elem(a.obj->map_fd("counts"), &key, vals.data()))
                return make_error("reading counters of " + a.target, errno);
            for (int i = 0; i < ncpu; ++i) {
                int cpu = cpu_of(i);
                if (cpu >= int(width)) continue;
                add_cpu_value(c, kTargetFields, AbiSource::kHitsSlot, &hits[std::size_t(i)].t[a.slot], cpu);
                add_cpu_value(c, kTargetFields, AbiSource::kCounts, &vals[i], cpu);
            }
            if (a.handoffs)
                if (auto st = read_handoffs(a, c, s.objects, ncpu, width); !st) return st.error();
            s.targets.push_back(std::move(c));
            for (auto& pname : a.programs) s.cost.push_back(prog_cost(a.obj->obj(), a.target, pname));
        }
        if (workq_) {
            if (auto st = read_workq(s, ncpu, width); !st) return st.error();
            for (const char* p : {"hl_wq_queue", "hl_wq_execute", "hl_wq_irq"})
                s.cost.push_back(prog_cost(workq_->obj(), "(workqueue)", p));
        }
        if (sampling_) {
            std::vector<hl_sample_counts> vals(ncpu);
            std::uint32_t key = 0;
            if (bpf_map_lookup_elem(sampling_->map_fd("samples"), &key, vals.data()))
                return make_error("reading sampling counters", errno);
            size_per_cpu(s, kSampleFields, width);
            for (int i = 0; i < ncpu; ++i) {
                int cpu = cpu_of(i);
                if (cpu < int(width)) add_cpu_value(s, kSampleFields, AbiSource::kSampleCounts, &vals[i], cpu);
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

    Status start_workq() {
        LibbpfCapture cap;
        SkelGuard<hl_workq_bpf> s(hl_workq_bpf::open());
        if (!s) return make_error("workqueue attribution: open", errno);
        s->rodata->hl_nr_cpus = std::uint32_t(libbpf_num_possible_cpus());
        bpf_map__set_max_entries(s->maps.owners, 2);
        int err = hl_workq_bpf::load(s.get());
        if (err) {
            Error e = make_error("workqueue attribution: load", err);
            e.detail = cap.tail(6);
            return e;
        }
        err = hl_workq_bpf::attach(s.get());
        if (err) return make_error("workqueue attribution: attach", err);
        workq_ = s.release();
        return ok_status();
    }

    Plan plan_;
    SessionOptions opts_;
    SessionInfo info_;
    const Kallsyms* ksyms_ = nullptr;
    std::unique_ptr<Kallsyms> ksyms_owned_;
    std::unique_ptr<LoadedObject> workq_;
    mutable std::mutex read_mu_;  // one read() at a time
    mutable std::map<std::pair<std::string, std::uint64_t>, std::uint64_t> ids_;
    mutable std::uint64_t next_id_ = 1;
    Topology topo_;
    std::vector<Attached> attached_;
    std::vector<SampledTarget> sampled_;
    std::unique_ptr<LoadedObject> sampling_;
    int stats_fd_ = -1;
    int hits_fd_ = -1;  // the `hits` map every attached object shares

    ~SessionImpl() override {
        workq_.reset();
        sampling_.reset();
        attached_.clear();
        if (hits_fd_ >= 0) close(hits_fd_);
        if (stats_fd_ >= 0) close(stats_fd_);
    }
};

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const SessionOptions& opts, const KernelInfo& kernel,
                                               const Topology& topo) {
    install_libbpf_logger();
    if (auto st = check_privileges(kernel); !st) return st.error();
    auto targets = resolve_targets(opts.targets, opts.funcs);
    if (!targets) return targets.error();
    if (opts.handoff_sample < 1)
        return make_error(fmt::format("bad --handoff-sample {}", opts.handoff_sample), EINVAL,
                          "use 1 (every object) or N > 1 (one object in N)");
    if (opts.owner_capacity < 16 || opts.owner_capacity > (1u << 22))
        return make_error(fmt::format("bad owner map size {}", opts.owner_capacity), EINVAL, "use 16..4194304");
    if (opts.sample_freq <= 0 || opts.sample_freq > 100000)
        return make_error(fmt::format("bad sampling frequency {} Hz", opts.sample_freq), EINVAL,
                          "use 1..100000");

    StartupHeap heap;
    BackgroundKallsyms ksyms;

    auto impl = std::make_unique<SessionImpl>();
    impl->topo_ = topo;
    impl->opts_ = opts;
    std::unique_ptr<KernelBtf> btf;
    if (kernel.btf) {
        auto b = KernelBtf::load();
        if (b) btf = std::make_unique<KernelBtf>(std::move(*b));
    }
    // Custom targets: the tracked argument's type comes from BTF.
    for (auto& t : *targets) {
        if (!t.custom || t.object == ObjectKind::kNone) continue;
        t.object_type = func_arg_struct(btf ? btf->raw() : nullptr, t.name, t.object_arg);
        if (t.object_type.empty()) {
            if (btf && btf->has_func(t.name))
                return make_error(fmt::format("--func {}:arg{}: argument {} is not a pointer to a struct", t.name,
                                              t.object_arg, t.object_arg),
                                  EINVAL, "pick the argument that points to the shared object");
            t.object_type = "object";
        }
    }
    // Everything planning and the report need from BTF, taken now: the parsed BTF
    // (~6 MB) is freed before libbpf parses its own copy for each object it loads.
    std::vector<std::string> names;
    for (auto& t : *targets) names.push_back(t.name);
    std::map<std::string, int> func_ids = btf ? btf->func_ids(names) : std::map<std::string, int>{};
    std::vector<std::pair<std::string, Result<LineLayout>>> layouts;
    for (auto& t : *targets) {
        if (t.object_type.empty() || t.object_type == "object") continue;
        bool seen = false;
        for (auto& l : layouts) seen |= l.first == t.object_type;
        if (!seen) layouts.emplace_back(t.object_type, object_layout(btf ? btf->raw() : nullptr, t.object_type));
    }
    std::string mix_type = btf ? btf->member_type("fast_pool", "mix") : "";
    bool have_btf = btf != nullptr;
    btf.reset();

    // Run statistics for our own programs (the cost report); closed with the session.
    impl->stats_fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);

    PlanFacts facts;
    facts.btf = have_btf;
    facts.kprobes = kernel.kprobes;
    facts.lockdown = kernel.lockdown;
    facts.can_bpf = kernel.caps.can_bpf();
    facts.can_perfmon = kernel.caps.can_perfmon();
    // One per-CPU hit-counter map for all targets: counting a rare target then
    // writes a cache line that the busy ones keep warm.
    impl->hits_fd_ = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "hits", sizeof(std::uint32_t), sizeof(hl_hits), 1,
                                    nullptr);
    if (impl->hits_fd_ < 0) return make_error("creating the hit-counter map", errno);
    RealAttacher attacher(kernel, impl->topo_, func_ids, ksyms, opts, impl->hits_fd_);
    PlanOptions po;
    po.forced = opts.forced;
    po.absent_is_error = !opts.targets.empty() || !opts.funcs.empty();
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
    // Layouts of the object types watched, in target order.
    std::vector<std::string> types;
    for (auto& t : *targets) {
        const TargetPlan* tp = impl->plan_.find(t.name);
        if (!tp || !tp->observable() || t.object_type.empty() || t.object_type == "object") continue;
        if (std::find(types.begin(), types.end(), t.object_type) == types.end()) types.push_back(t.object_type);
    }
    for (auto& ty : types)
        for (auto& [name, l] : layouts) {
            if (name != ty) continue;
            if (l) impl->info_.layouts.push_back(*l);
            else impl->info_.notes.push_back("layout of " + ty + ": " + l.error().message());
        }
    bool want_workq = false;
    for (auto& tp : impl->plan_.targets) want_workq |= tp.target == "queue_work_on" && tp.observable();
    if (want_workq) {
        if (!opts.workq) impl->info_.workq = "off (--no-workq)";
        else if (auto st = impl->start_workq(); !st) impl->info_.workq = st.error().message();
        else impl->info_.workq = "attached: tp_btf workqueue_queue_work, workqueue_execute_start, irq_handler_entry";
    }
    // Symbols are needed from the first read on (work functions, owners); nothing
    // before this point needed them unless the plan did.
    impl->ksyms_owned_ = std::move(ksyms.get());
    impl->ksyms_ = impl->ksyms_owned_.get();
    if (want_workq)
        impl->info_.random_mix =
            random_mix_text(mix_type, impl->ksyms_ && impl->ksyms_->contains("mix_interrupt_randomness"));
    return std::unique_ptr<Session>(std::move(impl));
}

}  // namespace hotline
