// SPDX-License-Identifier: Apache-2.0
// Discovery's attach side: slots from BTF, one load of the template object with
// a program per slot, refusals left out one by one.
#include "hotline/probe/discovery.hpp"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <regex>

#include "attach.hpp"
#include "counter_readers.hpp"
#include "discovery_impl.hpp"
#include "hotline/probe/prog_stats.hpp"
#include "hotline/base/util.hpp"
#include "hotline/model/discover_abi.h"

namespace hotline {

// Each object seen on both sides of a handoff, once each: a task where it is
// woken and where it runs next, a socket where its data or FIN arrives
// (softirq, the sender's CPU on loopback and veth) and where it is written
// (reads cost more: sock_recv_length measured +8% on tcp-crr against +4-5%),
// a work item queued and run, a timer firing, and TCP's rare events.
const std::vector<std::string> kDefaultDiscoverTracepoints = {
    "sched_waking", "sched_switch:2", "sched_wakeup_new", "sched_migrate_task", "sk_data_ready",
    "sock_send_length", "sock_rcvqueue_full", "tcp_retransmit_skb", "tcp_send_reset", "tcp_receive_reset",
    "workqueue_queue_work", "workqueue_execute_start", "timer_expire_entry", "hrtimer_expire_entry"};

// Busy tracepoints, 2-9 runs per tcp-crr connection each (docs/discover.md).
const std::vector<std::string> kBusyTracepoints = {
    "sched_wakeup", "sched_switch:1", "inet_sock_set_state", "sock_recv_length", "tcp_destroy_sock",
    "tcp_rcv_space_adjust", "net_dev_queue", "net_dev_xmit", "netif_receive_skb", "netif_rx", "napi_poll",
    "consume_skb", "kfree_skb", "qdisc_dequeue", "timer_start", "hrtimer_start"};

Result<std::vector<std::string>> expand_tracepoint_sets(const std::vector<std::string>& globs) {
    if (globs.empty()) return kDefaultDiscoverTracepoints;
    std::vector<std::string> out;
    for (const auto& g : globs) {
        const std::vector<std::string>* set = g == "@default" ? &kDefaultDiscoverTracepoints
                                              : g == "@busy" ? &kBusyTracepoints
                                                               : nullptr;
        if (set) out.insert(out.end(), set->begin(), set->end());
        else if (g.starts_with("@"))
            return make_error(fmt::format("--tracepoints: no set named {}", g), EINVAL,
                              "the sets are @default and @busy; other names are tracepoint globs");
        else out.push_back(g);
    }
    return out;
}

int discover_duty_percent(const DiscoverOptions& opts) {
    if (opts.duty_percent) return *opts.duty_percent;
    return opts.functions.empty() ? kDiscoverDutyPercent : 100;
}

std::string DiscoverSlot::label() const { return fmt::format("{} {} arg {}", to_string(kind), attach, arg); }

std::vector<DiscoverSlot> discover_slots(const std::vector<TypedAttachPoint>& points,
                                         const std::vector<std::string>& types, std::size_t cap,
                                         std::vector<DiscoverRefusal>* refused, std::size_t* over) {
    std::vector<DiscoverSlot> slots;
    *over = 0;
    for (const auto& p : points)
        for (const auto& a : p.args) {
            if (!types.empty() && std::find(types.begin(), types.end(), a.type) == types.end()) continue;
            if (a.index >= HL_DISC_ARGS) {
                refused->push_back({p.name, fmt::format("argument {} ({} *): the template reads arguments 0-{}",
                                                        a.index, a.type, HL_DISC_ARGS - 1)});
                continue;
            }
            if (slots.size() >= cap) {
                ++*over;
                continue;
            }
            slots.push_back({p.kind, p.name, a.index, a.type});
        }
    return slots;
}

namespace {

std::string program_name(const DiscoverSlot& s, std::size_t slot) {
    return fmt::format("{}_s{}_a{}", s.kind == AttachKind::kTracepoint ? "hl_dtp" : "hl_dfn", slot, s.arg);
}

// The program libbpf names in a failed load's log ("prog 'NAME': ..."), or "".
std::string failed_program(const std::string& log) {
    static const std::regex re("prog '([a-z_0-9]+)': ");
    std::smatch m;
    std::string last;
    for (auto it = log.cbegin(); std::regex_search(it, log.cend(), m, re); it = m.suffix().first) last = m[1];
    return last;
}

std::uint32_t owner_sets(std::uint32_t capacity) {
    std::uint32_t sets = 1;
    while (sets * HL_OWNER_WAYS < capacity) sets <<= 1;
    return sets;
}

}  // namespace

// Opens and loads the template with one program per live slot.  On a refused
// program, the slot it belongs to is dropped with the log's reason and *retry
// is set; the caller loads again.
Result<std::unique_ptr<LoadedObject>> DiscoveryImpl::load_once(bool* retry) {
    *retry = false;
    LibbpfCapture cap;
    SkelGuard<hl_discover_bpf> s(hl_discover_bpf::open());
    if (!s) return make_error("opening the discover object", errno);
    s->rodata->hl_disc_sample = sample_;
    s->rodata->hl_disc_sets = owner_sets(opts_.owner_capacity);
    bpf_map__set_max_entries(s->maps.disc_owners, owner_sets(opts_.owner_capacity));
    std::vector<std::string> types;
    bpf_program* p;
    bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, false);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto t = std::find(type_names_.begin(), type_names_.end(), slots_[i].type);
        s->rodata->hl_disc_type[i] = std::uint16_t(t - type_names_.begin());
        if (!live_[i]) continue;
        p = bpf_object__find_program_by_name(s->obj, program_name(slots_[i], i).c_str());
        bpf_program__set_autoload(p, true);
        bpf_program__set_attach_target(p, 0, slots_[i].attach.c_str());
    }
    if (int err = hl_discover_bpf::load(s.get())) {
        std::string prog = failed_program(cap.text());
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (live_[i] && program_name(slots_[i], i) == prog) {
                live_[i] = false;
                refusals_.push_back({slots_[i].label(), errname(err) + " at load: " + cap.tail(3)});
                *retry = true;
            }
        return make_error("loading the discover programs: " + cap.tail(6), -err);
    }
    return s.release();
}

Status DiscoveryImpl::attach() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (!live_[i]) continue;
        const std::string name = program_name(slots_[i], i);
        bpf_program* p = bpf_object__find_program_by_name(obj_->obj(), name.c_str());
        if (!obj_->attach_link(name, [p] { return bpf_program__attach(p); })) {
            refusals_.push_back({slots_[i].label(), errname(errno) + " at attach"});
            live_[i] = false;
            continue;
        }
        programs_.push_back(p);
    }
    if (programs_.empty()) return make_error("no discover program attached", ENOENT);
    std::vector<OwnedLink*> links;
    for (OwnedLink& l : obj_->links()) links.push_back(&l);
    windows_ = std::make_unique<AttachWindows>(std::move(links),
                                               DutyCycle{.percent = discover_duty_percent(opts_),
                                                         .period = kDiscoverDutyPeriod,
                                                         .phase = opts_.duty_phase});
    return ok_status();
}

std::vector<DiscoverRefusal> DiscoveryImpl::refusals() const {
    std::vector<DiscoverRefusal> out = refusals_;
    if (!windows_) return out;
    for (const auto& [prog, why] : windows_->failures())
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (live_[i] && program_name(slots_[i], i) == prog) out.push_back({slots_[i].label(), why});
    return out;
}

Status DiscoveryImpl::open_programs() {
    const double t0 = monotonic_seconds();
    live_.assign(slots_.size(), true);
    for (std::size_t attempt = 0; attempt <= slots_.size(); ++attempt) {
        bool retry = false;
        auto s = load_once(&retry);
        if (!s) {
            if (retry) continue;
            return s.error();
        }
        obj_ = std::move(*s);
        if (auto st = attach(); !st) return st;
        attach_seconds_ = monotonic_seconds() - t0;
        return start_reading();
    }
    return make_error("every discover program was refused", EINVAL);
}

Status DiscoveryImpl::start_reading() {
    auto view = map_view(bpf_object__find_map_by_name(obj_->obj(), "disc_owners"));
    if (!view) return view.error();
    owners_view_ = std::move(*view);
    stats_ = RunStatsWindow::join(
        [this] {
            std::uint64_t runs = 0;
            for (bpf_program* p : programs_)
                if (auto st = prog_run_stats(bpf_program__fd(p))) runs += st->run_cnt;
            return runs;
        },
        [w = windows_.get()] { return w->watched_ns(); });
    scaler_.emplace(*stats_);
    return ok_status();
}

Result<std::unique_ptr<Discovery>> Discovery::open(const DiscoverOptions& opts, const KernelBtf& btf,
                                                   const Topology& topo) {
    auto d = std::make_unique<DiscoveryImpl>(opts, topo);
    auto tp_globs = expand_tracepoint_sets(opts.tracepoints);
    if (!tp_globs) return tp_globs.error();
    auto points = typed_attach_points(btf.raw(), AttachKind::kTracepoint, *tp_globs);
    if (!opts.functions.empty()) {
        auto fns = typed_attach_points(btf.raw(), AttachKind::kFunction, opts.functions);
        points.insert(points.end(), fns.begin(), fns.end());
    }
    if (auto st = d->choose(points); !st) return st.error();
    if (auto st = d->open_programs(); !st) return st.error();
    return std::unique_ptr<Discovery>(std::move(d));
}

Status DiscoveryImpl::choose(const std::vector<TypedAttachPoint>& points) {
    slots_ = discover_slots(points, opts_.types, HL_DISC_SLOTS, &refusals_, &over_);
    if (slots_.empty())
        return make_error("no attach point passes a struct pointer of the asked types: check --tracepoints, "
                          "--functions and --types against this kernel's BTF",
                          ENOENT);
    for (const auto& s : slots_)
        if (std::find(type_names_.begin(), type_names_.end(), s.type) == type_names_.end())
            type_names_.push_back(s.type);
    return ok_status();
}

}  // namespace hotline
