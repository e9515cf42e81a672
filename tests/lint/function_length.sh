#!/usr/bin/env bash
# Fails when a function in the given tree is longer than the limit, counting
# from its first to its last line as universal-ctags reports them (lambdas count
# toward the function that holds them).
# usage: function_length.sh SRC_DIR MAX_LINES
set -euo pipefail
src=${1:?usage: function_length.sh SRC_DIR MAX_LINES}
max=${2:?usage: function_length.sh SRC_DIR MAX_LINES}
command -v ctags >/dev/null || { echo "function_length: ctags not found; install universal-ctags" >&2; exit 2; }
ctags --version | grep -q 'Universal Ctags' || { echo "function_length: needs Universal Ctags (package universal-ctags)" >&2; exit 2; }
long=$(ctags -x --_xformat="%{end} %{line} %F %N" --kinds-C++=f --kinds-C=f --fields=+e -R "$src" |
       awk -v max="$max" '$1 > 0 { n = $1 - $2 + 1; if (n > max) printf "%5d lines  %s:%d  %s\n", n, $3, $2, $4 }' |
       sort -rn)
if [ -n "$long" ]; then
  echo "functions over $max lines (split them):"
  echo "$long"
  exit 1
fi
count=$(ctags -x --_xformat="%N" --kinds-C++=f --kinds-C=f -R "$src" | wc -l)
echo "function_length: $count functions, none over $max lines"
