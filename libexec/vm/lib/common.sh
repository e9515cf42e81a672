# SPDX-License-Identifier: Apache-2.0
# Shared by `hotline vm` (libexec/vm/hotline-vm): the guest kernel table, the
# cache location, logging and small helpers.  Sourced, never run.

# alias   Debian suite         dst_entry refcount field  what this kernel is
VM_KERNEL_TABLE="
6.1     bookworm             __refcnt  bookworm's stock kernel: dst layout before the 6.4 false-sharing fix
6.12    bookworm-backports   __rcuref  bookworm-backports: dst layout after the 6.4 fix (rcuref_t)
5.10    bullseye             __refcnt  bullseye: no memcg accounting of BPF memory (RLIMIT_MEMLOCK applies)
latest  unstable             __rcuref  the newest Linux Debian publishes (unstable)
"

VM_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM_CACHE=${HOTLINE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hotline}

vm_log() { printf 'hotline vm: %s\n' "$*" >&2; }
vm_die() { printf 'hotline vm: error: %s\n' "$*" >&2; exit 125; }  # 125: the guest could not run

# Milliseconds since an arbitrary origin, for the timing report.
vm_now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# vm_kernel_field ALIAS COLUMN: one column (2 = suite, 3 = dst field) of the table.
# ALIAS is debian:VERSION or the bare VERSION.
vm_kernel_field() {
    awk -v a="${1#debian:}" -v c="$2" '$1 == a { print $c; found = 1 } END { exit !found }' <<<"$VM_KERNEL_TABLE"
}

# A kernel argument is an alias from the table, a linux-image .deb, or a kernel
# image (bzImage or ELF vmlinux).
vm_valid_kernel() { [ -f "$1" ] || vm_kernel_field "$1" 2 >/dev/null; }

vm_kernel_aliases() { awk 'NF { printf "%sdebian:%s", sep, $1; sep = "|" }' <<<"$VM_KERNEL_TABLE"; }

vm_require_tools() {
    local missing=() t
    for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
    [ ${#missing[@]} -eq 0 ] ||
        vm_die "missing tools: ${missing[*]} (Debian: apt-get install qemu-system-x86 busybox-static cpio xz-utils zstd)"
}

# The busybox the guest runs: static if possible, so it needs no libraries.
vm_busybox() {
    local b
    for b in ${HOTLINE_VM_BUSYBOX:-} /bin/busybox /usr/bin/busybox; do
        [ -x "$b" ] && { echo "$b"; return 0; }
    done
    vm_die "no busybox found (Debian: apt-get install busybox-static)"
}

# iproute2's ip: the scenarios create network namespaces and veth pairs with it,
# which busybox's ip cannot do.  Shipped with its libraries like hotline.
vm_iproute2() {
    local b
    for b in $(command -v ip 2>/dev/null) /usr/sbin/ip /sbin/ip /usr/bin/ip /bin/ip; do
        [ -x "$b" ] && [ ! -L "$b" ] && { echo "$b"; return 0; }
    done
    vm_die "no iproute2 ip found (Debian: apt-get install iproute2)"
}

# What the scenarios run besides hotline and ip, when the host has them: qperf
# (the qperf scenario's server and client) and iperf3.
vm_scenario_tools() {
    local t p
    for t in qperf iperf3; do
        p=$(command -v "$t" 2>/dev/null) && [ -x "$p" ] && realpath "$p"
    done
    return 0
}

# A string from the guest or a package, shown without control characters.
vm_printable() { printf '%s' "${1:0:200}" | tr -c '[:print:]' '?'; }
