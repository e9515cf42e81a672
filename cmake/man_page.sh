#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One man page (OUT, and OUT.gz) from `hotline [COMMAND] --help` (help2man): NAME from the
# command's own description (its first clause), EXIT STATUS from the binary's
# own table (`hotline --help`), FILES, ENVIRONMENT and SEE
# ALSO from INCLUDE, and the examples one per line.
#   man_page.sh HELP2MAN HOTLINE PROGRAM INCLUDE VERSION OUT [NAME]
set -eu
help2man=$1 hotline=$2 program=$3 include=$4 version=$5 out=$6
name=${7:-$("$program" --help | head -1 | sed 's/;.*//; s/\.$//')}
sections=$out.h2m
{
    echo "[EXIT STATUS]"
    "$hotline" --help | awk '/^Exit status:/ { s = 1; next } s && /^$/ { exit }
        s { code = $1; $1 = ""; sub(/^ +/, ""); printf ".TP\n.B %s\n%s\n", code, $0 }'
    echo
    cat "$include"
} >"$sections"
"$help2man" --no-info --no-discard-stderr --section=1 --name "$name" --include "$sections" \
    --version-string="$version" --output="$out.tmp" "$program"
# help2man fills the EXAMPLES paragraph into one line; no-fill keeps one per
# line.  hotline.1's "Exit status:" subsection is the EXIT STATUS section above.
# OUT.gz is what is installed: gzip -9n, no name or time stamp (Debian policy 12.1).
awk '/^\.SS "Exit status:"/ { skip = 1; next }
    skip && /^\.S[HS]/ { skip = 0 }
    skip { next }
    /^\.SH "?EXAMPLES/ { print; ex = 1; next }
    ex && /^\.SH/ { print ".fi"; ex = 0 }
    ex && /^\.(IP|PP)$/ { if (!nf) print ".nf"; nf = 1; next }
    { print }
    END { if (ex) print ".fi" }' "$out.tmp" >"$out"
rm -f "$out.tmp" "$sections"
gzip -9nc "$out" >"$out.gz"
