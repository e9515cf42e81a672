#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a C or C++ function in the given trees is longer than the limit,
# counting from its first to its last line as universal-ctags reports them
# (lambdas count toward the function that holds them).
# usage: function_length.sh MAX_LINES DIR...
set -euo pipefail
max=${1:?usage: function_length.sh MAX_LINES DIR...}
shift
[ $# -gt 0 ] || { echo "usage: function_length.sh MAX_LINES DIR..." >&2; exit 2; }
command -v ctags >/dev/null || { echo "function_length: ctags not found; install universal-ctags" >&2; exit 2; }
ctags --version | grep -q 'Universal Ctags' || { echo "function_length: needs Universal Ctags (package universal-ctags)" >&2; exit 2; }
# Only C and C++: the trees also hold JSON and other files ctags would tag.
tags() { ctags -x --languages=C,C++ --kinds-C++=f --kinds-C=f --fields=+e -R "$@"; }
long=$(tags --_xformat="%{end} %{line} %F %N" "$@" |
       awk -v max="$max" '$1 > 0 { n = $1 - $2 + 1; if (n > max) printf "%5d lines  %s:%d  %s\n", n, $3, $2, $4 }' |
       sort -rn)
if [ -n "$long" ]; then
  echo "functions over $max lines (split them):"
  echo "$long"
  exit 1
fi
count=$(tags --_xformat="%N" "$@" | wc -l)
echo "function_length: $count functions in $*, none over $max lines"
