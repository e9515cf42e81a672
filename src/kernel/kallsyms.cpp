// /proc/kallsyms: function address ranges for sampling and symbolization, held
// compactly (text symbols only, one name arena, sorted name index).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>

#include "hotline/kernel.hpp"

namespace hotline {

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
        std::string_view rest = line.substr(sp1 + 3);
        auto end = rest.find_first_of(" \t\n");
        std::string_view name = rest.substr(0, end);
        if (name.empty() || name.size() > UINT16_MAX) return;
        bool text = type == 't' || type == 'T';
        std::uint32_t off = UINT32_MAX;
        if (text) {
            off = static_cast<std::uint32_t>(k_.names_.size());
            k_.names_.append(name);
            k_.names_.push_back('\0');
        }
        raw_.push_back({addr, off, static_cast<std::uint16_t>(name.size()), text});
        ++k_.parsed_;
        if (addr) k_.visible_ = true;
    }

    Kallsyms finish() {
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
        k_.by_name_.resize(k_.syms_.size());
        for (std::uint32_t i = 0; i < k_.by_name_.size(); ++i) k_.by_name_[i] = i;
        // Equal names keep address order, so the first text symbol of a name wins.
        std::stable_sort(k_.by_name_.begin(), k_.by_name_.end(), [this](std::uint32_t a, std::uint32_t b) {
            return k_.name_of(k_.syms_[a]) < k_.name_of(k_.syms_[b]);
        });
        auto last = std::unique(k_.by_name_.begin(), k_.by_name_.end(), [this](std::uint32_t a, std::uint32_t b) {
            return k_.name_of(k_.syms_[a]) == k_.name_of(k_.syms_[b]);
        });
        k_.by_name_.erase(last, k_.by_name_.end());
        k_.by_name_.shrink_to_fit();
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
    // Line by line: the file is several MB and need never be held whole.
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "re"), std::fclose);
    if (!f) return make_error("cannot read " + path, errno);
    Builder b;
    char* line = nullptr;
    std::size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f.get())) > 0) b.add_line(std::string_view(line, static_cast<std::size_t>(n)));
    std::free(line);
    return b.finish();
}

std::size_t Kallsyms::memory_bytes() const {
    return syms_.capacity() * sizeof(Sym) + names_.capacity() + by_name_.capacity() * sizeof(std::uint32_t);
}

const Kallsyms::Sym* Kallsyms::find(std::string_view name) const {
    auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                               [this](std::uint32_t i, std::string_view n) { return name_of(syms_[i]) < n; });
    if (it == by_name_.end() || name_of(syms_[*it]) != name) return nullptr;
    return &syms_[*it];
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
