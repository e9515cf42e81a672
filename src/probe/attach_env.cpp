// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "attach.hpp"

namespace hotline {

std::string errname(int err) {
    err = err < 0 ? -err : err;
    const char* n = strerrorname_np(err);
    return n ? n : fmt::format("errno {}", err);
}

int AttachEnv::func_id(const std::string& name) const {
    auto it = func_ids.find(name);
    return it == func_ids.end() ? 0 : it->second;
}

std::optional<std::string> AttachEnv::direct_slot(const std::string& target, std::uint32_t* slot) {
    auto it = slots_.find(target);
    if (it == slots_.end()) {
        if (HL_FIRST_SLOT + slots_.size() >= HL_MAX_TARGETS)
            return fmt::format("more than {} directly probed targets in one session", HL_MAX_TARGETS - HL_FIRST_SLOT);
        it = slots_.emplace(target, std::uint32_t(HL_FIRST_SLOT + slots_.size())).first;
    }
    *slot = it->second;
    return std::nullopt;
}

std::string AttachEnv::load_reason(int err, const std::string& log_tail) const {
    std::string r = errname(err) + " at load";
    bool perm = err == -EPERM || err == EPERM;
    if (perm && kernel.caps.can_bpf() && kernel.caps.can_perfmon())
        r += fmt::format(" (privileges are held: the kernel refuses this program type; lockdown={})", kernel.lockdown);
    else if (perm)
        r += " (missing CAP_BPF/CAP_PERFMON?)";
    if ((err == -EACCES || err == -EINVAL) && !log_tail.empty()) r += "; verifier/libbpf log tail:\n" + log_tail;
    return r;
}

}  // namespace hotline
