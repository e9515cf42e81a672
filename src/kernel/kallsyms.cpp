// SPDX-License-Identifier: Apache-2.0
// /proc/kallsyms: function address ranges for sampling and symbolization, held
// compactly (text symbols only, one name arena, sorted name index).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "hotline/kernel/kernel.hpp"

namespace hotline {

void* map_pages(std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
}

void unmap_pages(void* p, std::size_t bytes) { munmap(p, bytes); }

namespace {

// Word-at-a-time multiply-xorshift hash: the by-name index sorts 32-bit hashes
// instead of comparing strings, and ~120k names are hashed at every load.
std::uint32_t name_hash(std::string_view s) {
    constexpr std::uint64_t kMul = 0x9e3779b97f4a7c15ULL;
    std::uint64_t h = s.size() * kMul;
    const char* p = s.data();
    std::size_t n = s.size();
    for (; n >= 8; p += 8, n -= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * kMul;
        h ^= h >> 29;
    }
    if (n) {
        std::uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = (h ^ w) * kMul;
        h ^= h >> 29;
    }
    return static_cast<std::uint32_t>(h >> 32);
}

}  // namespace

// Collects lines straight into the final tables (nearly every symbol is text),
// then sorts and indexes once; non-text names are never stored.
class Kallsyms::Builder {
public:
    // Room for a typical kernel's table from the start: the pages are mapped but
    // only those written become resident, and no growth copies (and their page
    // faults, a quarter of the load) happen below these sizes.
    Builder() {
        k_.syms_.reserve(1 << 17);
        k_.names_.reserve(4 << 20);
    }

    void add_line(std::string_view line) {
        // "ffffffff81000000 T _stext [module]"
        auto sp1 = line.find(' ');
        if (sp1 == std::string_view::npos || sp1 + 3 > line.size()) return;
        std::uint64_t addr = 0;
        auto r = std::from_chars(line.data(), line.data() + sp1, addr, 16);
        if (r.ec != std::errc{} || r.ptr != line.data() + sp1) return;
        char type = line[sp1 + 1];
        // The name runs to a tab (before "[module]") or the line's end.
        std::string_view name = line.substr(sp1 + 3);
        if (const void* tab = std::memchr(name.data(), '\t', name.size()))
            name = name.substr(0, std::size_t(static_cast<const char*>(tab) - name.data()));
        if (const void* sp = std::memchr(name.data(), ' ', name.size()))
            name = name.substr(0, std::size_t(static_cast<const char*>(sp) - name.data()));
        if (name.empty() || name.size() > UINT16_MAX) return;
        // Until finish(), a symbol's size field holds its position in the listing.
        std::uint32_t seq = static_cast<std::uint32_t>(k_.parsed_++);
        if (type == 't' || type == 'T') {
            if (k_.names_.size() + name.size() >= kPrimary) return;
            if (syms_sorted_from_ == SIZE_MAX && !k_.syms_.empty() && addr < k_.syms_.back().addr)
                syms_sorted_from_ = k_.syms_.size();
            k_.syms_.push_back({addr, seq, static_cast<std::uint32_t>(k_.names_.size())});
            k_.names_.append(name);
            k_.names_.push_back('\0');
        } else {
            if (stops_sorted_from_ == SIZE_MAX && !stops_.empty() && addr < stops_.back().addr)
                stops_sorted_from_ = stops_.size();
            stops_.push_back({addr, seq});
        }
        if (addr) k_.visible_ = true;
    }

    Kallsyms finish() {
        // The core kernel lists its symbols by address; only trailing module and BPF
        // symbols can be out of order.
        auto& syms = k_.syms_;
        sort_by_addr(syms, syms_sorted_from_);
        sort_by_addr(stops_, stops_sorted_from_);
        // Walk groups of text symbols at one address.  A function ends at the next
        // higher symbol of any type; the first symbol listed at an address (of any
        // type) is the one symbolize() names.
        std::size_t p = 0;
        for (std::size_t i = 0; i < syms.size();) {
            std::uint64_t a = syms[i].addr;
            std::size_t j = i;
            while (j < syms.size() && syms[j].addr == a) ++j;
            while (p < stops_.size() && stops_[p].addr < a) ++p;
            bool stop_first = p < stops_.size() && stops_[p].addr == a && stops_[p].seq < syms[i].size;
            std::size_t q = p;
            while (q < stops_.size() && stops_[q].addr == a) ++q;
            std::uint64_t end = j < syms.size() ? syms[j].addr : 0;
            if (q < stops_.size() && (end == 0 || stops_[q].addr < end)) end = stops_[q].addr;
            std::uint64_t size = end ? end - a : 0;
            if (size > UINT32_MAX) size = 0;  // no function spans 4 GB: the end is unknown
            for (std::size_t m = i; m < j; ++m) syms[m].size = static_cast<std::uint32_t>(size);
            if (!stop_first) syms[i].name |= kPrimary;
            i = j;
        }
        std::vector<Stop>().swap(stops_);
        // (hash, index) pairs: index order is address order, so among equal names the
        // lowest address comes first.
        auto& keys = k_.by_name_;
        keys.resize(syms.size());
        for (std::uint32_t i = 0; i < syms.size(); ++i) keys[i] = std::uint64_t(name_hash(k_.name_of(syms[i]))) << 32 | i;
        // Counting sort on the top 16 bits, then each bucket (a few keys) in full.
        std::vector<std::uint64_t, PageAllocator<std::uint64_t>> tmp(keys.size());
        std::vector<std::uint32_t, PageAllocator<std::uint32_t>> start((1u << 16) + 1, 0);
        for (auto k : keys) ++start[(k >> 48) + 1];
        for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
        {
            std::vector<std::uint32_t, PageAllocator<std::uint32_t>> next(start.begin(), start.end() - 1);
            for (auto k : keys) tmp[next[k >> 48]++] = k;
        }
        for (std::size_t b = 0; b + 1 < start.size(); ++b)
            if (start[b + 1] - start[b] > 1) std::sort(tmp.begin() + start[b], tmp.begin() + start[b + 1]);
        keys.swap(tmp);
        return std::move(k_);
    }

private:
    // The listing is sorted up to `from` (the core kernel); the tail (modules, BPF)
    // is sorted alone and merged in.  Stable: ties keep their listing order.
    template <class V>
    static void sort_by_addr(V& v, std::size_t from) {
        if (from >= v.size()) return;
        auto by_addr = [](const auto& a, const auto& b) { return a.addr < b.addr; };
        auto mid = v.begin() + std::ptrdiff_t(from);
        std::stable_sort(mid, v.end(), by_addr);
        std::inplace_merge(v.begin(), mid, v.end(), by_addr);
    }

    struct Stop {
        std::uint64_t addr;
        std::uint32_t seq;
    };
    std::vector<Stop> stops_;  // non-text symbols: they only end the function before them
    std::size_t syms_sorted_from_ = SIZE_MAX;  // first entry out of order; SIZE_MAX: none
    std::size_t stops_sorted_from_ = SIZE_MAX;
    Kallsyms k_;
};

namespace {

// Hands the complete lines of `chunk` to the builder; a line cut at the chunk's
// end waits in `carry` for its rest.
void feed_lines(Kallsyms::Builder& b, std::string& carry, std::string_view chunk) {
    // No kallsyms line comes near this (names are at most 512 bytes): drop such a line.
    constexpr std::size_t kLongestLine = 4096;
    std::size_t pos = 0;
    if (!carry.empty()) {
        const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
        std::size_t end = nl ? std::size_t(static_cast<const char*>(nl) - chunk.data()) : chunk.size();
        carry.append(chunk.substr(0, end));
        if (!nl) {
            if (carry.size() > kLongestLine) carry.clear();
            return;
        }
        b.add_line(carry);
        carry.clear();
        pos = end + 1;
    }
    while (pos < chunk.size()) {
        const void* nl = std::memchr(chunk.data() + pos, '\n', chunk.size() - pos);
        if (!nl) break;
        std::size_t end = std::size_t(static_cast<const char*>(nl) - chunk.data());
        b.add_line(chunk.substr(pos, end - pos));
        pos = end + 1;
    }
    if (chunk.size() - pos <= kLongestLine) carry.assign(chunk.substr(pos));
}

// Reads a file in big chunks on a thread of its own: the kernel formats the next
// chunk of /proc/kallsyms (most of the load's CPU) while the caller parses the
// last one.  Without a thread it reads in the caller.  Chunks are handed over in
// file order through a ring of buffers.
class ChunkReader {
public:
    explicit ChunkReader(int fd) : fd_(fd) {
        // Mapped pages: a loader thread's malloc arena would keep them after the load.
        for (auto& b : bufs_) b.data = static_cast<char*>(map_pages(kChunk));
        try {
            thread_ = std::thread([this] { produce(); });
        } catch (const std::system_error&) {
            inline_ = true;
        }
    }
    ~ChunkReader() {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
        for (auto& b : bufs_) unmap_pages(b.data, kChunk);
    }
    ChunkReader(const ChunkReader&) = delete;
    ChunkReader& operator=(const ChunkReader&) = delete;

    // The next chunk, valid until the next call; empty at the end of the file.
    Result<std::string_view> next() {
        Buffer& b = bufs_[next_ % kBuffers];
        if (inline_) {
            fill(b);
        } else {
            std::unique_lock<std::mutex> l(mu_);
            if (next_ > 0) {
                bufs_[(next_ - 1) % kBuffers].full = false;  // the caller is done with it
                cv_.notify_all();
            }
            cv_.wait(l, [&] { return b.full; });
        }
        ++next_;
        if (b.err) return make_error("read", b.err);
        return std::string_view(b.data, b.len);
    }

private:
    static constexpr std::size_t kChunk = 256 * 1024;
    static constexpr std::size_t kBuffers = 3;
    struct Buffer {
        char* data = nullptr;
        std::size_t len = 0;
        int err = 0;
        bool full = false;
    };

    void fill(Buffer& b) {
        ssize_t n;
        do n = ::read(fd_, b.data, kChunk);
        while (n < 0 && errno == EINTR);
        b.err = n < 0 ? errno : 0;
        b.len = n < 0 ? 0 : std::size_t(n);
    }
    void produce() {
        for (std::size_t i = 0;; ++i) {
            Buffer& b = bufs_[i % kBuffers];
            {
                std::unique_lock<std::mutex> l(mu_);
                cv_.wait(l, [&] { return stop_ || !b.full; });
                if (stop_) return;
            }
            fill(b);
            bool last = b.err || b.len == 0;
            {
                std::lock_guard<std::mutex> g(mu_);
                b.full = true;
            }
            cv_.notify_all();
            if (last) return;
        }
    }

    int fd_;
    Buffer bufs_[kBuffers];
    std::size_t next_ = 0;  // chunks handed to the caller
    bool inline_ = false;
    bool stop_ = false;
    std::mutex mu_;
    std::condition_variable cv_;
    std::thread thread_;
};

}  // namespace

Kallsyms Kallsyms::parse(std::string_view text) {
    Builder b;
    std::string carry;
    feed_lines(b, carry, text);
    if (!carry.empty()) b.add_line(carry);
    return b.finish();
}

Result<Kallsyms> Kallsyms::load(const std::string& path) {
    // Big reads: the kernel formats the file on every read call, and the file is
    // several MB that need never be held whole, so parse chunk by chunk.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot read " + path, errno);
    Builder b;
    std::string carry;
    Result<std::string_view> chunk = std::string_view();
    {
        ChunkReader reader(fd);
        while ((chunk = reader.next()) && !chunk->empty()) feed_lines(b, carry, *chunk);
    }
    ::close(fd);
    if (!chunk) return make_error("cannot read " + path, chunk.error().err);
    if (!carry.empty()) b.add_line(carry);
    return b.finish();
}

std::size_t Kallsyms::memory_bytes() const {
    // Sizes, not capacities: reserved pages never written are not resident.
    return syms_.size() * sizeof(Sym) + names_.size() + by_name_.size() * sizeof(std::uint64_t);
}

const Kallsyms::Sym* Kallsyms::find(std::string_view name) const {
    std::uint64_t h = std::uint64_t(name_hash(name)) << 32;
    for (auto it = std::lower_bound(by_name_.begin(), by_name_.end(), h); it != by_name_.end() && (*it >> 32) == (h >> 32);
         ++it) {
        const Sym& s = syms_[std::uint32_t(*it)];
        if (name_of(s) == name) return &s;
    }
    return nullptr;
}

bool Kallsyms::contains(std::string_view name) const { return find(name) != nullptr; }

std::optional<SymRange> Kallsyms::range(std::string_view name) const {
    const Sym* s = find(name);
    if (!s || !visible_ || s->size == 0) return std::nullopt;
    return SymRange{s->addr, s->addr + s->size};
}

std::optional<std::string> Kallsyms::symbolize(std::uint64_t addr) const {
    if (!visible_ || syms_.empty()) return std::nullopt;
    auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                               [](std::uint64_t a, const Sym& s) { return a < s.addr; });
    if (it == syms_.begin()) return std::nullopt;
    --it;
    // Past the function's end lies a non-text symbol (or nothing known).
    if (it->size != 0 && addr - it->addr >= it->size) return std::nullopt;
    // Aliases share an address; name the first one listed, as perf does.
    while (it != syms_.begin() && std::prev(it)->addr == it->addr) --it;
    if (!(it->name & kPrimary)) return std::nullopt;
    std::string out(name_of(*it));
    if (addr != it->addr) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, addr - it->addr, 16);
        out += "+0x";
        out.append(buf, r.ptr);
    }
    return out;
}

}  // namespace hotline
