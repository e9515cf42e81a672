# SPDX-License-Identifier: Apache-2.0
# Booting the guest and reading its results.  Sourced after common.sh.
#
# Two serial ports: ttyS0 is the kernel console (boot log, progress, panics);
# ttyS1 carries only the guest runner's result protocol, so a kernel message can
# never split a marker or a payload line.  Protocol (one item per line, ASCII):
#   HLVM-HELLO release=R uptime=S
#   HLVM-OUTPUT TEST BYTES         the test's stdout+stderr, as base64 lines, then HLVM-EOF
#   HLVM-FILE TEST NAME BYTES      a file the test left in its directory, the same way
#   HLVM-RESULT TEST rc=N secs=S
#   HLVM-DONE uptime=S
# QEMU's own exit status says nothing about the guest (a panic exits 0 too):
# only HLVM-RESULT and HLVM-DONE count, and QEMU runs under a hard timeout.

# Guest shape: VM_NODES, VM_CPUS, VM_MEMORY_MB (hotline vm --nodes/--cpus/--memory,
# whose defaults the CLI defines).  CPUs and memory are split evenly over the
# nodes, CPUs numbered node by node (4 CPUs, 2 nodes: 0-1 on node 0, 2-3 on
# node 1), one socket per node.

# The accelerator: KVM when it boots a kernel, TCG otherwise.  /dev/kvm opening
# is not enough: under some hypervisors (nested virtualisation) a KVM guest
# spins without printing a line.  So a 15 s probe boot of VMLINUX must show the
# kernel's banner on the console; the answer is kept for this host boot in the
# cache.  HOTLINE_VM_ACCEL overrides (e.g. tcg,thread=multi).
#
# TCG runs single-threaded: one host thread takes the vCPUs in turn.  With a
# thread per vCPU (QEMU 7.2), a vCPU can keep running a translation of kernel
# text made while another vCPU patched it (a tracepoint's static branch, a
# trampoline's or kprobe's call), holding the int3 the patch put in: the
# kernel's int3 handler sees the byte gone and sends the CPU back to the
# address, which traps again, on every CPU that gets there, for ever
# (tests/vm/README.md, "A hung guest"), or it dies of "Oops: int3".
VM_TCG_ACCEL=tcg,thread=single

vm_accel() {  # vm_accel VMLINUX
    local memo boot
    if [ -n "${HOTLINE_VM_ACCEL:-}" ]; then echo "$HOTLINE_VM_ACCEL"; return; fi
    if ! [ -c /dev/kvm ] || ! { exec 8<>/dev/kvm; } 2>/dev/null; then echo "$VM_TCG_ACCEL"; return; fi
    exec 8>&-
    boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
    memo=$VM_CACHE/kvm-probe
    if [ "$(sed -n 1p "$memo" 2>/dev/null)" != "$boot" ]; then
        mkdir -p "$VM_CACHE"
        if timeout -k 2 15 qemu-system-x86_64 -accel kvm -cpu host -m 256M -nodefaults -display none -no-reboot \
            -serial stdio -kernel "$1" -append "console=ttyS0 earlyprintk=ttyS0 panic=-1" </dev/null 2>/dev/null |
            grep -qam1 'Linux version'; then
            printf '%s\nkvm\n' "$boot" >"$memo"
        else
            printf '%s\ntcg\n' "$boot" >"$memo"
        fi
    fi
    # A memo of an older harness says which TCG; the choice is VM_TCG_ACCEL's.
    case $(sed -n 2p "$memo") in kvm) echo kvm ;; *) echo "$VM_TCG_ACCEL" ;; esac
}

# What the accelerator means for the numbers, said once per run.
vm_say_accel() {
    if [ "${VM_ACCEL%%,*}" = kvm ]; then
        vm_log "accelerator: KVM"
    else
        vm_log "accelerator: TCG (no working KVM): counts, handoffs and layouts are exact;" \
            "nanosecond figures are emulated CPU time, not timings"
    fi
}

# vm_qemu_args ACCEL: the machine's arguments for the shape above.
vm_qemu_args() {
    local accel=$1 per_node=$((VM_CPUS / VM_NODES)) mem=$((VM_MEMORY_MB / VM_NODES)) n cpu=max
    [ "${accel%%,*}" = kvm ] && cpu=host
    VM_QEMU_ARGS=(-accel "$accel" -cpu "$cpu" -m "$((mem * VM_NODES))M"
        -smp "$VM_CPUS,sockets=$VM_NODES,cores=$per_node,threads=1"
        -nodefaults -display none -no-reboot)
    for ((n = 0; n < VM_NODES; n++)); do
        VM_QEMU_ARGS+=(-object "memory-backend-ram,id=m$n,size=${mem}M"
            -numa "node,nodeid=$n,cpus=$((n * per_node))-$(((n + 1) * per_node - 1)),memdev=m$n")
    done
}

# panic=-1 + oops=panic + -no-reboot: any oops ends the run at once.  Watchdogs
# and RCU stall warnings are off because an emulated CPU starved by a busy host
# is not a kernel bug.  no_timer_check for the same reason: on a busy host the
# emulated IO-APIC timer can miss the boot-time check, and the kernel then
# panics with "IO-APIC + timer doesn't work" before init runs.  loglevel=7: the
# hung-task detector prints a blocked task's stack at KERN_INFO.  nokaslr: the
# CPU dump of a stalled guest (vm_dump_cpus) can then be read against the
# System.map of the kernel's Debian -dbg package.
VM_KERNEL_CMDLINE="console=ttyS0 panic=-1 oops=panic loglevel=7 mitigations=off nokaslr nowatchdog rcupdate.rcu_cpu_stall_suppress=1 no_timer_check"

# The console filter: everything into console.log; with LIVE=1 all of it to
# stderr as well, with LIVE=stream only the guest command's stderr (the lines
# between the runner's stream markers that are not kernel messages).
vm_console_filter() {  # vm_console_filter LOG LIVE
    tr -d '\r' | awk -v logf="$1" -v live="$2" '
        { print > logf; fflush(logf) }
        live == "1" { print > "/dev/stderr"; fflush("/dev/stderr"); next }
        /^hlvm: stream-start/ { on = 1; next }
        /^hlvm: stream-end/ { on = 0; next }
        /^hlvm: guest / && live == "stream" { print > "/dev/stderr"; fflush("/dev/stderr"); next }
        on && $0 !~ /^\[ *[0-9]+\.[0-9]+\]/ { print > "/dev/stderr"; fflush("/dev/stderr") }'
}

# The limit on one step of the guest without a new channel marker: booting to
# HLVM-HELLO or moving between tests (VM_STEP_LIMIT_S), or a test from its
# HLVM-START to its HLVM-RESULT (twice its own timeout plus VM_STEP_LIMIT_S, for
# a busy host and the transfer of its files).  A guest whose kernel livelocks
# runs no timer, so its own per-test timeout never fires and only QEMU's hard
# timeout (the sum of every test's) would end the run.
VM_STEP_LIMIT_S=${VM_STEP_LIMIT_S:-300}

# vm_step_limit MARKER: the seconds the guest may spend after MARKER (a channel
# line, "" before the first) before the next one.
vm_step_limit() {
    local t=${1##*timeout=}
    # The marker is the guest's text: only digits reach arithmetic (bash would
    # run a command substitution inside an array subscript there).
    case $1 in
        "HLVM-START "*) [[ $t =~ ^[0-9]{1,6}$ ]] || t=0; echo $((2 * 10#$t + VM_STEP_LIMIT_S)) ;;
        *) echo "$VM_STEP_LIMIT_S" ;;
    esac
}

# vm_watch_progress CHANNEL PID STALLED: stops PID (QEMU under `timeout`) and
# writes why to STALLED when the guest exceeds a step's limit; returns when PID
# exits or the guest reports HLVM-DONE.
vm_watch_progress() {
    local channel=$1 pid=$2 stalled=$3 marker="" last since now limit test tmo
    since=$(date +%s)
    while kill -0 "$pid" 2>/dev/null; do
        sleep "${VM_WATCH_POLL_S:-5}"
        last=$(tr -d '\r' <"$channel" 2>/dev/null | grep -a '^HLVM-\(HELLO\|START\|RESULT\|DONE\)' | tail -n 1)
        now=$(date +%s)
        case $last in HLVM-DONE*) return 0 ;; esac
        if [ "$last" != "$marker" ]; then
            marker=$last
            since=$now
            continue
        fi
        limit=$(vm_step_limit "$marker")
        [ $((now - since)) -le "$limit" ] && continue
        case $marker in
            "HLVM-START "*) read -r _ test tmo <<<"$marker"
                echo "test $(vm_printable "$test") sent no result for $((now - since)) s (its own timeout" \
                    "$(vm_printable "${tmo#timeout=}") s, which a livelocked guest kernel never reaches)" ;;
            "") echo "the guest sent no HLVM-HELLO for $((now - since)) s after QEMU started" ;;
            *) echo "the guest sent nothing for $((now - since)) s after: $(vm_printable "$marker")" ;;
        esac >"$stalled"
        vm_dump_cpus "${channel%/*}" >"${stalled%/*}/stalled-cpus.txt" 2>&1
        kill "$pid" 2>/dev/null
        return 0
    done
}

# vm_dump_cpus WORKDIR: what each vCPU of a stalled guest is doing, through the
# QEMU monitor on WORKDIR/monitor.{in,out} (a pipe: no socket tool needed).
# Three samples a second apart of every CPU's RIP and RSP and of the kernel text
# addresses among the 48 words on top of its stack (a return-address trail;
# frame pointers are not relied on).  Read with the System.map of the kernel's
# -dbg package (tests/vm/README.md, "A hung guest").
vm_dump_cpus() {
    local work=$1 reader mon n cpu
    if [ ! -p "$work/monitor.in" ] || [ ! -p "$work/monitor.out" ]; then
        echo "no QEMU monitor in $work"
        return 0
    fi
    cat "$work/monitor.out" >"$work/monitor.log" &
    reader=$!
    # Read-write: opening a FIFO to write blocks until it has a reader, and
    # QEMU may be gone.
    exec {mon}<>"$work/monitor.in"
    for n in 1 2 3; do
        echo "info registers -a" >&"$mon"
        for ((cpu = 0; cpu < VM_CPUS; cpu++)); do
            # shellcheck disable=SC2016  # $esp is the monitor's (the full RSP), not the shell's
            printf 'cpu %d\nx /48gx $esp\n' "$cpu" >&"$mon"
        done
        sleep 1
    done
    sleep 1
    exec {mon}>&-
    kill "$reader" 2>/dev/null
    wait "$reader" 2>/dev/null
    vm_monitor_summary <"$work/monitor.log"
}

# vm_monitor_summary: the monitor's answers (stdin) as one line per CPU and
# sample: RIP, RSP and the kernel text addresses on top of its stack.  A
# command's echo ends the line it is on (the monitor redraws it as it is typed).
vm_monitor_summary() {
    sed 's/\x1b\[[0-9]*[A-Z]//g' | tr -d '\r' | awk '
        function flush() {
            if (inx && cur != "") printf "cpu %s rip %s rsp %s stack%s\n", cur, rip[cur], rsp[cur], trail
            inx = 0; trail = ""
        }
        /info registers -a$/ { flush(); regs = 1; next }
        /x \/48gx \$esp$/ { flush(); regs = 0; inx = 1; next }
        /^\(qemu\).*cpu [0-9]+$/ { flush(); regs = 0; cur = $NF; next }
        regs && /^CPU#[0-9]+/ { rc = substr($1, 5); next }
        regs && /^RIP=/ { rip[rc] = substr($1, 5) }
        regs && /RSP=/ { for (i = 1; i <= NF; i++) if ($i ~ /^RSP=/) rsp[rc] = substr($i, 5) }
        inx && /^[0-9a-f]+: 0x/ { for (i = 2; i <= NF; i++) if ($i ~ /^0xffffffff8/) trail = trail " " substr($i, 3) }
        END { flush() }'
}

# vm_boot VMLINUX INITRD WORKDIR TIMEOUT_S LIVE: writes WORKDIR/console.log and
# WORKDIR/channel.log; sets VM_QEMU_RC to QEMU's exit status (124 = hard timeout).  QEMU runs
# in the background and is waited for, so a signal's trap runs at once (bash
# defers traps while a foreground command runs); VM_QEMU_PID lets it stop QEMU.
vm_boot() {
    local vmlinux=$1 initrd=$2 work=$3 tmo=$4 live=$5
    rm -f "$work/console.log" "$work/channel.log"
    mkfifo "$work/console.fifo"
    rm -f "$work/monitor.in" "$work/monitor.out"
    mkfifo "$work/monitor.in" "$work/monitor.out"
    vm_console_filter "$work/console.log" "$live" <"$work/console.fifo" &
    VM_FILTER_PID=$!
    timeout -k 5 "$tmo" qemu-system-x86_64 "${VM_QEMU_ARGS[@]}" \
        -kernel "$vmlinux" -initrd "$initrd" -append "$VM_KERNEL_CMDLINE" \
        -serial stdio -serial "file:$work/channel.log" -monitor "pipe:$work/monitor" </dev/null >"$work/console.fifo" 2>&1 &
    VM_QEMU_PID=$!
    rm -f "$work/stalled"
    vm_watch_progress "$work/channel.log" "$VM_QEMU_PID" "$work/stalled" &
    VM_WATCH_PID=$!
    VM_QEMU_RC=0
    wait "$VM_QEMU_PID" || VM_QEMU_RC=$?
    VM_QEMU_PID=
    kill "$VM_WATCH_PID" 2>/dev/null
    wait "$VM_WATCH_PID" 2>/dev/null || true
    VM_WATCH_PID=
    wait "$VM_FILTER_PID" || true
    VM_FILTER_PID=
    rm -f "$work/console.fifo" "$work/monitor.in" "$work/monitor.out"
}

# vm_collect WORKDIR RESULTS: decodes channel.log into RESULTS/TEST/{rc,secs,output.txt,files/*}.
# A file whose decoded size differs from its announced size is dropped and noted
# in RESULTS/TEST/transfer-errors.  Prints the number of HLVM-DONE markers seen.
vm_collect() {
    local work=$1 res=$2 b64 name
    [ -f "$work/channel.log" ] || { echo 0; return; }
    tr -d '\r' <"$work/channel.log" | awk -v res="$res" '
        function safe(s) { return s ~ /^[A-Za-z0-9._-]+$/ && s != "." && s != ".." }
        /^HLVM-FILE / {
            if (!safe($2) || !safe($3)) { skip = 1; next }
            dir = res "/" $2; system("mkdir -p \"" dir "/files\"")
            out = dir "/files/" $3 ".b64"; size[out] = $4; printf "" > out; infile = 1; next
        }
        /^HLVM-OUTPUT / {
            if (!safe($2)) { skip = 1; next }
            dir = res "/" $2; system("mkdir -p \"" dir "\"")
            out = dir "/output.txt.b64"; size[out] = $3; printf "" > out; infile = 1; next
        }
        /^HLVM-EOF$/ { if (infile && !skip) { close(out); print size[out] > (out ".size"); close(out ".size") }
                       infile = 0; skip = 0; next }
        infile { if (!skip) print > out; next }
        /^HLVM-RESULT / {
            if (!safe($2)) next
            dir = res "/" $2; system("mkdir -p \"" dir "\"")
            for (i = 3; i <= NF; i++) { split($i, kv, "="); print kv[2] > (dir "/" kv[1]); close(dir "/" kv[1]) }
            next
        }
        /^HLVM-HELLO / { for (i = 2; i <= NF; i++) { split($i, kv, "="); print kv[2] > (res "/guest-" kv[1]) } next }
        /^HLVM-DONE/ { done++; split($2, kv, "="); print kv[2] > (res "/guest-done-uptime") }
        END { print done + 0 > (res "/.done") }'
    for b64 in "$res"/*/files/*.b64 "$res"/*/output.txt.b64; do
        [ -e "$b64" ] || continue
        local f=${b64%.b64} want got
        want=$(cat "$b64.size" 2>/dev/null || echo "no HLVM-EOF:")
        base64 -d <"$b64" >"$f" 2>/dev/null
        got=$(stat -c %s "$f")
        rm -f "$b64" "$b64.size"
        if [ "$want" != "$got" ]; then
            name=${f#"$res"/}
            name=${name%%/*}
            echo "$(basename "$f"): announced $want bytes, decoded $got" >>"$res/$name/transfer-errors"
            rm -f "$f"
        fi
    done
    cat "$res/.done"
}

# Lines of the console that mean the guest kernel died or went wrong.
vm_console_verdict() {  # vm_console_verdict CONSOLE_LOG: prints the first fatal line, if any
    grep -m1 -aE 'Kernel panic|Oops:|BUG: unable to handle|general protection fault|kernel BUG at' "$1" || true
}
