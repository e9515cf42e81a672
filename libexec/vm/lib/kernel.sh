# SPDX-License-Identifier: Apache-2.0
# Guest kernels from Debian's archive, without changing the system: a private apt
# configuration per suite (sources, lists and caches under the harness cache),
# `apt-get download`, and only boot/ of the package unpacked.  The kernel is kept
# as an uncompressed ELF vmlinux: QEMU boots it through its PVH entry, skipping
# the in-guest decompressor, and its .BTF section is the guest's BTF.
# Sourced after common.sh.

# Cache layout (HOTLINE_VM_CACHE, default ~/.cache/hotline):
#   apt/SUITE/        private sources.list, lists/ and apt caches for one suite
#   kernels/PKG_VER/  vmlinux, config, release, package, modules/ (the few modules
#                     the guest loads, uncompressed), sha256sums; complete once `ok` holds
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

# Debian compresses modules from 6.x on (xz); busybox insmod wants them plain.
vm_decompress_module() {  # vm_decompress_module FILE OUT
    case $1 in
        *.xz) xz -dc "$1" ;;
        *.zst) zstd -dc "$1" ;;
        *.gz) gzip -dc "$1" ;;
        *) cat "$1" ;;
    esac >"$2" || vm_die "cannot decompress $1"
}

vm_kernel_complete() {  # vm_kernel_complete DIR: unpacked by this version of the harness
    [ "$(cat "$1/ok" 2>/dev/null)" = "format=$VM_CACHE_FORMAT" ]
}

# Unpack boot/ and the guest's modules of a kernel's packages into DIR and cut
# out the ELF vmlinux.  DIR appears complete or not at all.  Up to Debian 13 one
# linux-image package holds both; from 7.x on it depends on linux-binary-*
# (boot/) and linux-modules-* (modules, under /usr/lib on merged-/usr).
vm_unpack_deb() {  # vm_unpack_deb DIR DEB...
    local dir=$1 tmp=$1.tmp vmlinuz m pats=() f deb
    shift
    rm -rf "$tmp"
    mkdir -p "$tmp/modules"
    for m in $VM_GUEST_MODULES; do pats+=("./lib/modules/*/kernel/$m*" "./usr/lib/modules/*/kernel/$m*"); done
    for deb in "$@"; do
        # tar fails on a pattern the package lacks: what is missing is judged below.
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/*' "${pats[@]}" \
            './usr/lib/modules/*/vmlinuz' './usr/lib/modules/*/config' 2>/dev/null || true
    done
    for m in $VM_GUEST_MODULES; do
        f=$(find "$tmp/lib" "$tmp/usr" -path "*/kernel/$m*" 2>/dev/null | head -1 || true)
        [ -n "$f" ] || vm_die "$* have no lib/modules/*/kernel/$m"
        vm_decompress_module "$f" "$tmp/modules/$(basename "$m")"
    done
    # boot/vmlinuz-RELEASE up to 6.x; usr/lib/modules/RELEASE/vmlinuz from 7.x on.
    vmlinuz=$(ls "$tmp"/boot/vmlinuz-* "$tmp"/usr/lib/modules/*/vmlinuz 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$vmlinuz" ] || vm_die "$* have no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz: is it a linux-image package?"
    vm_extract_vmlinux "$vmlinuz" "$tmp/vmlinux" ||
        vm_die "cannot extract an ELF vmlinux from $vmlinuz (neither xz, zstd nor gzip payload)"
    case $vmlinuz in
        */vmlinuz) basename "$(dirname "$vmlinuz")" ;;
        *) echo "${vmlinuz##*/vmlinuz-}" ;;
    esac >"$tmp/release"
    cp "$tmp"/boot/config-* "$tmp/config" 2>/dev/null || cp "$tmp"/usr/lib/modules/*/config "$tmp/config" 2>/dev/null || true
    rm -rf "${tmp:?}/lib" "${tmp:?}/usr"
    basename "$1" >"$tmp/package"
    rm -rf "${tmp:?}/boot"
    (cd "$tmp" && sha256sum vmlinux modules/*.ko >sha256sums) || vm_die "cannot hash the files unpacked from $*"
    echo "format=$VM_CACHE_FORMAT" >"$tmp/ok"
    rm -rf "$dir"
    mv "$tmp" "$dir"
}

# The packages that hold a kernel's files: PKG itself, plus its linux-binary-*
# and linux-modules-* dependencies where the suite splits them out.
vm_kernel_packages() {  # vm_kernel_packages SUITE PKG
    echo "$2"
    vm_apt "$1" apt-cache depends "$2" 2>/dev/null | awk '/Depends: linux-(binary|modules)-[0-9]/ { print $2 }'
}

vm_download_unpack() {  # vm_download_unpack SUITE PKG DIR
    local suite=$1 pkg=$2 dir=$3 dl=$3.download pkgs
    rm -rf "$dl"
    mkdir -p "$dl"
    pkgs=$(vm_kernel_packages "$suite" "$pkg" | tr '\n' ' ')
    vm_log "downloading $pkgs from $suite"
    # shellcheck disable=SC2086 # one word per package
    (cd "$dl" && vm_apt "$suite" apt-get -q download $pkgs >download.log 2>&1) ||
        vm_die "apt-get download $pkgs failed: $(tail -3 "$dl/download.log")"
    local debs=()
    for p in $pkgs; do debs+=("$(ls "$dl/${p}_"*.deb)"); done
    vm_unpack_deb "$dir" "${debs[@]}"
    rm -rf "$dl"
}

# The unpacked files' digests, recorded when a kernel is unpacked and checked
# each time the cache is reused: a damaged cache is fetched again, never booted.
# (The package itself is verified by apt against the archive's signed Release.)
vm_kernel_verify() {  # vm_kernel_verify DIR
    local dir=$1
    vm_kernel_complete "$dir" || return 1
    # No digests is no proof: such a directory is unpacked again, never booted.
    [ -f "$dir/sha256sums" ] && [ -f "$dir/vmlinux" ] && [ ! -L "$dir/vmlinux" ] &&
        grep -q '  vmlinux$' "$dir/sha256sums" &&
        (cd "$dir" && sha256sum --quiet --strict -c sha256sums >/dev/null 2>&1) && return 0
    vm_log "the cached kernel in $dir does not match its sha256sums: fetching it again"
    return 1
}

# A kernel given as an image file: a linux-image .deb is unpacked into the cache
# like an archive kernel; a bzImage or ELF vmlinux is booted as it is, with the
# modules (veth) from MODDIR when given.  Prints the kernel directory.
vm_local_kernel_dir() {  # vm_local_kernel_dir FILE MODDIR
    local k=$1 moddir=$2 dir m f
    if [ "${k%.deb}" != "$k" ]; then
        dir=$(vm_deb_cache_dir "$k")
        vm_kernel_verify "$dir" || { vm_unpack_deb "$dir" "$k" && vm_kernel_verify "$dir"; } || return 1
        echo "$dir"
        return 0
    fi
    dir=$VM_WORK/kernel
    mkdir -p "$dir/modules"
    ln -s "$(realpath "$k")" "$dir/vmlinux"
    echo "local" >"$dir/release"
    basename "$k" >"$dir/package"
    for m in $VM_GUEST_MODULES; do
        f=
        [ -n "$moddir" ] && f=$(find "$moddir" -path "*/$m*" 2>/dev/null | head -1)
        if [ -z "$f" ]; then
            vm_log "no $(basename "$m") under ${moddir:-(no --modules given)}: the guest runs without it" \
                "(scenarios need veth, unless the kernel has it built in)"
            continue
        fi
        vm_decompress_module "$f" "$dir/modules/$(basename "$m")"
    done
    echo "$dir"
}

# vm_alias_dir KEY: the cache directory the alias KEY resolved to last time;
# fails when there is none.  An alias names a directory of the cache by a plain
# name, never a path out of it.
vm_alias_dir() {
    local f=$VM_CACHE/kernels/$1 name
    [ -f "$f" ] || return 1
    name=$(head -c 256 "$f")
    [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._+~%-]*$ ]] || return 1
    echo "$VM_CACHE/kernels/$name"
}

# vm_deb_cache_dir DEB: where a linux-image .deb given as --kernel is unpacked,
# keyed by its content (two packages of one file name are two kernels).
vm_deb_cache_dir() {
    echo "$VM_CACHE/kernels/local-$(sha256sum <"$1" | cut -c1-32)"
}

# Resolve a kernel (alias from the table, or a local file) to a directory
# holding vmlinux and modules/; prints the directory.  Serialised per cache with
# flock so that parallel runs share one download.
vm_kernel_dir() {  # vm_kernel_dir ALIAS|PATH [MODDIR]
    local k=$1 key suite pkg ver dir
    if [ -f "$k" ]; then
        vm_local_kernel_dir "$k" "${2:-}"
        return
    fi
    key=${k#debian:}
    mkdir -p "$VM_CACHE/kernels"
    exec 9>"$VM_CACHE/kernels/.lock"
    flock 9
    suite=$(vm_kernel_field "$k" 2) || vm_die "unknown kernel \"$k\": use $(vm_kernel_aliases) or a path to a kernel image or linux-image .deb"
    if [ "${HOTLINE_VM_REFRESH:-0}" != 1 ] && dir=$(vm_alias_dir "$key"); then
        if vm_kernel_verify "$dir"; then
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
    vm_kernel_verify "$dir" || vm_download_unpack "$suite" "$pkg" "$dir"
    vm_kernel_verify "$dir" || vm_die "the kernel unpacked into $dir fails its own sha256sums"
    basename "$dir" >"$VM_CACHE/kernels/$key"
    exec 9>&-
    echo "$dir"
}
