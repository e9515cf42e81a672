# One guest run: kernel from the cache, initramfs, boot, results decoded, verdict.
# Shared by vm-suite (CTest) and run-in-vm (developers).  Sourced after common.sh,
# kernel.sh, initramfs.sh and qemu.sh.

# vm_plan_tests TESTDIR NAME...: copies guest/tests/NAME.sh (and the shared
# guest/tests/lib) into TESTDIR and writes TESTDIR/plan; prints the sum of the
# tests' timeouts.  A test states its timeout in a "# hlvm-timeout: S" line.
vm_plan_tests() {
    local dir=$1 name src tmo total=0
    shift
    mkdir -p "$dir"
    : >"$dir/plan"
    [ -d "$VM_HERE/guest/tests/lib" ] && cp -r "$VM_HERE/guest/tests/lib" "$dir/"
    for name in "$@"; do
        src=$VM_HERE/guest/tests/$name.sh
        [ -f "$src" ] || vm_die "no guest test \"$name\" ($src)"
        tmo=$(sed -n 's/^# hlvm-timeout: *\([0-9]*\).*/\1/p' "$src" | head -1)
        cp "$src" "$dir/"
        echo "$name ${tmo:=120}" >>"$dir/plan"
        total=$((total + tmo))
    done
    echo "$total"
}

# vm_run KERNEL OUT TESTDIR TIMEOUT LIVE BINARY...: boots KERNEL once, runs the plan
# in TESTDIR, leaves everything in OUT (see README.md, "Results") and returns 0
# when the guest ran the whole plan and its kernel did not die.  Whether each
# test passed is for the caller to judge from OUT/TEST/rc and its files.
vm_run() {
    local kernel=$1 out=$2 testdir=$3 tmo=$4 live=$5 kdir ipbin t0 t1 t2 t3 qrc ndone fatal
    shift 5
    t0=$(vm_now_ms)
    ipbin=$(vm_iproute2) || return 1
    kdir=$(vm_kernel_dir "$kernel") || return 1
    t1=$(vm_now_ms)
    rm -rf "$out"
    mkdir -p "$out/work"
    {
        echo "kernel=$kernel"
        echo "suite=$(vm_kernel_field "$kernel" 2 || echo local)"
        echo "dst_refcount_field=$(vm_kernel_field "$kernel" 3 || echo unknown)"
        echo "release=$(cat "$kdir/release")"
        echo "package=$(cat "$kdir/package")"
        echo "vmlinux=$kdir/vmlinux"
    } >"$out/kernel.env"
    echo "HLVM_KERNEL=$kernel" >"$out/work/env"
    # Proof that the guest runs the host's build: the guest hashes its copies too.
    local b
    for b in "$@"; do echo "$(sha256sum <"$b" | cut -d' ' -f1)  $(basename "$b")"; done >"$out/host-binaries.sha256"
    vm_build_initramfs "$out/work/initramfs.cpio" "$out/work/root" "$out/work/env" "$testdir" "$kdir/modules" \
        "$@" "$ipbin"
    t2=$(vm_now_ms)
    vm_log "booting $(cat "$kdir/release") ($(du -m "$out/work/initramfs.cpio" | cut -f1) MiB initramfs, timeout ${tmo}s)"
    qrc=$(vm_boot "$kdir/vmlinux" "$out/work/initramfs.cpio" "$out" "$tmo" "$live")
    t3=$(vm_now_ms)
    ndone=$(vm_collect "$out" "$out")
    fatal=$(vm_console_verdict "$out/console.log")
    rm -rf "$out/work/root"
    {
        echo "kernel_fetch_ms=$((t1 - t0))"
        echo "initramfs_ms=$((t2 - t1))"
        echo "qemu_ms=$((t3 - t2))"
        echo "guest_boot_s=$(cat "$out/guest-uptime" 2>/dev/null || echo none)"
        echo "guest_done_s=$(cat "$out/guest-done-uptime" 2>/dev/null || echo none)"
        echo "total_ms=$(($(vm_now_ms) - t0))"
        echo "qemu_rc=$qrc"
    } >"$out/timing.env"
    vm_log "$(cat "$kdir/release"): kernel ready in $((t1 - t0)) ms, initramfs $((t2 - t1)) ms," \
        "QEMU $((t3 - t2)) ms (init at $(cat "$out/guest-uptime" 2>/dev/null || echo ?) s guest time)"
    local why=
    [ -n "$fatal" ] && why="guest kernel died: $fatal"
    [ -z "$why" ] && [ "$qrc" = 124 ] && why="hard timeout: QEMU killed after ${tmo}s"
    [ -z "$why" ] && [ "$ndone" != 1 ] && why="guest never reported HLVM-DONE (QEMU exit status $qrc)"
    if [ -n "$why" ]; then
        echo "$why" >"$out/failure"
        vm_log "FAILED: $why"
        vm_log "last 30 lines of the guest console ($out/console.log):"
        tail -n 30 "$out/console.log" | sed 's/^/  | /' >&2
        return 1
    fi
    return 0
}
