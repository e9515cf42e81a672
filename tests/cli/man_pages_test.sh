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
    page_has() {  # page_has WHAT CONDITION...: one check of page $f
        checks=$((checks + 1))
        "${@:2}" || { echo "FAIL: $f $1" >&2; failures=$((failures + 1)); }
    }
    page_has "has no EXAMPLES section" grep -q '^\.SH "\?EXAMPLES' "$f"
    page_has "prints its examples run together (no .nf after EXAMPLES)" \
        bash -c 'sed -n "/^\.SH \"\?EXAMPLES/,/^\.SH/p" "$1" | grep -qx "\.nf"' _ "$f"
    for section in "EXIT STATUS" FILES ENVIRONMENT "SEE ALSO"; do
        page_has "has no $section section" grep -q "^\.SH \"\?$section" "$f"
    done
    text=$(MANWIDTH=200 man -l "$f" 2>/dev/null)
    # NAME says what the command does, not only its own name again.
    name_line=$(sed -n '/^NAME/{n;p;q}' <<<"$text" | sed 's/^ *//')
    page_has "has a NAME line that only repeats the command ($name_line)" \
        bash -c '! [[ $1 =~ -\ hotline[\ a-z-]*$ ]]' _ "$name_line"
    page_has "names a file, directory, duration or name option's value TEXT" \
        bash -c '! grep -qE -- "--(output|html|junit|config|fixes|keep|duration|timeout|fix|kernel) TEXT" <<<"$1"' _ "$text"
done
checks=$((checks + 1))
grep -qi '^\.S[HS] "\?EXIT STATUS' "$mandir/hotline.1" || { echo "FAIL: hotline.1 has no EXIT STATUS" >&2; failures=$((failures + 1)); }

checks_done
