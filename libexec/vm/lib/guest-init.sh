# SPDX-License-Identifier: Apache-2.0
# PID 1 of the `hotline vm` guest: mount what hotline needs, run every planned
# script with its own timeout, send each one's output, files and exit status to
# the host over ttyS1 (protocol in lib/qemu.sh), then power off.
# Plan lines: NAME TIMEOUT [MODE].  MODE "stream" (a hotline command line): its
# stderr goes to the console between stream markers, which the host shows as it
# comes, and only its stdout is sent back as output; otherwise stdout and stderr
# together are (a test script).
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec 0</dev/null 1>/dev/console 2>&1
mount -t securityfs securityfs /sys/kernel/security
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
# The few modules the tests need (veth for the scenarios), from the booted
# kernel's own package.
for m in /hlvm/modules/*.ko; do
    insmod "$m" || echo "hlvm: insmod $m failed"
done
ip link set lo up
. /hlvm/env

log() { echo "hlvm: $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# The result channel: raw, so nothing rewrites the bytes; held open on fd 3 for
# the whole run (tests never inherit it) and closed before power-off, which
# waits until the UART has sent everything.
stty -F /dev/ttyS1 raw -echo 115200 || log "stty on ttyS1 failed"
exec 3>/dev/ttyS1
send() {  # send HEADER FILE: one payload, base64 so no byte can look like a marker
    echo "$1 $(wc -c <"$2")" >&3
    base64 "$2" >&3
    echo "HLVM-EOF" >&3
}

log "guest $(uname -r), lockdown: $(cat /sys/kernel/security/lockdown 2>/dev/null || echo none),"\
    "cpus $(nproc), nodes $(ls -d /sys/devices/system/node/node[0-9]* | wc -l)"
echo "HLVM-HELLO release=$(uname -r) uptime=$(uptime_s)" >&3

while read -r name tmo mode; do
    [ -n "$name" ] || continue
    mkdir -p "/out/$name"
    cd "/out/$name" || continue  # no HLVM-RESULT: the host reports the test as missing
    log "[$name] start (timeout ${tmo}s)"
    # For the host's watchdog: a kernel that livelocks never lets `timeout` fire.
    echo "HLVM-START $name timeout=$tmo" >&3
    t0=$(uptime_s)
    # shellcheck disable=SC3040 # busybox ash has pipefail
    set -o pipefail
    # Output goes to the console as it happens and to a log sent afterwards.
    if [ "$mode" = stream ]; then
        echo "hlvm: stream-start"
        timeout -s KILL "$tmo" sh "/hlvm/tests/$name.sh" 3>&- >"/tmp/$name.log" 2>/dev/console
        rc=$?
        echo "hlvm: stream-end"
    else
        timeout -s KILL "$tmo" sh "/hlvm/tests/$name.sh" 3>&- 2>&1 | tee "/tmp/$name.log"
        rc=$?
    fi
    # shellcheck disable=SC3040
    set +o pipefail
    t1=$(uptime_s)
    cd /
    send "HLVM-OUTPUT $name" "/tmp/$name.log"
    for f in /out/"$name"/* /out/"$name"/.[!.]*; do
        [ -f "$f" ] && send "HLVM-FILE $name ${f##*/}" "$f"
    done
    echo "HLVM-RESULT $name rc=$rc secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" >&3
    log "[$name] rc=$rc"
done </hlvm/tests/plan

echo "HLVM-DONE uptime=$(uptime_s)" >&3
exec 3>&-
log "all tests done at $(uptime_s) s"
poweroff -f
