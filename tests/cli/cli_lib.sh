# SPDX-License-Identifier: Apache-2.0
# The CLI tests' shared helpers: running the binary ($bin) and listing its
# subcommands from its own help.  Sourced after tests/lib/checks.sh.

# run ARGS...: sets rc, out (stdout) and err (stderr).
run() {
    local o e
    o=$(mktemp) e=$(mktemp)
    "$bin" "$@" >"$o" 2>"$e" </dev/null
    rc=$?
    out=$(cat "$o") err=$(cat "$e")
    rm -f "$o" "$e"
}

expect_usage() {  # expect_usage ARGS...: exit 64 and a message on stderr
    run "$@"
    assert "hotline $* exits $usage (got $rc: $err)" test "$rc" = "$usage"
    assert "hotline $* says why on stderr" test -n "$err"
}

expect_in() {  # expect_in WHAT TEXT NEEDLE
    case $2 in *"$3"*) checks=$((checks + 1)) ;; *) echo "FAIL: $1: no \"$3\" in: $2" >&2; failures=$((failures + 1)) ;; esac
}

# The subcommands of PATH... as listed by `hotline PATH... --help`.
subcommands_of() {
    "$bin" "$@" --help 2>/dev/null | awk '/^Subcommands:/ {s=1; next} s && /^  [a-z]/ {print $1} s && /^$/ {s=0}'
}

all_paths() {
    local top sub
    for top in $(subcommands_of); do
        echo "$top"
        for sub in $(subcommands_of "$top"); do echo "$top $sub"; done
    done
}

