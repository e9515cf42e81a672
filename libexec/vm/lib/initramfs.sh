# SPDX-License-Identifier: Apache-2.0
# The guest's root file system: busybox, the host-built binaries exactly as built
# (plus the shared libraries ldd names), the guest runner as /init, and the tests
# to run.  Sourced after common.sh.

# vm_stage_binary ROOT FILE: FILE goes to ROOT/bin unchanged, its libraries to
# their own paths so the host's dynamic loader finds them in the guest.
vm_stage_binary() {
    local root=$1 file=$2 lib
    cp "$file" "$root/bin/"
    # `ldd` prints "name => /path (addr)" and "/lib64/ld-linux... (addr)"; a static
    # binary prints no path at all.
    for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*'); do
        [ -e "$root$lib" ] || cp -L --parents "$lib" "$root" || vm_die "cannot copy $lib (needed by $file)"
    done
}

# vm_build_initramfs OUT STAGE ENVFILE TESTDIR MODDIR BINARY...
#   TESTDIR holds plan (lines "name timeout_s") and name.sh for each planned test;
#   MODDIR the kernel's modules that /init loads (*.ko).
vm_build_initramfs() {
    local out=$1 root=$2 envfile=$3 testdir=$4 moddir=$5 bin
    shift 5
    rm -rf "$root"
    mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,hlvm} || vm_die "cannot create $root"
    vm_stage_binary "$root" "$(vm_busybox)"
    [ "$(basename "$(vm_busybox)")" = busybox ] || mv "$root/bin/$(basename "$(vm_busybox)")" "$root/bin/busybox"
    for bin in "$@"; do
        [ -x "$bin" ] || vm_die "$bin is not an executable (build the project first)"
        vm_stage_binary "$root" "$bin"
    done
    # The guest's PID 1; its interpreter line is added here, since busybox is
    # the shell inside the guest only (lib/guest-init.sh is its body).
    { echo '#!/bin/busybox sh'; cat "$VM_HERE/lib/guest-init.sh"; } >"$root/init" || vm_die "cannot write $root/init"
    chmod 755 "$root/init"
    cp "$envfile" "$root/hlvm/env"
    cp -r "$testdir" "$root/hlvm/tests"
    mkdir -p "$root/hlvm/modules"
    cp "$moddir"/*.ko "$root/hlvm/modules/" 2>/dev/null || vm_die "no modules in $moddir"
    # Uncompressed: the guest unpacks it without a decompressor, the fastest path under TCG.
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$out" || vm_die "cpio failed"
}
