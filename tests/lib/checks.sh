# SPDX-License-Identifier: Apache-2.0
# One pass/fail tally for the shell tests (sourced).  assert runs a condition and
# counts it; a failure goes to stderr, a pass to stdout when CHECK_VERBOSE=1.
# checks_done prints the tally and is the script's status.
failures=0
checks=0

assert() {  # assert DESCRIPTION CONDITION...
    local what=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then
        echo "FAIL: $what" >&2
        failures=$((failures + 1))
    elif [ "${CHECK_VERBOSE:-0}" = 1 ]; then
        echo "ok: $what"
    fi
}

checks_done() {
    echo "$((checks - failures)) passed, $failures failed"
    test "$failures" = 0
}
