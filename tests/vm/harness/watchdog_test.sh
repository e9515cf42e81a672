#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The VM harness's progress watch (libexec/vm/lib/qemu.sh, vm_watch_progress)
# without QEMU: a `sleep` stands in for it and the test writes the channel.
#   - a test that starts and never reports: the stand-in is stopped and the
#     reason names the test, and vm_failure_cause reports a hang;
#   - a guest that never says hello: stopped, and the reason says so;
#   - a guest that keeps reporting within each step's limit: never stopped;
#   - a stalled guest's vCPUs are sampled through the QEMU monitor before it is
#     stopped (a stand-in answers on the monitor's pipe as QEMU 7.2 does).
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
VM_STEP_LIMIT_S=3
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
    echo "process $1 still running after $2 s"
    return 1
}
# The `sleep` the watch PID is waiting in between two reads of the channel, if any.
poll_sleep() { pgrep -P "$1" -x sleep; }
# wait_polled PID N: returns once the watch PID has read the channel N times since
# this call, that is once it has begun N new poll sleeps (one more when it was
# between two sleeps at the call: its read then may have come first); false when
# the watch ends first or after 15 s.
wait_polled() {
    local seen need=$2 now i
    seen=$(poll_sleep "$1")
    [ -n "$seen" ] || need=$((need + 1))
    for ((i = 0; i < 300; i++)); do
        alive "$1" || { echo "the watch $1 ended before reading the channel $2 times"; return 1; }
        now=$(poll_sleep "$1")
        if [ -n "$now" ] && [ "$now" != "$seen" ]; then
            seen=$now
            ((--need == 0)) && return 0
        fi
        sleep 0.05
    done
    echo "the watch $1 did not read the channel $2 times within 15 s"
    return 1
}

# 1. A test that never reports: its limit is 2 x 1 + 3 = 5 s.
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

# 3. A guest that sends each marker after the watch has read the one before twice
# (so the watch checks each against its step's limit: 3 or 5 s, against 1 or 2 s
# seen) for ten seconds or more, and then HLVM-DONE: the watch ends by itself and
# QEMU is left running.
watch progressing
report() {  # report LINES: appended to the channel after two reads of what it holds
    wait_polled "$watcher" 2 && printf '%s' "$1" >>"$work/progressing/channel.log"
}
for t in a b; do
    report "HLVM-START $t timeout=1"$'\n'
    report "HLVM-FILE $t out 3"$'\nYWJj\nHLVM-EOF\n'"HLVM-RESULT $t rc=0 secs=1.5"$'\n'
done
report $'HLVM-DONE uptime=11\n'
check "the watch ends after HLVM-DONE" wait_gone "$watcher" 10
check "a guest that keeps reporting is never stopped" alive "$qemu"
check "nothing is reported as stalled" test ! -e "$work/progressing/stalled"
kill "$qemu" 2>/dev/null

# 4. A stalled guest with a monitor: a stand-in answers `info registers -a`,
# `cpu N` and `x /48gx $esp` on $work/dump/monitor.{in,out} the way QEMU's
# monitor does (echoing each command with cursor escapes); CPU c is at RIP
# ffffffff8100000c with RSP ffffc9000000c000, whose words are a return address
# ffffffff8100100c and a non-text value.
fake_monitor() {  # fake_monitor DIR
    local line cur=0 c esc=$'\e[K\e[D'
    exec >"$1/monitor.out" <"$1/monitor.in"
    echo "QEMU 7.2.22 monitor - type 'help' for more information"
    while read -r line; do
        printf '(qemu) %s%s\r\n' "${line:0:1}$esc" "$line"
        case $line in
            "info registers -a")
                for ((c = 0; c < VM_CPUS; c++)); do
                    printf 'CPU#%d\r\nRAX=0000000000000001 RBX=0000000000000002\r\n' "$c"
                    printf 'RSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 RSP=ffffc900000%d0000\r\n' "$c"
                    printf 'RIP=ffffffff8100000%d RFL=00000002 [-------] CPL=0 II=0 A20=1 SMM=0 HLT=0\r\n' "$c"
                done ;;
            "cpu "*) cur=${line#cpu } ;;
            'x /48gx $esp') printf 'ffffc900000%d0000: 0xffffffff8100100%d 0x000000000000002a\r\n' "$cur" "$cur" ;;
        esac
    done
}
VM_CPUS=4
mkdir -p "$work/dump"
mkfifo "$work/dump/monitor.in" "$work/dump/monitor.out"
fake_monitor "$work/dump" &
monitor=$!
watch dump
printf 'HLVM-HELLO release=x uptime=1\nHLVM-START proxy-nodes timeout=1\n' >>"$work/dump/channel.log"
check "a stalled guest with a monitor is stopped" wait_gone "$qemu" 30
dump=$work/dump/stalled-cpus.txt
for c in 0 1 2 3; do
    check "CPU $c is sampled three times with its RIP, RSP and stack trail" \
        test "$(grep -c "^cpu $c rip ffffffff8100000$c rsp ffffc900000${c}0000 stack ffffffff8100100$c\$" "$dump")" = 3
done
check "only kernel text addresses make the trail" test "$(grep -c 2a "$dump")" = 0
kill "$monitor" 2>/dev/null
wait "$watcher"

exit $failed
