#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The third red-team round against the real binary, as root (issue 40's list):
# `hotline vm` as a trust boundary (a guest writing its own result channel,
# hostile --keep and TMPDIR paths, output paths, memory, SIGKILL), documents
# from outside, strings reaching the terminal, and the smaller items.  Each
# case counts; a break is any case that fails.  Before and after: the knobs
# hotline's catalog names and every IRQ's affinity are the same.
#   round3.sh HOTLINE FIXTURES_DIR VM_HARNESS_TESTS
set -u
hotline=$(realpath "$1")
fixtures=$(realpath "$2")
vm_harness=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
CHECK_VERBOSE=1
. "$here/../../lib/checks.sh"
[ "$(id -u)" = 0 ] || { echo "FAIL: round3 needs root (it misuses the binary as root)" >&2; exit 1; }

work=$(mktemp -d /tmp/hl-round3.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
mkdir tmp
export TMPDIR=$work/tmp

knobs() {
    grep -ho 'sysctl *= *"[^"]*"' "$here/../../../src/fix/builtin_fixes.toml" | sed 's/.*"\(.*\)"/\1/' | sort -u |
        while read -r k; do echo "$k $(sysctl -n "$k" 2>&1)"; done
    for f in /proc/irq/*/smp_affinity_list; do echo "$f $(cat "$f" 2>&1)"; done
}
before=$(knobs)
# rc_of CMD...: the exit status, bounded in time (a hang is a break).
rc_of() { timeout 300 "$@" >"$work/out.txt" 2>"$work/err.txt" </dev/null; echo $?; }
said() { grep -qF -- "$1" "$work/err.txt"; }
usage_saying() { [ "$1" = 64 ] && said "$2"; }  # usage_saying RC TEXT
no_pwned() { [ -z "$(find "$work" /tmp -maxdepth 3 -type f -name 'PWNED*' 2>/dev/null)" ]; }

# ---------------------------------------------------------------- 1, 2: one boot, a hostile guest
up=../../../../../../../../../..
{
    echo "# hlvm-timeout: 60"
    echo "echo ok >result.txt"
    printf 'printf "%%s\\n" %s %s eHl6 HLVM-EOF %s eHl6 HLVM-EOF %s >/dev/ttyS1\n' \
        "'HLVM-RESULT guest $up$work/PWNED-RESULT=x rc=0'" "'HLVM-FILE guest $up$work/PWNED-FILE 3'" \
        "'HLVM-OUTPUT $up$work/PWNED-OUTPUT 3'" "'HLVM-START guest timeout=a[\$(touch $work/PWNED-WATCH)]'"
    echo "sleep 12"
} >guest.sh
keep="$work/kept \$(touch $work/PWNED-KEEP), x"
mkdir -p "$work/t \$(touch $work/PWNED-TMPDIR),x"
rc=$(TMPDIR="$work/t \$(touch $work/PWNED-TMPDIR),x" rc_of "$hotline" vm --kernel debian:6.12 --keep "$keep" --script guest.sh)
assert "1: a guest writing its own results: the run still ends well (exit $rc)" test "$rc" = 0
assert "1: a result key naming a host path creates nothing" test ! -e "$work/PWNED-RESULT"
assert "1: a file named by a host path creates nothing" test ! -e "$work/PWNED-FILE"
assert "1: an output of an unplanned test creates nothing" test ! -e "$work/PWNED-OUTPUT"
assert "1: a marker's timeout is never evaluated by a host shell" test ! -e "$work/PWNED-WATCH"
assert "1: the guest's own result comes back" test "$(cat "$keep/guest/files/result.txt" 2>/dev/null)" = ok
assert "2: --keep with \$(...), a space and a comma runs nothing and works" test ! -e "$work/PWNED-KEEP" -a -f "$keep/console.log"
assert "2: TMPDIR with \$(...), a space and a comma runs nothing" test ! -e "$work/PWNED-TMPDIR"

# ---------------------------------------------------------------- 3: output paths, refused before a boot
echo "a file root must not overwrite" >victim
mkdir -m 1777 sticky
ln -s "$work/victim" sticky/r.json
mkfifo fifo.json
rc=$(rc_of "$hotline" vm -- record -d 1 -o "$work/sticky/r.json")
assert "3: -o onto a link planted in a sticky directory: usage error (exit $rc)" test "$rc" = 64
assert "3: the link's target is unchanged" test "$(cat victim)" = "a file root must not overwrite"
rc=$(rc_of "$hotline" vm -- record -d 1 -o "$work/fifo.json")
assert "3: -o onto a FIFO: refused at once (exit $rc)" test "$rc" = 64
rc=$(rc_of "$hotline" vm -- record -d 1 -o "$work/missing/dir/r.json")
assert "3: -o into a missing directory: refused (exit $rc), nothing created" test "$rc" = 64 -a ! -e "$work/missing"

# ---------------------------------------------------------------- 4: --keep of a directory with other content
mkdir other && echo "kernel=x" >other/kernel.env && echo precious >other/data
rc=$(rc_of "$hotline" vm --keep "$work/other" -- probe)
assert "4: --keep of a foreign directory: refused (exit $rc), its content kept" \
    test "$rc" = 64 -a "$(cat other/data)" = precious -a -f other/kernel.env

# ---------------------------------------------------------------- 5: the kernel cache
assert "5: cache digests, links, aliases and .deb keys (vm_harness_tests KernelCache.*)" \
    bash -c "'$vm_harness' --gtest_filter='KernelCache.*' >/dev/null 2>&1"

# ---------------------------------------------------------------- 6: memory, images, SIGKILL
rc=$(rc_of "$hotline" vm --memory 128M -- probe)
assert "6: --memory 128M on 2 nodes: usage error (exit $rc)" usage_saying "$rc" "per node"
rc=$(rc_of "$hotline" vm --memory 100000G -- probe)
assert "6: --memory past the host's RAM: usage error (exit $rc)" usage_saying "$rc" "RAM"
rc=$(rc_of "$hotline" vm --nodes 1 --cpus 1 --memory 200M -- probe)
assert "6: --memory below what the initramfs needs: said before the boot (exit $rc)" usage_saying "$rc" "too small"
echo "not a kernel" >bzImage
rc=$(rc_of "$hotline" vm --kernel "$work/bzImage" -- probe)
assert "6: a kernel image without --modules: usage error (exit $rc)" usage_saying "$rc" "--modules"
set -m
"$hotline" vm --kernel debian:6.12 -- record -d 600 --workload churn >/dev/null 2>&1 &
pid=$!
set +m
for _ in $(seq 1 120); do pgrep -f "[q]emu-system-x86_64.*$TMPDIR" >/dev/null && break; sleep 1; done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
for _ in $(seq 1 30); do pgrep -f "[q]emu-system-x86_64.*$TMPDIR" >/dev/null || break; sleep 1; done
assert "6: SIGKILL of hotline takes QEMU with it" bash -c "! pgrep -f '[q]emu-system-x86_64.*$TMPDIR'"
rc=$(rc_of "$hotline" vm --kernel debian:6.12 -- probe --json)
assert "6: the next run succeeds (exit $rc) and removes what the killed one left" \
    test "$rc" = 0 -a -z "$(ls -A "$TMPDIR")"

# ---------------------------------------------------------------- 7: recordings from outside
for v in -1 -1e8 3e9 1e308 1e9; do
    jq ".topology.cpus[0].node = $v" "$fixtures/golden/recording.json" >bad.json
    rc=$(rc_of "$hotline" report bad.json -o "$work/page.html")
    assert "7: a recording whose CPU 0 is on node $v: refused, no crash (exit $rc)" usage_saying "$rc" "node id"
done
jq '.intervals[0].targets[0].handoffs.node_matrix = [range(300) | [range(300) | 1]]' "$fixtures/golden/recording.json" >wide.json
rc=$(rc_of "$hotline" report wide.json -o "$work/page.html")
assert "7: 300 x 300 node matrix rows: refused or bounded (exit $rc)" \
    bash -c "[ $rc = 64 ] || [ \$(stat -c %s '$work/page.html') -lt \$((16 * \$(stat -c %s '$work/wide.json') + 262144)) ]"

# ---------------------------------------------------------------- 8: strings from outside at the terminal
jq '.kernel.release = "6.18\u001b]0;owned\u0007\u001b[2J"' "$fixtures/diagnose/host-quiet.json" >esc.json
"$hotline" diagnose esc.json >diag.txt 2>&1
assert "8: an escape sequence in kernel.release never reaches the terminal raw" bash -c "! grep -q $'\x1b' diag.txt"
mkdir rules && printf '[[rule]]\nname = "x"\nsummary = "s"\nmeaning = "m"\n[[rule.when]]\nmetric = "work.remote_share"\nabove = nan\n' >rules/r.toml
rc=$(rc_of "$hotline" diagnose "$fixtures/diagnose/host-quiet.json" --fixes "$work/rules")
assert "8: a rule threshold of nan: refused with the line (exit $rc)" usage_saying "$rc" "finite"

# ---------------------------------------------------------------- 10, 11: configs and the smaller items
printf '[tls]\ncert = "%s"\nkey = "%s"\n' "$work/fifo.json" "$work/fifo.json" >serve.toml
rc=$(rc_of "$hotline" serve --check-config --config "$work/serve.toml")
assert "10: a FIFO as TLS certificate: refused, not waited on (exit $rc)" test "$rc" = 64
rc=$(rc_of "$hotline" report "$fixtures/golden/recording.json" -o '')
assert "11: report -o '': usage error (exit $rc)" test "$rc" = 64
rc=$(rc_of "$hotline" record --owner-map-size 0 -d 1)
assert "11: --owner-map-size 0: usage error (exit $rc)" test "$rc" = 64
mkdir jdir
rc=$(rc_of "$hotline" restore --journal-dir "$work/jdir")
assert "11: restore with no journal creates nothing in the directory (exit $rc)" test -z "$(ls -A jdir)"

assert "no case wrote where a guest or a path named" no_pwned
# The VM tier runs beside the host tier, whose tests change knobs and restore
# them: a difference that lasts a minute is hotline's, a passing one theirs.
for _ in $(seq 1 60); do [ "$before" = "$(knobs)" ] && break; sleep 1; done
assert "the catalog's knobs and every IRQ's affinity are as before" test "$before" = "$(knobs)"
echo "round 3: $checks cases, $failures breaks"
checks_done
