// SPDX-License-Identifier: Apache-2.0
#include "kernel_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "hotline/base/util.hpp"
#include "process.hpp"

namespace hotline::vm {

namespace fs = std::filesystem;

Result<std::string> libexec_vm_dir() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec) candidates.push_back(self.parent_path().parent_path() / "libexec/hotline/vm");
    candidates.push_back(fs::path(HOTLINE_SOURCE_DIR) / "libexec/vm");
    for (auto& c : candidates)
        if (access((c / "lib/guest-init.sh").c_str(), R_OK) == 0) return c.string();
    return make_error(fmt::format("the guest's init is not installed (looked for {} and {})",
                                  (candidates.front() / "lib/guest-init.sh").string(),
                                  (candidates.back() / "lib/guest-init.sh").string()));
}

Result<std::string> kernel_dir(const std::string& kernel, const std::string& moddir,
                               const std::string& work, ShutdownSignals& signals) {
    auto dir = libexec_vm_dir();
    if (!dir) return dir.error();
    // The shell's kernel cache, its strings only ever positional arguments.
    const std::vector<std::string> argv{
        "bash",
        "-c",
        "set -euo pipefail; . \"$0/lib/common.sh\"; . \"$0/lib/kernel.sh\"; VM_WORK=$3; "
        "vm_kernel_dir \"$1\" \"$2\"",
        *dir,
        kernel,
        moddir,
        work};
    auto out = run_output(argv, STDERR_FILENO, [&] {
        while (int sig = signals.poll())
            if (is_shutdown_signal(sig)) return true;
        return false;
    });
    if (!out)
        return make_error("the guest kernel " + kernel +
                          " could not be made ready (the reason is above)");
    std::string text{trim(*out)};
    std::string last =
        text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    if (last.empty() || !fs::is_regular_file(last + "/vmlinux"))
        return make_error("no kernel directory for " + kernel);
    return last;
}

}  // namespace hotline::vm
