// SPDX-License-Identifier: Apache-2.0
// Sizes of the BPF values fields are read from, and the completeness rules of a
// field table.
#include "hotline/model/fields.hpp"

#include <cstring>
#include <set>
#include <utility>

#include "hotline/model/metrics.hpp"

namespace hotline {

std::size_t abi_source_size(AbiSource s) {
    switch (s) {
        case AbiSource::kNone: return 0;
        case AbiSource::kHitsSlot: return sizeof(hl_hits::t[0]);
        case AbiSource::kCounts: return sizeof(hl_counts);
        case AbiSource::kHandoffCounts: return sizeof(hl_handoff_counts);
        case AbiSource::kWorkqCounts: return sizeof(hl_workq_counts);
        case AbiSource::kSampleCounts: return sizeof(hl_sample_counts);
    }
    return 0;
}

std::string_view to_string(MetricType t) {
    switch (t) {
        case MetricType::kCounter: return "counter";
        case MetricType::kGauge: return "gauge";
        case MetricType::kHistogram: return "histogram";
        case MetricType::kInfo: return "info";
    }
    return "?";
}

std::string_view to_string(CounterTable t) {
    switch (t) {
        case CounterTable::kTarget: return "target";
        case CounterTable::kHandoff: return "handoff";
        case CounterTable::kWorkq: return "workq";
        case CounterTable::kSample: return "sample";
    }
    return "?";
}

void add_slots(Log2Hist& hist, const void* slots) {
    const auto* p = static_cast<const unsigned char*>(slots);
    for (std::size_t b = 0; b < HL_HIST_SLOTS; ++b) {
        std::uint64_t v;
        std::memcpy(&v, p + 8 * b, sizeof v);
        hist[b] += v;
    }
}

namespace {

template <class S>
std::vector<std::string> check(std::string_view table, std::span<const Field<S>> fields) {
    std::vector<std::string> problems;
    std::set<std::pair<std::string_view, std::string_view>> names;
    for (const auto& f : fields) {
        std::string id = std::string(table) + " field \"" + std::string(f.name) + "\"";
        if (f.name.empty()) problems.push_back(std::string(table) + ": a field without a name");
        if (!names.insert({f.json_group, f.name}).second) problems.push_back(id + ": duplicate name");
        if (int(f.per_cpu != nullptr) + int(f.value != nullptr) + int(f.hist != nullptr) != 1)
            problems.push_back(id + ": needs exactly one of per_cpu, value, hist");
        std::size_t bytes = f.hist ? 8 * std::size_t(HL_HIST_SLOTS) : 8;
        if (f.abi == AbiSource::kNone && f.abi_offset != kNoAbiOffset)
            problems.push_back(id + ": an ABI offset without an ABI source");
        if (f.abi != AbiSource::kNone &&
            (f.abi_offset == kNoAbiOffset || f.abi_offset % 8 || f.abi_offset + bytes > abi_source_size(f.abi)))
            problems.push_back(id + ": ABI offset outside its source");
        if (f.abi == AbiSource::kNone && !f.gauge)
            problems.push_back(id + ": a counter must be read from BPF (or be a gauge)");
        if (f.gauge && f.abi != AbiSource::kNone)
            problems.push_back(id + ": a gauge read from BPF would be summed over CPUs");
        if (!f.text.empty() && !f.per_cpu) problems.push_back(id + ": a text column needs a per-CPU field");
        if (!f.prom.name.empty()) {
            if (f.prom.help.empty()) problems.push_back(id + ": Prometheus family without help");
            if (f.fold == Fold::kByNode && !f.per_cpu) problems.push_back(id + ": folded by node but not per CPU");
            if (f.prom.type != MetricType::kCounter && f.prom.type != MetricType::kGauge)
                problems.push_back(id + ": a field exports a counter or a gauge");
            if (f.prom.type == MetricType::kCounter && f.gauge)
                problems.push_back(id + ": a gauge exported as a counter");
        } else if (!f.prom.help.empty()) {
            problems.push_back(id + ": help without a Prometheus family name");
        }
    }
    return problems;
}

}  // namespace

std::vector<std::string> check_fields(std::string_view table, std::span<const Field<TargetCounters>> fields) {
    return check(table, fields);
}
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<HandoffCounters>> fields) {
    return check(table, fields);
}
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<WorkqCounters>> fields) {
    return check(table, fields);
}
std::vector<std::string> check_fields(std::string_view table, std::span<const Field<Snapshot>> fields) {
    return check(table, fields);
}

}  // namespace hotline
