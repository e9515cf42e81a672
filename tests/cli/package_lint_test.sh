#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package as Debian would judge it, without installing it: lintian
# reports no error and no warning (overrides carry their reason in
# dist/debian/lintian-overrides), the binary is stripped and its debug
# information is in hotline-dbgsym under its build id, man pages are
# compressed, the binary is hardened, and the .deb stays under 15 MB.
# usage: package_lint_test.sh BUILD_DIR
set -u
build=$1
source "$(dirname "$0")/../lib/checks.sh"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1; then
    cat "$out/cpack.log" >&2
    echo "FAIL: cpack did not build the package" >&2
    exit 1
fi
deb=$(ls "$out"/hotline_*.deb 2>/dev/null | head -1)
ddeb=$(ls "$out"/hotline-dbgsym_*.ddeb 2>/dev/null | head -1)
assert "cpack built hotline_*.deb" test -f "$deb"
assert "cpack built hotline-dbgsym_*.ddeb" test -f "$ddeb"
[ -f "$deb" ] && [ -f "$ddeb" ] || { checks_done; exit 1; }

tags=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -E '^[EW]: ')
assert "lintian: no error or warning (${tags:-none})" test -z "$tags"

size=$(stat -c %s "$deb")
assert "the .deb is at most 15 MB ($size bytes)" test "$size" -le $((15 * 1024 * 1024))

mkdir -p "$out/deb" "$out/ddeb"
dpkg-deb -x "$deb" "$out/deb" && dpkg-deb -x "$ddeb" "$out/ddeb"
bin=$out/deb/usr/bin/hotline
assert "the packaged binary has no debug sections" bash -c "! readelf -S '$bin' | grep -q '\\.debug_'"
id=$(readelf -n "$bin" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
debug=$out/ddeb/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
assert "hotline-dbgsym holds the debug information under the build id ${id:-none}" test -s "$debug"
assert "the debug file has the debug sections" bash -c "readelf -S '$debug' | grep -q '\\.debug_info'"
# Hardened as dpkg-buildflags' hardening=+all would build it (HOTLINE_HARDENING):
# full RELRO, and the stack protector's and FORTIFY's checks linked in.
assert "the packaged binary is linked with full RELRO (BIND_NOW)" bash -c "readelf -d '$bin' | grep -q 'FLAGS.*NOW'"
assert "the packaged binary has a GNU_RELRO segment" bash -c "readelf -l '$bin' | grep -q GNU_RELRO"
syms=$(readelf --dyn-syms -W "$bin")
assert "the packaged binary calls the stack protector's check" grep -q '__stack_chk_fail' <<<"$syms"
assert "the packaged binary calls FORTIFY's checked functions" grep -qE '__[a-z]+_chk@' <<<"$syms"
plain=$(find "$out/deb/usr/share/man" -type f ! -name '*.gz' | head -3)
assert "every man page is compressed (${plain:-all are})" test -z "$plain"
checks_done
