// SPDX-License-Identifier: Apache-2.0
// The arithmetic behind scenario results: latency percentiles, /proc/stat CPU
// shares, and message-size lists.
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <sstream>

#include "hotline/workload/scenario.hpp"

namespace hotline {

// --- LatencyHistogram ------------------------------------------------------------------

LatencyHistogram::LatencyHistogram() : buckets_(kSub + std::size_t(kMaxExp - kSubBits) * kSub, 0) {}

std::size_t LatencyHistogram::bucket_of(std::uint64_t v) {
    if (v < kSub) return std::size_t(v);
    int e = 63 - std::countl_zero(v);
    if (e >= kMaxExp) return kSub + std::size_t(kMaxExp - kSubBits) * kSub - 1;
    std::uint64_t sub = (v >> (e - kSubBits)) - kSub;
    return std::size_t(kSub + std::uint64_t(e - kSubBits) * kSub + sub);
}

std::uint64_t LatencyHistogram::bucket_low(std::size_t idx) {
    if (idx < kSub) return idx;
    std::size_t k = (idx - kSub) / kSub, sub = (idx - kSub) % kSub;
    return (kSub + sub) << k;
}

std::uint64_t LatencyHistogram::bucket_width(std::size_t idx) {
    if (idx < kSub) return 1;
    return std::uint64_t(1) << ((idx - kSub) / kSub);
}

void LatencyHistogram::record(std::uint64_t ns) {
    ++buckets_[bucket_of(ns)];
    ++count_;
    sum_ += ns;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
    for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
}

std::uint64_t LatencyHistogram::percentile(double p) const {
    if (!count_) return 0;
    double r = std::ceil(p / 100.0 * double(count_));
    std::uint64_t rank = r < 1 ? 1 : std::min<std::uint64_t>(count_, std::uint64_t(r));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        seen += buckets_[i];
        if (seen >= rank) {
            std::uint64_t mid = bucket_low(i) + (bucket_width(i) - 1) / 2;
            return std::clamp(mid, min_, max_);
        }
    }
    return max_;
}

// --- /proc/stat ----------------------------------------------------------------------------

Result<std::map<int, CpuTicks>> parse_proc_stat(std::string_view text) {
    std::map<int, CpuTicks> out;
    std::istringstream in{std::string(text)};
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3])))
            continue;
        std::istringstream ls(line.substr(3));
        int cpu = -1;
        CpuTicks t;
        ls >> cpu >> t.user >> t.nice >> t.system >> t.idle >> t.iowait >> t.irq >> t.softirq;
        if (!ls) return make_error("unreadable /proc/stat line \"" + line + "\"", EINVAL);
        ls >> t.steal;  // absent on very old kernels
        out[cpu] = t;
    }
    if (out.empty()) return make_error("no per-CPU lines in /proc/stat", EINVAL);
    return out;
}

// --- sizes ------------------------------------------------------------------------------------

static Result<std::uint64_t> parse_size(std::string_view s) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data())
        return make_error(fmt::format("bad message size \"{}\"", s), EINVAL, "use bytes with an optional K, M or G suffix, e.g. 4K");
    std::string_view unit(p, std::size_t(s.data() + s.size() - p));
    std::uint64_t mul = 1;
    if (unit == "K" || unit == "k") mul = 1024;
    else if (unit == "M" || unit == "m") mul = 1024 * 1024;
    else if (unit == "G" || unit == "g") mul = 1024ull * 1024 * 1024;
    else if (!unit.empty())
        return make_error(fmt::format("bad size unit \"{}\" in \"{}\"", unit, s), EINVAL, "use K, M or G");
    return v * mul;
}

Result<std::vector<std::uint64_t>> parse_size_list(std::string_view text) {
    constexpr std::uint64_t kMax = 64ull * 1024 * 1024;
    std::vector<std::uint64_t> out;
    auto check = [&](std::uint64_t v, std::string_view src) -> Status {
        if (v == 0 || v > kMax)
            return make_error(fmt::format("message size \"{}\" is out of range", src), EINVAL, "use 1 byte to 64M");
        return ok_status();
    };
    if (text.find(':') != std::string_view::npos) {
        // min:max:*factor, as qperf's -oo msg_size:4K:1M:*2
        std::vector<std::string_view> parts;
        std::size_t start = 0;
        while (true) {
            auto c = text.find(':', start);
            parts.push_back(text.substr(start, c - start));
            if (c == std::string_view::npos) break;
            start = c + 1;
        }
        if (parts.size() != 3 || parts[2].size() < 2 || parts[2][0] != '*')
            return make_error(fmt::format("bad size sweep \"{}\"", text), EINVAL, "use MIN:MAX:*FACTOR, e.g. 4K:1M:*2");
        auto lo = parse_size(parts[0]);
        if (!lo) return lo.error();
        auto hi = parse_size(parts[1]);
        if (!hi) return hi.error();
        auto f = parse_size(parts[2].substr(1));
        if (!f) return f.error();
        if (auto st = check(*lo, parts[0]); !st) return st.error();
        if (auto st = check(*hi, parts[1]); !st) return st.error();
        if (*f < 2) return make_error(fmt::format("sweep factor in \"{}\" must be at least 2", text), EINVAL);
        if (*hi < *lo) return make_error(fmt::format("sweep \"{}\" ends below its start", text), EINVAL);
        for (std::uint64_t v = *lo; v <= *hi; v *= *f) out.push_back(v);
        return out;
    }
    std::size_t start = 0;
    while (start <= text.size()) {
        auto c = text.find(',', start);
        auto part = text.substr(start, c == std::string_view::npos ? std::string_view::npos : c - start);
        if (!part.empty()) {
            auto v = parse_size(part);
            if (!v) return v.error();
            if (auto st = check(*v, part); !st) return st.error();
            out.push_back(*v);
        }
        if (c == std::string_view::npos) break;
        start = c + 1;
    }
    if (out.empty()) return make_error("empty message size list", EINVAL, "e.g. 4K:1M:*2 or 4K,64K");
    return out;
}

std::string format_size(std::uint64_t b) {
    if (b >= 1024 * 1024 && b % (1024 * 1024) == 0) return fmt::format("{}M", b / (1024 * 1024));
    if (b >= 1024 && b % 1024 == 0) return fmt::format("{}K", b / 1024);
    return std::to_string(b);
}

}  // namespace hotline
