#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The hostile host suite: the real hotline, as root, used the way an attacker or
# a careless administrator would (the defect list of issue 16).  Every case must
# be refused with a clear message; after all of them no knob in the host or in
# any namespace differs from before, no BPF program of hotline is loaded, no
# file outside the scratch dir's journal and requested outputs changed, and no
# hl-* namespace is left.
#   hostile_test.sh HOTLINE FAULTFS_LIB FIXTURES_DIR
# Run under the host lock: flock /work/.host.lock ...
set -u
hotline=$(realpath "$1")
faultfs=$(realpath "$2")
fixtures=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/checks.sh"

[ "$(id -u)" = 0 ] || { echo "FAIL: the hostile suite needs root (it misuses the binary as root): run it with sudo" >&2; exit 1; }
mount | grep -q tracefs || mount -t tracefs nodev /sys/kernel/tracing

scratch=$(mktemp -d /tmp/hl-hostile.XXXXXX)
ns=hl-hostile-$$
victim_ns=hl-hostile-v$$
swappiness=$(sysctl -n vm.swappiness)
cleanup() {
    # The edited journal below must not restore vm.swappiness; if it did, undo it.
    [ "$(sysctl -n vm.swappiness)" = "$swappiness" ] || sysctl -qw vm.swappiness="$swappiness"
    ip netns del "$ns" 2>/dev/null
    ip netns del "$victim_ns" 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT
ip netns add "$ns" && ip netns add "$victim_ns" || { echo "cannot create namespaces"; exit 1; }
out=$scratch/out        # requested outputs and journals: allowed to change
mkdir -p "$out"


# ---------------------------------------------------------------- snapshots
catalog_knobs() {  # sysctl names every catalog used here can name
    # Regular files only: some catalogs here are a FIFO and /dev/zero.
    find "$here/../../src/fix/builtin_fixes.toml" "$fixtures/fixes" "$scratch/catalogs" -name '*.toml' -type f \
        -exec grep -ho 'sysctl *= *"[^"]*"' {} + | sed 's/.*"\(.*\)"/\1/' | sort -u
    echo vm.swappiness; echo kernel.randomize_va_space; echo net.ipv4.ip_forward
}
knob_state() {  # every catalog knob in the host and in each namespace, and IRQ affinities
    local k
    for k in $(catalog_knobs); do
        echo "host $k $(sysctl -n "$k" 2>&1 | tr '\t\n' '  ')"
        for n in $(ip netns list | awk '{print $1}'); do
            echo "$n $k $(ip netns exec "$n" sysctl -n "$k" 2>&1 | tr '\t\n' '  ')"
        done
    done
    for f in /proc/irq/*/smp_affinity_list; do echo "$f $(cat "$f" 2>&1)"; done
    echo "thp $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"
}
bpf_state() { bpftool prog show 2>/dev/null | grep -c ' name hl_' ; }
netns_state() { ip netns list | awk '{print $1}' | grep '^hl-' | grep -v "^$ns\$" | grep -v "^$victim_ns\$" | sort; }
# Paths an attacker would aim at: what they are, their mode and owner (others
# on the machine write into the directories and devices, so not their times),
# and the files' contents.
sensitive=(/dev/null /dev/zero /tmp /run /var/tmp /root /var/lib/hotline /etc/passwd /etc/shadow /etc/hosts /etc/hostname)
file_state() {
    (cd "$scratch" && find . -path ./out -prune -o -path "$journal_state_excluded" -prune -o -printf '%p %y %m %u %s %T@ %l\n' | sort)
    for p in "${sensitive[@]}"; do
        stat -c '%n %F %a %u %g %t:%T %i' "$p" 2>&1
        [ -f "$p" ] && sha1sum "$p"
    done
}

# ---------------------------------------------------------------- helpers
last=""
# refused DESCRIPTION EXPECTED_TEXT CMD...: exits non-zero by itself (no
# timeout, no signal) and says EXPECTED_TEXT.
refused() {
    local what=$1 want=$2
    shift 2
    [ "${CHECK_VERBOSE:-0}" = 1 ] && echo "-- $what"
    last=$(timeout "${timeout_s:-60}" "$@" 2>&1 </dev/null)
    local rc=$?
    assert "$what: exits with an error (status $rc)" test "$rc" -ne 0 -a "$rc" -lt 124
    assert "$what: says \"$want\"" grep -qF -- "$want" <<<"$last"
    [ "${CHECK_VERBOSE:-0}" = 1 ] && echo "   [$rc] $(head -c 300 <<<"$last" | tr '\n' ' ')"
    return 0
}
same() { [ "$1" = "$2" ]; }
fp() { stat -c '%F %a %s %Y %i' "$1" 2>&1; [ -f "$1" ] && [ -r "$1" ] && sha1sum <"$1"; }

# ---------------------------------------------------------------- fixtures
rec=$fixtures/golden/diff_baseline.json
cand=$fixtures/golden/diff_candidate.json
fixdir=$fixtures/fixes
diff_ok=("$hotline" diff "$rec" "$cand" --expect dst-refcnt-false-sharing)
mkdir -p "$scratch/paths" "$scratch/catalogs" "$scratch/inputs"
P=$scratch/paths
mknod "$P/chardev" c 1 3
mkfifo "$P/fifo"
echo "target of a planted link" >"$P/victim"
ln -s "$P/victim" "$P/symlink"
ln -s "$P/nowhere" "$P/dangling"
mkdir "$P/dir"
echo "read-only" >"$P/readonly"; chmod 444 "$P/readonly"
printf 'previous\n' >"$out/previous.json"

catalog() {  # catalog NAME SYSCTL_OR_SYSFS_LINE SCOPE
    mkdir -p "$scratch/catalogs/$1"
    cat >"$scratch/catalogs/$1/fix.toml" <<EOF
[[fix]]
name = "hostile-$1"
mode = "runtime"
summary = "hostile catalog entry"
description = "hostile"
scenarios = ["dst-refcount"]
  [[fix.change]]
  $2
  value = "$4"
  scope = "$3"
  [[fix.expect]]
  metric = "scenario.ops_per_s"
  up = "1%"
EOF
}
catalog netns-lie-sysctl 'sysctl = "vm.swappiness"' netns 7
catalog netns-lie-sysfs 'sysfs = "kernel/mm/transparent_hugepage/enabled"' netns never
catalog traversal-sysctl 'sysctl = "net.ipv4.../../../../etc/hostname"' netns x
catalog traversal-slash 'sysctl = "net/ipv4/../../../etc/hostname"' netns x
catalog traversal-sysfs 'sysfs = "../../etc/hostname"' global x
catalog fin-timeout 'sysctl = "net.ipv4.tcp_fin_timeout"' netns 58
mkdir -p "$scratch/catalogs/devzero" "$scratch/catalogs/fifo"
ln -s /dev/zero "$scratch/catalogs/devzero/fix.toml"
mkfifo "$scratch/catalogs/fifo/fix.toml"

I=$scratch/inputs
python3 - "$rec" "$I" <<'EOF'
import json, sys, copy
src, d = sys.argv[1], sys.argv[2]
base = json.load(open(src))
def save(name, doc): json.dump(doc, open(f"{d}/{name}", "w"))
w = copy.deepcopy(base)
m = w["analysis"]["interval_metrics"][0]
m[next(iter(m))] = {"wrong": ["type"]}
save("wrong-type.json", w)
s = copy.deepcopy(base); s["schema"] = "not-hotline"; save("wrong-schema.json", s)
v = copy.deepcopy(base); v["version"] = 999; save("wrong-version.json", v)
open(f"{d}/deep.json", "w").write('{"a":' * 70000 + '1' + '}' * 70000)
open(f"{d}/truncated.json", "w").write(open(src).read()[:200])
open(f"{d}/huge.json", "w").write('{"x":"' + 'A' * (70 << 20) + '"}')
EOF
mkfifo "$I/fifo.json"
mkdir "$I/dir.json"
printf '{"bad": ' >"$I/not-json.json"
echo '[{"mode":"diff"}]' >"$I/array.json"

# Journal directories an attacker or a careless administrator would give.
J=$scratch/journals
mkdir -p "$J"
mkdir -m 0777 "$J/world-writable"
mkdir -m 0700 "$J/other-user"; chown nobody "$J/other-user"
mkdir -m 0700 "$J/real"; ln -s "$J/real" "$J/linked"
mkdir -m 0700 "$J/lock-link"; ln -s "$P/victim" "$J/lock-link/lock"
mkdir -m 0700 "$J/journal-link"; ln -s "$P/victim" "$J/journal-link/journal.json"
mkdir -m 0700 "$J/journal-fifo"; mkfifo "$J/journal-fifo/journal.json"
mkdir -m 0700 "$J/journal-dir"; mkdir "$J/journal-dir/journal.json"
mkdir -m 0700 "$J/journal-devzero"; ln -s /dev/zero "$J/journal-devzero/journal.json"

# Journals that were planted or damaged are set aside inside their directory
# (the journal's own files): only the planted links' target is compared.
journal_state_excluded='./journals/journal-*'
before_knobs=$(knob_state)
before_bpf=$(bpf_state)
before_netns=$(netns_state)
before_files=$(file_state)
victim_fp=$(fp "$P/victim")

# ---------------------------------------------------------------- 1. output paths
for opt in -o --junit --html; do
    for kind in chardev fifo symlink dangling dir readonly; do
        f=$P/$kind
        was=$(fp "$f")
        refused "diff $opt into a $kind" "refusing to write" "${diff_ok[@]}" "$opt" "$f"
        assert "diff $opt into a $kind: the $kind is unchanged" same "$was" "$(fp "$f")"
    done
    refused "diff $opt into a missing directory" "does not exist" "${diff_ok[@]}" "$opt" "$out/missing/x"
done
refused "record -o /dev/null" "refusing to write" "$hotline" record -d 1s -o /dev/null
refused "record -o into a missing directory, before recording" "does not exist" "$hotline" record -d 30s -o "$out/missing/r.json"
refused "report -o onto a symlink" "refusing to write" "$hotline" report "$rec" -o "$P/symlink"
refused "diagnose -o onto a FIFO" "refusing to write" "$hotline" diagnose "$fixtures/diagnose/host-quiet.json" -o "$P/fifo"

# ---------------------------------------------------------------- 2. recordings
refused "diff of a wrong-typed recording" "wrong-type.json" "$hotline" diff "$I/wrong-type.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of a 70 000-level recording" "nested deeper" "$hotline" diff "$I/deep.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of a 70 MB recording" "larger than the limit" "$hotline" diff "$I/huge.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of a FIFO" "not a regular file" "$hotline" diff "$I/fifo.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of a directory" "directory" "$hotline" diff "$I/dir.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of /dev/zero" "not a regular file" "$hotline" diff /dev/zero "$cand" --expect dst-refcnt-false-sharing
refused "diff of a truncated recording" "truncated.json" "$hotline" diff "$I/truncated.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of another schema" "schema" "$hotline" diff "$I/wrong-schema.json" "$cand" --expect dst-refcnt-false-sharing
refused "diff of an unknown version" "version" "$hotline" diff "$I/wrong-version.json" "$cand" --expect dst-refcnt-false-sharing
refused "report of invalid JSON" "not-json.json" "$hotline" report "$I/not-json.json" -o "$out/r.html"
refused "report of a JSON array" "cannot render a document of schema" "$hotline" report "$I/array.json" -o "$out/r.html"
refused "diagnose of a FIFO" "not a regular file" "$hotline" diagnose "$I/fifo.json"

# ---------------------------------------------------------------- 3. configs and catalogs
refused "serve --config /dev/zero" "not a regular file" "$hotline" serve --config /dev/zero --check-config
refused "serve --config a FIFO" "not a regular file" "$hotline" serve --config "$P/fifo" --check-config
refused "serve --config a directory" "directory" "$hotline" serve --config "$P/dir" --check-config
refused "a fix catalog that is /dev/zero" "not a regular file" "$hotline" fixes list --fixes "$scratch/catalogs/devzero"
refused "a fix catalog that is a FIFO" "not a regular file" "$hotline" fixes list --fixes "$scratch/catalogs/fifo"
refused "a catalog labelling vm.swappiness per-netns" "machine-wide" \
    "$hotline" fixes apply hostile-netns-lie-sysctl --fixes "$scratch/catalogs/netns-lie-sysctl" --netns "$ns" -d 1s --journal-dir "$out/j1"
refused "a catalog labelling a sysfs file per-netns" "netns" \
    "$hotline" fixes apply hostile-netns-lie-sysfs --fixes "$scratch/catalogs/netns-lie-sysfs" --netns "$ns" -d 1s --journal-dir "$out/j1"
refused "a catalog sysctl climbing out of /proc/sys" "hostname" \
    "$hotline" fixes apply hostile-traversal-sysctl --fixes "$scratch/catalogs/traversal-sysctl" --netns "$ns" -d 1s --journal-dir "$out/j1"
refused "a catalog sysctl with ../ components" "hostname" \
    "$hotline" fixes apply hostile-traversal-slash --fixes "$scratch/catalogs/traversal-slash" --netns "$ns" -d 1s --journal-dir "$out/j1"
refused "a catalog sysfs path with ../" "hostname" \
    "$hotline" fixes apply hostile-traversal-sysfs --fixes "$scratch/catalogs/traversal-sysfs" --allow-global -d 1s --journal-dir "$out/j1"

# ---------------------------------------------------------------- 4. namespaces and scope
refused "--netns pid:1 (the host's namespace)" "pid 1" \
    "$hotline" fixes apply early-demux-off --netns pid:1 -d 1s --journal-dir "$out/j2"
refused "--netns pid:\$\$ (a shell in the host's namespace)" "host's own network namespace" \
    "$hotline" fixes apply early-demux-off --netns "pid:$$" -d 1s --journal-dir "$out/j2"
refused "--netns of a namespace that does not exist" "hl-does-not-exist" \
    "$hotline" fixes apply early-demux-off --netns hl-does-not-exist -d 1s --journal-dir "$out/j2"
refused "--netns with a path in it" "netns" \
    "$hotline" fixes apply early-demux-off --netns ../../proc/1/ns/net -d 1s --journal-dir "$out/j2"
refused "--netns pid:0" "pid" "$hotline" fixes apply early-demux-off --netns pid:0 -d 1s --journal-dir "$out/j2"
refused "a per-netns fix without --netns" "--allow-global" "$hotline" fixes apply early-demux-off -d 1s --journal-dir "$out/j2"
refused "an unknown fix" "no-such-fix" "$hotline" fixes apply no-such-fix --netns "$ns" -d 1s --journal-dir "$out/j2"

# Two journal directories on one knob: the second run waits for nothing and is refused.
"$hotline" fixes apply hostile-fin-timeout --fixes "$scratch/catalogs/fin-timeout" --netns "$victim_ns" -d 4s \
    --journal-dir "$out/ja" >"$out/first.log" 2>&1 &
first=$!
for _ in $(seq 50); do grep -q applied "$out/first.log" && break; sleep 0.1; done
refused "a second run with another --journal-dir on the same knob" "another" \
    "$hotline" fixes apply hostile-fin-timeout --fixes "$scratch/catalogs/fin-timeout" --netns "$victim_ns" -d 1s --journal-dir "$out/jb"
wait "$first"
assert "the first run applied and restored (status $?)" grep -q "restored" "$out/first.log"

# ---------------------------------------------------------------- 5. journal directories
tmp_mode=$(stat -c %a /tmp)
refused "restore --journal-dir /tmp" "others can write it" "$hotline" restore --journal-dir /tmp
assert "/tmp keeps its mode" same "$tmp_mode" "$(stat -c %a /tmp)"
refused "a world-writable journal dir" "others can write it" "$hotline" restore --journal-dir "$J/world-writable"
assert "the world-writable dir keeps mode 777" same 777 "$(stat -c %a "$J/world-writable")"
refused "a journal dir owned by another user" "belongs to uid 65534" "$hotline" restore --journal-dir "$J/other-user"
assert "the other user's dir keeps its owner" same nobody "$(stat -c %U "$J/other-user")"
refused "a symlinked journal dir" "link" "$hotline" restore --journal-dir "$J/linked"
refused "a planted lock symlink" "lock" "$hotline" restore --journal-dir "$J/lock-link"
refused "a planted journal.json symlink" "journal.json" "$hotline" restore --journal-dir "$J/journal-link"
refused "journal.json is a FIFO" "not a regular file" "$hotline" restore --journal-dir "$J/journal-fifo"
refused "journal.json is a directory" "journal.json" "$hotline" restore --journal-dir "$J/journal-dir"
refused "journal.json is /dev/zero" "journal.json" "$hotline" restore --journal-dir "$J/journal-devzero"
refused "--journal-dir is a regular file" "journal" "$hotline" restore --journal-dir "$P/readonly"
assert "the planted links' target is unchanged" same "$victim_fp" "$(fp "$P/victim")"
# A damaged journal is set aside, not replayed, and says so.
mkdir -m 0700 "$out/damaged"; printf '{"entries": [' >"$out/damaged/journal.json"
refused "a damaged journal" "damaged" "$hotline" restore --journal-dir "$out/damaged"
mkdir -m 0700 "$out/tampered"
# An edited journal: restoring it would set the machine-wide vm.swappiness, labelled per-netns.
printf '{"schema":"%s","version":1,"boot_id":"%s","pid":1,"owner":"x","written":0,"entries":[{"kind":"sysctl","name":"vm.swappiness","old":"%s","new":"%s","scope":"netns","fix":"x","netns":null}]}' \
    hotline.journal "$(cat /proc/sys/kernel/random/boot_id)" "$((swappiness == 7 ? 8 : 7))" "$swappiness" >"$out/tampered/journal.json"
refused "a journal that would restore a machine-wide knob as per-netns" "machine-wide" \
    "$hotline" restore --journal-dir "$out/tampered"

# ---------------------------------------------------------------- 6. durations
refused "record -i 1e19" "out of range" "$hotline" record -i 1e19 -d 1s
refused "record -d 1e99" "duration" "$hotline" record -d 1e99
refused "record -d nan" "duration" "$hotline" record -d nan
refused "record -d -5s" "duration" "$hotline" record -d -5s
refused "fixes apply -d 1e99" "duration" "$hotline" fixes apply early-demux-off --netns "$ns" -d 1e99 --journal-dir "$out/j3"
refused "fixes apply -d 0" "duration" "$hotline" fixes apply early-demux-off --netns "$ns" -d 0 --journal-dir "$out/j3"
refused "cost -d 0" "duration" "$hotline" cost -d 0
refused "validate --duration inf" "duration" "$hotline" validate --fix early-demux-off --duration inf
refused "record with more intervals than the limit" "intervals" "$hotline" record -d 3h -i 0.1s

# ---------------------------------------------------------------- 7. unprivileged
as_nobody=(setpriv --reuid nobody --regid nogroup --clear-groups --inh-caps=-all)
refused "fixes apply as nobody" "sudo" "${as_nobody[@]}" "$hotline" fixes apply early-demux-off --netns "$ns" -d 1s
refused "restore as nobody" "sudo" "${as_nobody[@]}" "$hotline" restore
refused "record as nobody" "root" "${as_nobody[@]}" "$hotline" record -d 1s
# probe completes without privileges: the plan as far as the kernel's facts decide
# it, what root would try, the BTF layouts; nothing is observable to this user (3).
probe_out=$(timeout 60 "${as_nobody[@]}" "$hotline" probe 2>&1 </dev/null)
rc=$?
assert "probe as nobody completes with 3, nothing observable to this user (got $rc)" same 3 "$rc"
assert "probe as nobody names what root would try for dst_release" grep -q "^ *dst_release .*as root: fentry" <<<"$probe_out"
assert "probe as nobody shows the dst_entry layout from BTF" grep -q "^layout dst_entry" <<<"$probe_out"
assert "probe as nobody says what root would add" grep -q "^as root (or with CAP_BPF" <<<"$probe_out"

# ---------------------------------------------------------------- 8. faults (tests/lib/faultfs.cpp)
for spec in create:previous.json:1:EROFS write:previous.json:1:ENOSPC fsync:previous.json:1:EIO \
            rename:previous.json:1:EROFS; do
    err=${spec##*:}
    refused "diff -o with $spec" "$err" env LD_PRELOAD="$faultfs" HL_FAULT="$spec" "${diff_ok[@]}" -o "$out/previous.json"
    assert "diff -o with $spec: the previous file is intact" same previous "$(cat "$out/previous.json")"
    assert "diff -o with $spec: no temporary file" same "previous.json" "$(ls "$out" | grep previous)"
done
refused "fixes apply when the journal cannot be written (ENOSPC)" "ENOSPC" \
    env LD_PRELOAD="$faultfs" HL_FAULT=write:journal.json:1:ENOSPC \
    "$hotline" fixes apply early-demux-off --netns "$ns" -d 1s --journal-dir "$out/j4"
assert "the namespace's knob is unchanged after the failed journal write" \
    same 1 "$(ip netns exec "$ns" sysctl -n net.ipv4.ip_early_demux)"
refused "fixes apply when the journal cannot be created (EACCES)" "EACCES" \
    env LD_PRELOAD="$faultfs" HL_FAULT=create:journal.json:1:EACCES \
    "$hotline" fixes apply early-demux-off --netns "$ns" -d 1s --journal-dir "$out/j5"
assert "the namespace's knob is unchanged after the failed journal creation" \
    same 1 "$(ip netns exec "$ns" sysctl -n net.ipv4.ip_early_demux)"
assert "no journal file after the failed journal creation" same "lock" "$(ls "$out/j5")"
refused "record when the 2nd BPF attach fails" "EPERM" \
    env LD_PRELOAD="$faultfs" HL_FAULT=bpf_attach::2:EPERM "$hotline" record -d 1s -m tracepoint

# ---------------------------------------------------------------- after all of them
assert "no knob differs in the host or in any namespace" same "$before_knobs" "$(knob_state)"
if [ "$before_knobs" != "$(knob_state)" ]; then diff <(echo "$before_knobs") <(knob_state) >&2; fi
assert "no BPF program of hotline is left" same "$before_bpf" "$(bpf_state)"
assert "no hl-* namespace is left" same "$before_netns" "$(netns_state)"
after_files=$(file_state)
assert "no file outside the journals and outputs changed" same "$before_files" "$after_files"
if [ "$before_files" != "$after_files" ]; then diff <(echo "$before_files") <(echo "$after_files") >&2; fi
checks_done
