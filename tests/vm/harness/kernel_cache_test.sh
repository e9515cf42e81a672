#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The VM harness's kernel cache (libexec/vm/lib/kernel.sh) without a download:
#   - a cached kernel boots only with its digests: tampered, a link, or with
#     sha256sums deleted, it is unpacked or fetched again;
#   - an alias names a directory of the cache, never a path out of it;
#   - two linux-image .debs of one file name are two cache entries.
# Usage: kernel_cache_test.sh LIBEXEC_VM_DIR
set -uo pipefail
lib=$1/lib
# shellcheck source=/dev/null
. "$lib/common.sh"
# shellcheck source=/dev/null
. "$lib/kernel.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/hotline-cache.XXXXXX")
trap 'rm -rf "$work"' EXIT
VM_CACHE=$work/cache
failed=0
check() {  # check DESCRIPTION COMMAND...
    if "${@:2}"; then echo "ok: $1"; else echo "FAILED: $1"; failed=1; fi
}
fails() { ! "$@"; }

# A cache entry as vm_unpack_deb leaves it.
entry() {  # entry NAME
    local d=$VM_CACHE/kernels/$1
    mkdir -p "$d/modules"
    echo "kernel $1" >"$d/vmlinux"
    echo "veth" >"$d/modules/veth.ko"
    (cd "$d" && sha256sum vmlinux modules/*.ko >sha256sums)
    echo "format=$VM_CACHE_FORMAT" >"$d/ok"
    echo "$d"
}

good=$(entry linux-image-6.12_1)
check "an intact entry is verified" vm_kernel_verify "$good"
t=$(entry tampered)
echo "evil" >"$t/vmlinux"
check "a changed vmlinux is not" fails vm_kernel_verify "$t"
n=$(entry no-digests)
echo "evil" >"$n/vmlinux"
rm "$n/sha256sums"
check "an entry without its sha256sums is not (they were made up from what was there)" fails vm_kernel_verify "$n"
l=$(entry linked)
echo "evil" >"$work/elsewhere"
rm "$l/vmlinux"
ln -s "$work/elsewhere" "$l/vmlinux"
(cd "$l" && sha256sum vmlinux modules/*.ko >sha256sums)
check "a vmlinux that is a link is not" fails vm_kernel_verify "$l"

echo linux-image-6.12_1 >"$VM_CACHE/kernels/6.12"
check "an alias resolves inside the cache" test "$(vm_alias_dir 6.12)" = "$good"
mkdir -p "$work/evil"
echo ../../evil >"$VM_CACHE/kernels/6.1"
check "an alias naming a path out of the cache resolves to nothing" fails vm_alias_dir 6.1
printf 'a\nb' >"$VM_CACHE/kernels/5.10"
check "an alias of two lines resolves to nothing" fails vm_alias_dir 5.10
check "no alias file resolves to nothing" fails vm_alias_dir latest

mkdir -p "$work/a" "$work/b"
echo one >"$work/a/linux-image.deb"
echo two >"$work/b/linux-image.deb"
check "two packages of one name are two cache entries" \
    test "$(vm_deb_cache_dir "$work/a/linux-image.deb")" != "$(vm_deb_cache_dir "$work/b/linux-image.deb")"
check "one package is one cache entry" \
    test "$(vm_deb_cache_dir "$work/a/linux-image.deb")" = "$(vm_deb_cache_dir "$work/a/linux-image.deb")"
exit "$failed"
