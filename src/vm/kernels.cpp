// SPDX-License-Identifier: Apache-2.0
#include "hotline/vm/kernels.hpp"

namespace hotline::vm {

const std::vector<KernelAlias>& kernel_aliases() {
    static const std::vector<KernelAlias> table{
        {"6.1", "bookworm", "__refcnt",
         "bookworm's stock kernel: dst layout before the 6.4 false-sharing fix"},
        {"6.12", "bookworm-backports", "__rcuref",
         "bookworm-backports: dst layout after the 6.4 fix (rcuref_t)"},
        {"5.10", "bullseye", "__refcnt",
         "bullseye: no memcg accounting of BPF memory (RLIMIT_MEMLOCK applies)"},
        {"latest", "unstable", "__rcuref", "the newest Linux Debian publishes (unstable)"},
    };
    return table;
}

const KernelAlias* find_kernel_alias(std::string_view kernel) {
    if (kernel.substr(0, 7) == "debian:") kernel.remove_prefix(7);
    for (const auto& a : kernel_aliases())
        if (a.name == kernel) return &a;
    return nullptr;
}

std::string kernel_alias_list() {
    std::string out;
    for (const auto& a : kernel_aliases())
        out += (out.empty() ? "debian:" : "|debian:") + std::string(a.name);
    return out;
}

}  // namespace hotline::vm
