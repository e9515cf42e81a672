// SPDX-License-Identifier: Apache-2.0
// The guest kernels `hotline vm --kernel debian:ALIAS` names: one table, read
// by the kernel cache, the run's kernel.env and the CLI's help.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hotline::vm {

struct KernelAlias {
    std::string_view name;       // "6.12": --kernel debian:6.12 (or 6.12)
    std::string_view suite;      // the Debian suite its linux-image-amd64 comes from
    std::string_view dst_field;  // dst_entry's refcount field in that kernel
    std::string_view what;       // what this kernel is, for the help
};

const std::vector<KernelAlias>& kernel_aliases();

// The alias KERNEL ("debian:6.12" or "6.12") names, or nullptr.
const KernelAlias* find_kernel_alias(std::string_view kernel);

// "debian:6.1|debian:6.12|...": the values of --kernel that are aliases.
std::string kernel_alias_list();

}  // namespace hotline::vm
