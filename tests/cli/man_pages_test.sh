#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every subcommand the binary's help lists has its generated man page
# (cmake/install.cmake, HOTLINE_MAN_COMMANDS), with its options and examples.
# usage: man_pages_test.sh HOTLINE_BINARY MAN_DIR
set -u
bin=$1
mandir=$2
source "$(dirname "$0")/../lib/checks.sh"

subcommands_of() {
    "$bin" "$@" --help 2>/dev/null | awk '/^Subcommands:/ {s=1; next} s && /^  [a-z]/ {print $1} s && /^$/ {s=0}'
}

pages=(hotline)
for top in $(subcommands_of); do
    pages+=("hotline-$top")
    for sub in $(subcommands_of "$top"); do pages+=("hotline-$top-$sub"); done
done
for p in "${pages[@]}"; do
    f=$mandir/$p.1
    checks=$((checks + 1))
    if [ ! -s "$f" ]; then
        echo "FAIL: no man page $f (add the subcommand to HOTLINE_MAN_COMMANDS in cmake/install.cmake)" >&2
        failures=$((failures + 1))
        continue
    fi
    checks=$((checks + 1))
    grep -q '^\.SH "\?EXAMPLES' "$f" || { echo "FAIL: $f has no EXAMPLES section" >&2; failures=$((failures + 1)); }
done
checks=$((checks + 1))
grep -qi '^\.S[HS] "\?EXIT STATUS' "$mandir/hotline.1" || { echo "FAIL: hotline.1 has no EXIT STATUS" >&2; failures=$((failures + 1)); }

checks_done
