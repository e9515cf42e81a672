// /proc/kallsyms: function address ranges for sampling and symbolization, held
// compactly (text symbols only, one name arena, sorted name index).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

#include "hotline/kernel.hpp"

namespace hotline {

// Collects lines, then sorts and indexes once; non-text names are never stored.
namespace {

// FNV-1a: the by-name index sorts 32-bit hashes instead of comparing strings.
std::uint32_t name_hash(std::string_view s) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : s) h = (h ^ c) * 16777619u;
    return h;
}

}  // namespace

// Collects lines, then sorts and indexes once; non-text names are never stored.
class Kallsyms::Builder {
public:
    void add_line(std::string_view line) {
        // "ffffffff81000000 T _stext [module]"
        auto sp1 = line.find(' ');
        if (sp1 == std::string_view::npos || sp1 + 3 > line.size()) return;
        std::uint64_t addr = 0;
        auto r = std::from_chars(line.data(), line.data() + sp1, addr, 16);
        if (r.ec != std::errc{} || r.ptr != line.data() + sp1) return;
        char type = line[sp1 + 1];
        const char* p = line.data() + sp1 + 3;
        const char* e = line.data() + line.size();
        const char* q = p;
        while (q < e && *q != ' ' && *q != '\t' && *q != '\n') ++q;
        std::string_view name(p, std::size_t(q - p));
        if (name.empty() || name.size() > UINT16_MAX) return;
        bool text = type == 't' || type == 'T';
        std::uint32_t off = UINT32_MAX;
        if (text) {
            off = static_cast<std::uint32_t>(k_.names_.size());
            k_.names_.append(name);
            k_.names_.push_back('\0');
        }
        if (!raw_.empty() && addr < raw_.back().addr) sorted_ = false;
        raw_.push_back({addr, off, static_cast<std::uint16_t>(name.size()), text});
        ++k_.parsed_;
        if (addr) k_.visible_ = true;
    }

    Kallsyms finish() {
        // The core kernel lists its symbols by address; only trailing module and BPF
        // symbols can be out of order.  Ties keep their listing order (the first is primary).
        if (!sorted_)
            std::stable_sort(raw_.begin(), raw_.end(), [](const Raw& a, const Raw& b) { return a.addr < b.addr; });
        std::size_t ntext = 0;
        for (const auto& r : raw_) ntext += r.text;
        k_.syms_.reserve(ntext);
        // Walk groups of equal address; a group's end is the next group's address.
        for (std::size_t i = 0; i < raw_.size();) {
            std::size_t j = i;
            while (j < raw_.size() && raw_[j].addr == raw_[i].addr) ++j;
            std::uint64_t end = j < raw_.size() ? raw_[j].addr : 0;
            for (std::size_t m = i; m < j; ++m)
                if (raw_[m].text)
                    k_.syms_.push_back({raw_[m].addr, end, raw_[m].name, raw_[m].len,
                                        static_cast<std::uint16_t>(m == i ? 1 : 0)});
            i = j;
        }
        std::vector<Raw>().swap(raw_);
        k_.names_.shrink_to_fit();
        // (hash, index) pairs: index order is address order, so among equal names the
        // lowest address comes first.
        k_.by_name_.resize(k_.syms_.size());
        for (std::uint32_t i = 0; i < k_.syms_.size(); ++i)
            k_.by_name_[i] = std::uint64_t(name_hash(k_.name_of(k_.syms_[i]))) << 32 | i;
        std::sort(k_.by_name_.begin(), k_.by_name_.end());
        return std::move(k_);
    }

private:
    struct Raw {
        std::uint64_t addr;
        std::uint32_t name;
        std::uint16_t len;
        bool text;
    };
    std::vector<Raw> raw_;
    bool sorted_ = true;
    Kallsyms k_;
};

Kallsyms Kallsyms::parse(std::string_view text) {
    Builder b;
    while (!text.empty()) {
        auto nl = text.find('\n');
        b.add_line(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    }
    return b.finish();
}

Result<Kallsyms> Kallsyms::load(const std::string& path) {
    // Big reads: the kernel formats the file on every read call, and the file is
    // several MB that need never be held whole, so parse chunk by chunk.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot read " + path, errno);
    constexpr std::size_t kChunk = 256 * 1024;
    std::unique_ptr<char[]> buf(new char[kChunk]);
    std::size_t have = 0;  // bytes of an unfinished line kept at the front
    Builder b;
    while (true) {
        ssize_t n = ::read(fd, buf.get() + have, kChunk - have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            ::close(fd);
            return make_error("cannot read " + path, e);
        }
        std::size_t len = have + std::size_t(n);
        std::string_view chunk(buf.get(), len);
        std::size_t pos = 0;
        while (pos < len) {
            const void* nl = std::memchr(chunk.data() + pos, '\n', len - pos);
            if (!nl) break;
            std::size_t end = std::size_t(static_cast<const char*>(nl) - chunk.data());
            b.add_line(chunk.substr(pos, end - pos));
            pos = end + 1;
        }
        have = len - pos;
        if (n == 0) {
            if (have) b.add_line(chunk.substr(pos, have));
            break;
        }
        // A line longer than the buffer is no kallsyms line: drop it.
        if (have == kChunk) have = 0;
        else if (have) std::memmove(buf.get(), buf.get() + pos, have);
    }
    ::close(fd);
    return b.finish();
}

std::size_t Kallsyms::memory_bytes() const {
    return syms_.capacity() * sizeof(Sym) + names_.capacity() + by_name_.capacity() * sizeof(std::uint64_t);
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
    if (!s || !visible_ || s->end == 0) return std::nullopt;
    return SymRange{s->addr, s->end};
}

std::optional<std::string> Kallsyms::symbolize(std::uint64_t addr) const {
    if (!visible_ || syms_.empty()) return std::nullopt;
    auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                               [](std::uint64_t a, const Sym& s) { return a < s.addr; });
    if (it == syms_.begin()) return std::nullopt;
    --it;
    // Past the function's end lies a non-text symbol (or nothing known).
    if (it->end != 0 && addr >= it->end) return std::nullopt;
    // Aliases share an address; name the first one listed, as perf does.
    while (it != syms_.begin() && std::prev(it)->addr == it->addr) --it;
    if (!it->primary) return std::nullopt;
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
