#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The help texts: `hotline PATH --help` and `hotline help PATH` are the same
# text for every subcommand (found from the binary's own help), ending in two
# or three examples of that command; `hotline help`, `--version`.  Text only:
# not run under ASan (usage_test.sh drives the parser there).
# usage: help_test.sh HOTLINE_BINARY
set -u
bin=$1
source "$(dirname "$0")/../lib/checks.sh"
source "$(dirname "$0")/cli_lib.sh"

mapfile -t paths < <(all_paths)
assert "the help lists the subcommands (found ${#paths[@]})" test "${#paths[@]}" -ge 10

# --help and `hotline help PATH`: the same text, ending in examples of that command.
for p in "${paths[@]}"; do
    # shellcheck disable=SC2086
    run $p --help
    assert "hotline $p --help exits 0" test "$rc" = 0
    help_text=$out
    expect_in "hotline $p --help" "$help_text" "Examples:"
    n=$(printf '%s\n' "$help_text" | sed -n '/^Examples:/,$p' | grep -c "^  hotline $p\b")
    assert "hotline $p --help has 2 or 3 examples of itself (has $n)" test "$n" -ge 2 -a "$n" -le 3
    # shellcheck disable=SC2086
    run help $p
    assert "hotline help $p exits 0" test "$rc" = 0
    assert "hotline help $p is hotline $p --help" test "$out" = "$help_text"
done
run help
assert "hotline help exits 0" test "$rc" = 0
expect_in "hotline help" "$out" "Subcommands:"
run --version
assert "hotline --version exits 0" test "$rc" = 0

checks_done
