// /proc/kallsyms: function address ranges for sampling and symbolization.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "hotline/kernel.hpp"

namespace hotline {

Kallsyms Kallsyms::parse(std::string_view text) {
    Kallsyms k;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        // "ffffffff81000000 T _stext [module]"
        auto sp1 = line.find(' ');
        if (sp1 == std::string_view::npos || sp1 + 3 > line.size()) continue;
        std::uint64_t addr = 0;
        auto r = std::from_chars(line.data(), line.data() + sp1, addr, 16);
        if (r.ec != std::errc{}) continue;
        char type = line[sp1 + 1];
        std::string_view rest = line.substr(sp1 + 3);
        auto end = rest.find_first_of(" \t");
        std::string_view name = rest.substr(0, end);
        if (name.empty()) continue;
        bool text_sym = type == 't' || type == 'T';
        k.syms_.push_back({addr, std::string(name), text_sym});
        if (addr) k.visible_ = true;
    }
    std::stable_sort(k.syms_.begin(), k.syms_.end(),
                     [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
    for (std::size_t i = 0; i < k.syms_.size(); ++i)
        if (k.syms_[i].text) k.by_name_.emplace(k.syms_[i].name, i);
    return k;
}

Result<Kallsyms> Kallsyms::load(const std::string& path) {
    std::ifstream f(path);
    if (!f) return make_error("cannot read " + path, errno);
    std::stringstream ss;
    ss << f.rdbuf();
    return parse(ss.str());
}

bool Kallsyms::contains(std::string_view name) const { return by_name_.count(name) != 0; }

std::optional<SymRange> Kallsyms::range(std::string_view name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end() || !visible_) return std::nullopt;
    std::size_t i = it->second;
    std::uint64_t start = syms_[i].addr;
    // The function ends where the next symbol at a higher address begins.
    for (std::size_t j = i + 1; j < syms_.size(); ++j)
        if (syms_[j].addr > start) return SymRange{start, syms_[j].addr};
    return std::nullopt;
}

std::optional<std::string> Kallsyms::symbolize(std::uint64_t addr) const {
    if (!visible_ || syms_.empty()) return std::nullopt;
    auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                               [](std::uint64_t a, const Sym& s) { return a < s.addr; });
    if (it == syms_.begin()) return std::nullopt;
    --it;
    // Aliases share an address; name the first one listed, as perf does.
    while (it != syms_.begin() && std::prev(it)->addr == it->addr) --it;
    if (!it->text) return std::nullopt;
    std::ostringstream os;
    os << it->name;
    if (addr != it->addr) os << "+0x" << std::hex << (addr - it->addr);
    return os.str();
}

}  // namespace hotline
