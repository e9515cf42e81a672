#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The bash completion script (dist/bash-completion/hotline) driven the way bash
# drives it: COMP_WORDS/COMP_CWORD set, the completion function called, COMPREPLY
# read.  It must know subcommands, options, targets, fixes and scenarios.
# usage: completion_test.sh HOTLINE_BINARY COMPLETION_SCRIPT
set -u
bin=$1
script=$2
source "$(dirname "$0")/../lib/checks.sh"

# complete_words WORD...: the candidates for the last word, one a line.
complete_words() {
    bash -c '
        hotline() { "$HOTLINE_BIN" "$@"; }
        source "$1"; shift
        complete -p hotline >/dev/null || { echo "no completion registered for hotline" >&2; exit 1; }
        COMP_WORDS=("$HOTLINE_BIN" "$@"); COMP_CWORD=$#
        _hotline
        printf "%s\n" "${COMPREPLY[@]}"' _ "$script" "$@"
}

expect() {  # expect "WORDS" CANDIDATE [absent]
    local words=$1 want=$2 got
    # shellcheck disable=SC2086
    got=$(HOTLINE_BIN=$bin complete_words $words)
    checks=$((checks + 1))
    if [ "${3:-}" = absent ]; then
        grep -qx -- "$want" <<<"$got" && { echo "FAIL: \"hotline $words\" offers $want" >&2; failures=$((failures + 1)); }
    elif ! grep -qx -- "$want" <<<"$got"; then
        echo "FAIL: \"hotline $words<TAB>\" does not offer $want; got: $(echo $got)" >&2
        failures=$((failures + 1))
    fi
}

expect "pro" probe
expect "val" validate
expect "val" diff absent
expect "__comp" __complete absent
expect "fixes s" show
expect "scenario r" run
expect "probe --ta" --targets
expect "probe -t dst" dst_release
expect "record --targets q" queue_work_on
expect "validate --fix numa" numa-local
expect "validate --fix numa-local --scenario tcp" tcp-crr
expect "fixes show early" early-demux-off
expect "scenario run dst" dst-refcount
expect "probe --mechanism trace" tracepoint
expect "help fix" fixes
# compgen over the whole candidate list: what bash would show for an empty word.
all=$(HOTLINE_BIN=$bin complete_words "")
n=$(compgen -W "$(echo $all)" -- "" | wc -l)
checks=$((checks + 1))
[ "$n" -ge 10 ] || { echo "FAIL: an empty word offers $n subcommands" >&2; failures=$((failures + 1)); }

checks_done
