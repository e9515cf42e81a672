// SPDX-License-Identifier: Apache-2.0
// Field descriptors: one entry per counter says where its per-CPU value sits in
// the BPF ABI (abi.h), which member of the metrics model holds it, its JSON key
// and the Prometheus family that exports it.  The session's readers, delta(),
// the recording writer and the Prometheus renderer iterate these tables instead
// of naming each counter.  The tables themselves sit under the structs they
// describe, in metrics.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hotline/model/abi.h"

namespace hotline {

using Log2Hist = std::array<std::uint64_t, HL_HIST_SLOTS>;

// The per-CPU BPF value a field is read from.
enum class AbiSource {
    kNone,           // not read from BPF (the owner-table scan, map sizes)
    kHitsSlot,       // the target's element of hl_hits.t[]
    kCounts,         // hl_counts
    kHandoffCounts,  // hl_handoff_counts
    kWorkqCounts,    // hl_workq_counts
    kSampleCounts,   // hl_sample_counts
};
inline constexpr std::size_t kNoAbiOffset = ~std::size_t(0);
std::size_t abi_source_size(AbiSource s);  // bytes of one CPU's value; 0 for kNone

enum class MetricType { kCounter, kGauge, kHistogram, kInfo };
std::string_view to_string(MetricType t);

// One Prometheus metric family: the exporter's registry entries and a field's export.
struct MetricFamily {
    std::string_view name = {};  // without the _total (counter) or _info (info) suffix
    MetricType type = MetricType::kCounter;
    std::string_view help = {};
    std::string_view unit = {};    // OpenMetrics UNIT; the name ends with it
    std::string_view labels = {};  // label names, ", "-separated; "(cpu)": only with metrics.per_cpu
    bool capped = false;           // a contention family, counted against metrics.max_series
};

// The field tables of metrics.hpp.  Every consumer that handles tables one by
// one (the Prometheus registry) is checked against this list, so a new table
// cannot be left out of an output silently.
enum class CounterTable { kTarget, kHandoff, kWorkq, kSample };
inline constexpr CounterTable kCounterTables[] = {CounterTable::kTarget, CounterTable::kHandoff,
                                                  CounterTable::kWorkq, CounterTable::kSample};
std::string_view to_string(CounterTable t);

// How an exported field becomes series.
enum class Fold {
    kTotal,   // one series per target: the per-CPU values summed, or the value itself
    kByNode,  // one series per NUMA node (per CPU with metrics.per_cpu)
};

// One counter of struct S.  Exactly one of per_cpu, value, hist is set.  A value
// or hist field read from BPF is summed over CPUs.
template <class S>
struct Field {
    std::string_view name = {};        // the JSON key
    std::string_view json_group = {};  // nested JSON object holding it; empty: top level
    AbiSource abi = AbiSource::kNone;
    std::size_t abi_offset = kNoAbiOffset;  // bytes into the AbiSource value
    std::vector<std::uint64_t> S::*per_cpu = nullptr;  // index = cpu id
    std::uint64_t S::*value = nullptr;
    Log2Hist S::*hist = nullptr;  // abi_offset: slot 0; HL_HIST_SLOTS values follow
    bool gauge = false;           // delta() keeps the later value
    MetricFamily prom = {};       // empty name: not exported to Prometheus
    Fold fold = Fold::kTotal;
    // Its column in the table's per-CPU text table (record's text output), in table
    // order; empty: not a column there.  Only per-CPU fields have one.
    std::string_view text = {};
};

// Adds HL_HIST_SLOTS counts (a BPF histogram, any alignment) to hist.  Out of
// line: inlined into add_cpu_value, GCC checks the bounds of the hist branch
// against structs that have no histogram.
void add_slots(Log2Hist& hist, const void* slots);

// A table of S; S is taken from the struct argument, so a table converts.
template <class S>
using Fields = std::type_identity_t<std::span<const Field<S>>>;

// Sizes every per-CPU member of the table to `width` CPUs, zeroed.
template <class S>
void size_per_cpu(S& s, Fields<S> fields, std::size_t width) {
    for (const auto& f : fields)
        if (f.per_cpu) (s.*f.per_cpu).assign(width, 0);
}

// Adds one CPU's BPF value (of type `src`) to every field read from it.
template <class S>
void add_cpu_value(S& s, Fields<S> fields, AbiSource src, const void* value, int cpu) {
    const auto* base = static_cast<const unsigned char*>(value);
    auto at = [&](std::size_t off) {
        std::uint64_t v;
        std::memcpy(&v, base + off, sizeof v);
        return v;
    };
    for (const auto& f : fields) {
        if (f.abi != src) continue;
        if (f.per_cpu) (s.*f.per_cpu)[std::size_t(cpu)] = at(f.abi_offset);
        else if (f.value) s.*f.value += at(f.abi_offset);
        else if (f.hist) add_slots(s.*f.hist, base + f.abi_offset);
    }
}

// Problems of one table: empty or duplicate names, not exactly one member, an
// ABI offset outside its source, an exported field without help.  Empty: sound.
struct TargetCounters;
struct HandoffCounters;
struct WorkqCounters;
struct Snapshot;
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<TargetCounters>> fields);
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<HandoffCounters>> fields);
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<WorkqCounters>> fields);
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<Snapshot>> fields);

}  // namespace hotline
