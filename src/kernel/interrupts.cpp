// SPDX-License-Identifier: Apache-2.0
// Device IRQs by action name from /proc/interrupts (text is a parameter for tests).
//
// A row is "IRQ: <count per CPU> <chip> [hwirq-flow] <action>[, <action>...]";
// the chip and flow columns differ between architectures and kernels, so the
// actions are read from the end: the last word, and each word before it that
// ends in the ", " separating shared actions.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "hotline/kernel/interrupts.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

namespace {

std::vector<std::string> words_of(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

// The IRQ number of a row ("  25:"), or -1 for a header or per-CPU row ("LOC:").
int irq_of(const std::string& first_word) {
    int irq = -1;
    auto end = first_word.data() + first_word.size();
    auto [p, ec] = std::from_chars(first_word.data(), end, irq);
    if (ec != std::errc() || p + 1 != end || *p != ':') return -1;
    return irq;
}

std::vector<std::string> actions_of(const std::vector<std::string>& words) {
    std::vector<std::string> actions;
    if (words.size() < 3) return actions;  // "IRQ:", counts, chip at least precede an action
    actions.push_back(words.back());
    for (std::size_t i = words.size() - 1; i-- > 1 && words[i].back() == ',';)
        actions.push_back(words[i].substr(0, words[i].size() - 1));
    return actions;
}

}  // namespace

std::vector<int> irqs_named(std::string_view proc_interrupts, std::string_view name) {
    std::vector<int> irqs;
    std::istringstream in{std::string(proc_interrupts)};
    for (std::string line; std::getline(in, line);) {
        auto words = words_of(line);
        if (words.empty()) continue;
        int irq = irq_of(words.front());
        if (irq < 0) continue;
        auto actions = actions_of(words);
        if (std::any_of(actions.begin(), actions.end(),
                        [&](const std::string& a) { return a.find(name) != std::string::npos; }))
            irqs.push_back(irq);
    }
    return irqs;
}

Result<std::vector<int>> resolve_device_irqs(std::string_view proc_interrupts, const std::vector<std::string>& names) {
    std::vector<int> all;
    for (auto& name : names) {
        if (name.empty()) return make_error("--irqs-of needs a device name", EINVAL, "e.g. --irqs-of eth0");
        auto irqs = irqs_named(proc_interrupts, name);
        if (irqs.empty())
            return make_error(fmt::format("no IRQ in /proc/interrupts has an action named like '{}'", name), 0,
                              "give a name from the last column of /proc/interrupts (e.g. eth0, virtio0-input, "
                              "mlx5_comp)");
        all.insert(all.end(), irqs.begin(), irqs.end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
}

Result<std::vector<int>> read_device_irqs(const std::vector<std::string>& names, const std::string& proc_root) {
    if (names.empty()) return std::vector<int>{};
    auto text = read_file(proc_root + "/interrupts");
    if (!text) return text.error();
    return resolve_device_irqs(*text, names);
}

}  // namespace hotline
