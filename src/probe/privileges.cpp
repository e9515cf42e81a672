// SPDX-License-Identifier: Apache-2.0
#include <cerrno>

#include "hotline/probe/session.hpp"

namespace hotline {

Status check_privileges(const KernelInfo& k) {
    if (!k.caps.can_bpf())
        return make_error("hotline needs CAP_BPF (or CAP_SYS_ADMIN) to load BPF programs", EPERM,
                          "run as root, or grant CAP_BPF and CAP_PERFMON: "
                          "setcap cap_bpf,cap_perfmon+ep hotline");
    if (!k.caps.can_perfmon())
        return make_error("hotline needs CAP_PERFMON (or CAP_SYS_ADMIN) to attach tracing programs",
                          EPERM, "run as root, or grant CAP_PERFMON");
    return ok_status();
}

}  // namespace hotline
