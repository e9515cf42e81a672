// SPDX-License-Identifier: Apache-2.0
// `hotline discover`'s probe: one template program on many typed attach points
// (bpf/discover.bpf.c), counting per attach point how often an object of its
// argument's struct type was last touched on this CPU, another CPU of this
// node, or another node.  Destroying it detaches everything.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"
#include "hotline/kernel/attach_points.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/model/topology.hpp"

namespace hotline {

struct DiscoverOptions {
    // Globs over tracepoint names; empty: kDefaultDiscoverTracepoints.
    std::vector<std::string> tracepoints;
    // Globs over function names (fentry); empty: none.
    std::vector<std::string> functions;
    // Struct types to follow; empty: every type the attach points pass.
    std::vector<std::string> types;
    // Track one object in N, by address hash: the scaled counts estimate the
    // whole, and the untracked objects cost one hash and no shared line.
    std::uint32_t sample = 1;
    // Owner table entries (a 4-way set-associative array, a power of two).
    std::uint32_t owner_capacity = 16384;
    // Percent of the time the programs are attached, in windows of
    // kDiscoverDutyPeriod: detached, they cost nothing (a program that returns
    // early still pays the tracepoint's dispatch).  Rates are per watched
    // second.  Unset: discover_duty_percent's default.
    std::optional<int> duty_percent;
    // Where in its period the duty cycle starts (0: a whole window attached
    // first); bench_overhead draws it at random.
    std::chrono::milliseconds duty_phase{0};
};

inline constexpr std::chrono::milliseconds kDiscoverDutyPeriod{2000};
inline constexpr int kDiscoverDutyPercent = 50;
// The duty cycle asked for, else kDiscoverDutyPercent for tracepoints alone and
// 100 with --functions: attaching fentry again rebuilds each function's
// trampoline (a text patch, and a grace period before the old one is freed),
// and older kernels cannot attach a tracing program a second time.
int discover_duty_percent(const DiscoverOptions& opts);

// The tracepoints discover attaches by default: wakeups, switches and
// migrations (task_struct), socket data arrival and sends and TCP's rare
// events (sock, sk_buff), work items and timer expiries; chosen for what a
// tcp-crr connection costs (docs/discover.md has the measurements).
extern const std::vector<std::string> kDefaultDiscoverTracepoints;
// What the default leaves out for its cost: the switched-out task, socket
// states, reads and destruction, the network stack's queues, frees and polls
// (sk_buff, net_device, napi_struct, Qdisc) and timer starts.
extern const std::vector<std::string> kBusyTracepoints;
// --tracepoints with its sets expanded: "@default", "@busy" (empty: @default).
Result<std::vector<std::string>> expand_tracepoint_sets(const std::vector<std::string>& globs);

// One attach point and argument watched: a program slot.
struct DiscoverSlot {
    AttachKind kind = AttachKind::kTracepoint;
    std::string attach;  // tracepoint or function name
    int arg = 0;
    std::string type;    // the argument's struct
    // "tracepoint sched_waking arg 0"
    std::string label() const;
};

// An attach point, or one of its arguments, not watched, and why.
struct DiscoverRefusal {
    std::string attach;
    std::string reason;
};

struct DiscoverSlotCounts {
    std::uint64_t touches = 0, same_cpu = 0, cross_cpu = 0, cross_node = 0, new_objects = 0, evicted = 0;
    // Handoffs by [previous node][node], the diagonal within a node; nodes past
    // HL_MAX_NODES fold into the last.
    std::vector<std::vector<std::uint64_t>> node_matrix;
};

// Cross-CPU handoffs from one slot's touch to the next slot's, counted.
struct DiscoverPair {
    std::size_t from = 0, to = 0;  // slot indexes
    std::uint64_t handoffs = 0;
};

// One object of the owner table with handoffs; `id` numbers the objects of one
// type in the session (`type#id`), never its address.
struct DiscoveredObject {
    std::string type;
    std::uint64_t id = 0;
    std::uint64_t handoffs = 0, cross_node = 0;
    std::size_t last_slot = 0;
};

struct DiscoverReading {
    std::vector<DiscoverSlotCounts> slots;  // by slot index
    std::vector<DiscoverPair> pairs;        // nonzero only
    std::vector<DiscoveredObject> objects;  // with handoffs, most first
    std::uint64_t live_objects = 0;
};

class Discovery {
public:
    // Picks the attach points from BTF, loads one program per slot and attaches
    // them; an attach point the verifier or the kernel refuses is left out with
    // its reason.  Fails when none attaches.
    static Result<std::unique_ptr<Discovery>> open(const DiscoverOptions& opts, const KernelBtf& btf,
                                                   const Topology& topo);
    virtual ~Discovery() = default;
    // Every slot chosen, attached or refused (refusals() says why); counts are
    // read by slot index.
    virtual const std::vector<DiscoverSlot>& slots() const = 0;
    virtual bool attached(std::size_t slot) const = 0;
    virtual std::size_t attached_count() const = 0;
    virtual std::vector<DiscoverRefusal> refusals() const = 0;
    // Attach points that matched but found no free slot (HL_DISC_SLOTS per session).
    virtual std::size_t over_capacity() const = 0;
    virtual double attach_seconds() const = 0;
    virtual std::uint32_t sample() const = 0;
    virtual int duty_percent() const = 0;
    // Seconds during which the programs were attached, since open.
    virtual double watched_seconds() const = 0;
    // Counts since open; objects sorted by handoffs.
    virtual Result<DiscoverReading> read() const = 0;
    // The programs' own runs and run time so far, summed (estimated from the
    // kernel's run statistics as a session's cost is).
    virtual ProgCost total_cost() const = 0;
};

// The slots for these attach points: each struct argument (index below the
// template's HL_DISC_ARGS) whose type passes `types`, in order, at most `cap`;
// the arguments left out for their index go to `refused`, the ones beyond the
// cap are counted in `over`.
std::vector<DiscoverSlot> discover_slots(const std::vector<TypedAttachPoint>& points,
                                         const std::vector<std::string>& types, std::size_t cap,
                                         std::vector<DiscoverRefusal>* refused, std::size_t* over);

}  // namespace hotline
