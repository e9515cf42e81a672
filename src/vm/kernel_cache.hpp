// SPDX-License-Identifier: Apache-2.0
// The guest kernel of a run: an alias of the Debian archive (kernels.hpp), a
// linux-image .deb, or a bzImage/vmlinux, resolved to a directory holding
// vmlinux, modules/, release and package.
#pragma once

#include <string>

#include "hotline/base/result.hpp"
#include "hotline/base/signals.hpp"

namespace hotline::vm {

// The directory holding lib/guest-init.sh: installed beside the binary
// (PREFIX/libexec/hotline/vm), else the source tree the binary was built from.
Result<std::string> libexec_vm_dir();

// The kernel's directory; a kernel image's is made under WORK.  A shutdown
// signal stops a download.
Result<std::string> kernel_dir(const std::string& kernel, const std::string& moddir,
                               const std::string& work, ShutdownSignals& signals);

}  // namespace hotline::vm
