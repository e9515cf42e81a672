# Guest kernels from Debian's archive, without changing the system: a private apt
# configuration per suite (sources, lists and caches under the harness cache),
# `apt-get download`, and only boot/ of the package unpacked.  The kernel is kept
# as an uncompressed ELF vmlinux: QEMU boots it through its PVH entry, skipping
# the in-guest decompressor, and its .BTF section is the guest's BTF.
# Sourced after common.sh.

# Cache layout (HOTLINE_VM_CACHE):
#   apt/SUITE/        private sources.list, lists/ and apt caches for one suite
#   kernels/PKG_VER/  vmlinux, config, release, package, modules/ (the few modules
#                     the guest loads, uncompressed); complete once `ok` holds
#                     the current cache format (an older one is unpacked again)
#   kernels/ALIAS     which PKG_VER the alias resolved to last time
# A cached alias is reused without touching the network; HOTLINE_VM_REFRESH=1
# resolves it again against the archive (and downloads a newer kernel if any).

vm_apt() {  # vm_apt SUITE apt-get|apt-cache ARGS...
    local suite=$1 tool=$2 dir=$VM_CACHE/apt/$1
    shift 2
    local opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Dir::State::status=/dev/null
        -o Debug::NoLocking=1 -o APT::Get::List-Cleanup=0)
    # apt drops to _apt for downloads, which cannot write into a private cache
    # under root's home; downloading as the caller keeps the files ours.
    [ "$(id -u)" = 0 ] && opts+=(-o APT::Sandbox::User=root)
    "$tool" "${opts[@]}" "$@"
}

# The mirror the system's own sources use, so the download goes where apt
# already goes (HOTLINE_VM_MIRROR overrides).
vm_mirror() {
    local uri=${HOTLINE_VM_MIRROR:-}
    [ -z "$uri" ] && [ -r /etc/apt/sources.list.d/debian.sources ] &&
        uri=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
    [ -z "$uri" ] && [ -r /etc/apt/sources.list ] &&
        uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
            /etc/apt/sources.list | grep -v security | head -1)
    echo "${uri:-http://deb.debian.org/debian}"
}

vm_apt_update() {  # vm_apt_update SUITE
    local suite=$1 dir=$VM_CACHE/apt/$1 keyring=/usr/share/keyrings/debian-archive-keyring.gpg opt=
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    [ -r "$keyring" ] && opt="[signed-by=$keyring] "
    echo "deb ${opt}$(vm_mirror) $suite main" >"$dir/sources.list"
    vm_log "apt-get update for $suite (private lists in $dir)"
    vm_apt "$suite" apt-get -q update >"$dir/update.log" 2>&1 ||
        vm_die "apt-get update for $suite failed: $(tail -3 "$dir/update.log")"
}

# Cut the ELF vmlinux out of a bzImage: the payload is xz (Debian <= 6.1), zstd
# (6.12) or gzip; try each compression magic until an ELF comes out.
vm_extract_vmlinux() {  # vm_extract_vmlinux VMLINUZ OUT
    local in=$1 out=$2 fmt magic tool off
    for fmt in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${fmt%%:*} magic=${fmt#*:}
        for off in $(LC_ALL=C grep -obUaP "$magic" "$in" | head -8 | cut -d: -f1); do
            # Trailing data after the payload makes the decompressor fail: judge by the output.
            tail -c +$((off + 1)) "$in" | "$tool" -dc 2>/dev/null >"$out" || true
            [ "$(head -c4 "$out" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] && return 0
        done
    done
    rm -f "$out"
    return 1
}

# Modules the guest loads at boot (everything else the tests use is built in):
# veth, for the scenarios' two namespaces.  Paths under lib/modules/RELEASE/kernel/.
VM_GUEST_MODULES="drivers/net/veth.ko"
# Bumped whenever a kernel directory gains something: older ones are unpacked again.
VM_CACHE_FORMAT=2

vm_kernel_complete() {  # vm_kernel_complete DIR: unpacked by this version of the harness
    [ "$(cat "$1/ok" 2>/dev/null)" = "format=$VM_CACHE_FORMAT" ]
}

# Unpack boot/ and the guest's modules of a kernel package into DIR and cut out
# the ELF vmlinux.  DIR appears complete or not at all.
vm_unpack_deb() {  # vm_unpack_deb DEB DIR
    local deb=$1 dir=$2 tmp=$2.tmp vmlinuz m pats=() f
    rm -rf "$tmp"
    mkdir -p "$tmp/modules"
    for m in $VM_GUEST_MODULES; do pats+=("./lib/modules/*/kernel/$m*"); done
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/*' "${pats[@]}" ||
        vm_die "unpacking boot/ and modules ($VM_GUEST_MODULES) of $deb failed"
    # Debian compresses modules from 6.x on (xz); busybox insmod wants them plain.
    for m in $VM_GUEST_MODULES; do
        f=$(ls "$tmp"/lib/modules/*/kernel/"$m"* 2>/dev/null | head -1)
        [ -n "$f" ] || vm_die "$deb has no lib/modules/*/kernel/$m"
        case $f in
            *.xz) xz -dc "$f" ;;
            *.zst) zstd -dc "$f" ;;
            *.gz) gzip -dc "$f" ;;
            *) cat "$f" ;;
        esac >"$tmp/modules/$(basename "$m")" || vm_die "cannot decompress $f"
    done
    rm -rf "${tmp:?}/lib"
    vmlinuz=$(ls "$tmp"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
    [ -n "$vmlinuz" ] || vm_die "$deb has no boot/vmlinuz-*: is it a linux-image package?"
    vm_extract_vmlinux "$vmlinuz" "$tmp/vmlinux" ||
        vm_die "cannot extract an ELF vmlinux from $vmlinuz (neither xz, zstd nor gzip payload)"
    echo "${vmlinuz##*/vmlinuz-}" >"$tmp/release"
    cp "$tmp"/boot/config-* "$tmp/config" 2>/dev/null || true
    basename "$deb" >"$tmp/package"
    rm -rf "${tmp:?}/boot"
    echo "format=$VM_CACHE_FORMAT" >"$tmp/ok"
    rm -rf "$dir"
    mv "$tmp" "$dir"
}

vm_download_unpack() {  # vm_download_unpack SUITE PKG DIR
    local suite=$1 pkg=$2 dir=$3 dl=$3.download
    rm -rf "$dl"
    mkdir -p "$dl"
    vm_log "downloading $pkg from $suite"
    (cd "$dl" && vm_apt "$suite" apt-get -q download "$pkg" >download.log 2>&1) ||
        vm_die "apt-get download $pkg failed: $(tail -3 "$dl/download.log")"
    vm_unpack_deb "$(ls "$dl"/*.deb)" "$dir"
    rm -rf "$dl"
}

# Resolve a kernel (alias from the table, or a local .deb) to a cached directory
# holding vmlinux; prints the directory.  Serialised per cache with flock so that
# parallel runs share one download.
vm_kernel_dir() {  # vm_kernel_dir ALIAS|PATH.deb
    local k=$1 suite pkg ver dir
    mkdir -p "$VM_CACHE/kernels"
    exec 9>"$VM_CACHE/kernels/.lock"
    flock 9
    if [ -f "$k" ]; then  # a local package: cached by its file name
        dir=$VM_CACHE/kernels/local-$(basename "$k" .deb)
        vm_kernel_complete "$dir" || vm_unpack_deb "$k" "$dir"
        exec 9>&-
        echo "$dir"
        return 0
    fi
    suite=$(vm_kernel_field "$k" 2) || vm_die "unknown kernel \"$k\": use $(vm_kernel_aliases) or a path to a linux-image .deb"
    if [ "${HOTLINE_VM_REFRESH:-0}" != 1 ] && [ -f "$VM_CACHE/kernels/$k" ]; then
        dir=$VM_CACHE/kernels/$(cat "$VM_CACHE/kernels/$k")
        if vm_kernel_complete "$dir"; then
            exec 9>&-
            echo "$dir"
            return 0
        fi
    fi
    vm_apt_update "$suite"
    # linux-image-amd64 is the suite's meta package: its dependency names the kernel.
    pkg=$(vm_apt "$suite" apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$pkg" ] || vm_die "no linux-image-*-amd64 behind linux-image-amd64 in $suite"
    ver=$(vm_apt "$suite" apt-cache show "$pkg" 2>/dev/null | awk '/^Version:/ { print $2; exit }')
    dir=$VM_CACHE/kernels/${pkg}_${ver//:/%}
    vm_kernel_complete "$dir" || vm_download_unpack "$suite" "$pkg" "$dir"
    basename "$dir" >"$VM_CACHE/kernels/$k"
    exec 9>&-
    echo "$dir"
}
