# SPDX-License-Identifier: Apache-2.0
# One guest run: kernel from the cache, initramfs, boot, results decoded, verdict.
# Sourced by hotline-vm after common.sh, kernel.sh, initramfs.sh and qemu.sh.

# vm_plan_scripts TESTDIR MODE SCRIPT...: copies each SCRIPT (and the lib/
# directory beside the first, which scripts may source as /hlvm/tests/lib) into
# TESTDIR and writes TESTDIR/plan; prints the sum of the scripts' timeouts.  A
# script states its timeout in a "# hlvm-timeout: S" line (default 120).
vm_plan_scripts() {
    local dir=$1 mode=$2 src name tmo total=0
    shift 2
    mkdir -p "$dir"
    : >"$dir/plan"
    [ -d "$(dirname "$1")/lib" ] && cp -r "$(dirname "$1")/lib" "$dir/"
    for src in "$@"; do
        [ -f "$src" ] || vm_die "no script $src"
        name=$(basename "$src" .sh)
        tmo=$(sed -n 's/^# hlvm-timeout: *\([0-9]*\).*/\1/p' "$src" | head -1)
        cp "$src" "$dir/$name.sh"
        echo "$name ${tmo:=120} $mode" >>"$dir/plan"
        total=$((total + tmo))
    done
    echo "$total"
}

# What the run was, for whoever reads OUT afterwards.
vm_write_kernel_env() {  # vm_write_kernel_env KERNEL KDIR OUT
    {
        echo "kernel=$1"
        echo "suite=$(vm_kernel_field "$1" 2 || echo local)"
        echo "dst_refcount_field=$(vm_kernel_field "$1" 3 || echo unknown)"
        echo "release=$(cat "$2/release")"
        echo "package=$(cat "$2/package")"
        echo "vmlinux=$2/vmlinux"
        echo "accel=$VM_ACCEL"
        echo "shape=cpus=$VM_CPUS nodes=$VM_NODES memory=${VM_MEMORY_MB}M"
    } >"$3/kernel.env"
}

# Why the run failed, if it did: the guest kernel died, the hard timeout hit, or
# the runner never finished.  Prints nothing when the run is good.
vm_failure_cause() {  # vm_failure_cause OUT QEMU_RC DONE_MARKERS TIMEOUT_S
    local fatal
    fatal=$(vm_console_verdict "$1/console.log")
    if [ -n "$fatal" ]; then echo "guest kernel died: $fatal"
    elif [ -s "$1/stalled" ]; then echo "hang: $(cat "$1/stalled"); QEMU was stopped (its vCPUs just before: stalled-cpus.txt)"
    elif [ "$2" = 124 ]; then echo "hang: the guest did not finish within ${4}s and QEMU was stopped"
    elif [ "$3" != 1 ]; then echo "guest never reported HLVM-DONE (QEMU exit status $2)"
    fi
}

# The guest needs its initramfs twice (the archive and the files unpacked from
# it) beside the kernel and hotline's own work: with less, the kernel dies
# before init runs, which looks like a broken kernel.  Measured: docs/vm.md.
vm_min_memory_mb() {  # vm_min_memory_mb INITRAMFS_MB
    echo $((2 * $1 + 256))
}

# vm_run KERNEL MODDIR OUT TESTDIR TIMEOUT LIVE BINARY...: boots KERNEL once,
# runs the plan in TESTDIR, leaves console.log, channel.log, kernel.env,
# timing.env and host-binaries.sha256 in OUT (hotline reads the results from
# channel.log: src/vm/guest_channel.cpp) and returns 0 when the guest ran the
# whole plan and its kernel did not die; VM_RUN_EXIT says how it failed.
vm_run() {
    local kernel=$1 moddir=$2 out=$3 testdir=$4 tmo=$5 live=$6 kdir ipbin t0 t1 t2 t3 ndone why b mb
    shift 6
    VM_RUN_EXIT=$VM_EXIT_GUEST_FAILED
    t0=$(vm_now_ms)
    ipbin=$(vm_iproute2) || return 1
    kdir=$(vm_kernel_dir "$kernel" "$moddir") || return 1
    VM_ACCEL=$(vm_accel "$kdir/vmlinux")
    vm_say_accel
    vm_qemu_args "$VM_ACCEL"
    t1=$(vm_now_ms)
    vm_write_kernel_env "$kernel" "$kdir" "$out"
    echo "HLVM_KERNEL=$kernel" >"$VM_WORK/env"
    # Proof that the guest runs the host's build: the guest hashes its copies too.
    for b in "$@"; do echo "$(sha256sum <"$b" | cut -d' ' -f1)  $(basename "$b")"; done >"$out/host-binaries.sha256"
    vm_build_initramfs "$VM_WORK/initramfs.cpio" "$VM_WORK/root" "$VM_WORK/env" "$testdir" "$kdir/modules" \
        "$@" "$ipbin" $(vm_scenario_tools)
    rm -rf "$VM_WORK/root"
    t2=$(vm_now_ms)
    mb=$(du -m "$VM_WORK/initramfs.cpio" | cut -f1)
    if [ "$VM_MEMORY_MB" -lt "$(vm_min_memory_mb "$mb")" ]; then
        vm_log "error: --memory ${VM_MEMORY_MB}M is too small for this guest: its $mb MiB initramfs needs" \
            "at least $(vm_min_memory_mb "$mb")M (the archive and its unpacked files, the kernel, hotline)"
        VM_RUN_EXIT=$VM_EXIT_USAGE
        return 1
    fi
    vm_log "booting $(cat "$kdir/release") under ${VM_ACCEL%%,*} ($VM_CPUS CPUs, $VM_NODES nodes," \
        "$mb MiB initramfs, timeout ${tmo}s)"
    mkdir -p "$VM_WORK/qemu"
    vm_boot "$kdir/vmlinux" "$VM_WORK/initramfs.cpio" "$VM_WORK/qemu" "$tmo" "$live"
    t3=$(vm_now_ms)
    for b in console.log channel.log stalled stalled-cpus.txt monitor.log; do
        [ -e "$VM_WORK/qemu/$b" ] && mv "$VM_WORK/qemu/$b" "$out/$b"
    done
    : >>"$out/channel.log"
    ndone=$(tr -d '\r' <"$out/channel.log" | grep -ac '^HLVM-DONE' || true)
    {
        echo "kernel_fetch_ms=$((t1 - t0))"
        echo "initramfs_ms=$((t2 - t1))"
        echo "qemu_ms=$((t3 - t2))"
        echo "total_ms=$(($(vm_now_ms) - t0))"
        echo "qemu_rc=$VM_QEMU_RC"
    } >"$out/timing.env"
    vm_log "$(cat "$kdir/release"): kernel ready in $((t1 - t0)) ms, initramfs $((t2 - t1)) ms, QEMU $((t3 - t2)) ms"
    why=$(vm_failure_cause "$out" "$VM_QEMU_RC" "$ndone" "$tmo")
    [ -z "$why" ] && return 0
    echo "$why" >"$out/failure"
    vm_log "FAILED: $why"
    vm_log "last 30 lines of the guest console ($out/console.log):"
    tail -n 30 "$out/console.log" | sed 's/^/  | /' >&2
    return 1
}
