#!/bin/bash
# The VM harness's progress watch (libexec/vm/lib/qemu.sh, vm_watch_progress)
# without QEMU: a `sleep` stands in for it and the test writes the channel.
#   - a test that starts and never reports: the stand-in is stopped and the
#     reason names the test, and vm_failure_cause reports a hang;
#   - a guest that never says hello: stopped, and the reason says so;
#   - a guest that keeps reporting within each step's limit: never stopped.
# Usage: watchdog_test.sh LIBEXEC_VM_DIR
set -uo pipefail
lib=$1/lib
# shellcheck source=/dev/null
. "$lib/common.sh"
# shellcheck source=/dev/null
. "$lib/qemu.sh"
# shellcheck source=/dev/null
. "$lib/run.sh"
export VM_WATCH_POLL_S=1
VM_STEP_LIMIT_S=2
work=$(mktemp -d "${TMPDIR:-/tmp}/hotline-watch.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
check() {  # check DESCRIPTION COMMAND...
    if "${@:2}"; then echo "ok: $1"; else echo "FAILED: $1"; failed=1; fi
}
alive() { kill -0 "$1" 2>/dev/null; }

# watch CASE: starts a stand-in for QEMU and the watch on $work/CASE/channel.log;
# sets qemu and watcher.
watch() {
    mkdir -p "$work/$1"
    : >"$work/$1/channel.log"
    sleep 120 &
    qemu=$!
    vm_watch_progress "$work/$1/channel.log" "$qemu" "$work/$1/stalled" &
    watcher=$!
}
# wait_gone PID S: true when PID has exited within S seconds.
wait_gone() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do alive "$1" || return 0; sleep 0.1; done
    return 1
}

# 1. A test that never reports: its limit is 2 x 1 + 2 = 4 s.
watch stalled-test
printf 'HLVM-HELLO release=x uptime=1\nHLVM-START cost timeout=1\n' >>"$work/stalled-test/channel.log"
check "a test without a result stops QEMU within its limit" wait_gone "$qemu" 15
check "the reason names the test and its timeout" \
    grep -q 'test cost sent no result for [0-9]* s (its own timeout 1 s' "$work/stalled-test/stalled"
echo "HLVM-START cost timeout=1" >"$work/stalled-test/console.log"
cause=$(vm_failure_cause "$work/stalled-test" 143 0 2850)
check "the run's failure is a hang naming the test (seen: $cause)" \
    grep -q '^hang: test cost sent no result' <<<"$cause"
wait "$watcher"

# 2. A guest that never says hello.
watch silent-boot
check "a guest that never says hello is stopped" wait_gone "$qemu" 15
check "the reason says no HLVM-HELLO" grep -q 'no HLVM-HELLO for' "$work/silent-boot/stalled"
wait "$watcher"

# 3. A guest that reports a marker every second (each step's limit: 2 or 4 s) for
# 5 s, then HLVM-DONE: the watch ends by itself and QEMU is left running.
watch progressing
for t in a b; do
    sleep 1; echo "HLVM-START $t timeout=1" >>"$work/progressing/channel.log"
    sleep 1; printf 'HLVM-FILE %s out 3\nYWJj\nHLVM-EOF\n' "$t" >>"$work/progressing/channel.log"
    echo "HLVM-RESULT $t rc=0 secs=1.5" >>"$work/progressing/channel.log"
done
sleep 1; echo "HLVM-DONE uptime=11" >>"$work/progressing/channel.log"
check "the watch ends after HLVM-DONE" wait_gone "$watcher" 10
check "a guest that keeps reporting is never stopped" alive "$qemu"
check "nothing is reported as stalled" test ! -e "$work/progressing/stalled"
kill "$qemu" 2>/dev/null

exit $failed
