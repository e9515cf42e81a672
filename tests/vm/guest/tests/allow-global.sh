# SPDX-License-Identifier: Apache-2.0
# `validate --allow-global` on the guest's own machine-wide knobs.  A fix
# defined here (--fixes) changes one global sysctl and one global sysfs file;
# both start at values that are not the kernel's defaults, so a restore to the
# default is told apart from a restore to the previous value.  A sampler
# notes every value the knobs take.  Three runs:
#  1. validate --allow-global: the fix values appear during fix trials, the
#     previous ones come back after;
#  2. validate --allow-global killed by SIGKILL in a fix trial, then
#     `hotline restore` (the default journal directory): back to the previous values;
#  3. validate without --allow-global: refused (exit 4), nothing written.
# /proc/irq/*/smp_affinity_list is snapshotted around each run: numa-local's
# IRQ change is the only IRQ write hotline has, and nothing here may touch IRQs.
# Checked by hotline_vm_check --test allow-global.
# hlvm-timeout: 300
SYSCTL=/proc/sys/vm/stat_interval
SYSFS=/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan
mkdir -p fixes
cat > fixes/global.toml <<'TOML'
[[fix]]
name = "guest-global-knobs"
mode = "runtime"
summary = "vm.stat_interval and khugepaged's pages_to_scan, machine-wide: a test fix for --allow-global"
description = """
Test fixture: two machine-wide knobs off the scenario's data path."""
scenarios = ["tcp-crr"]

  [[fix.change]]
  sysctl = "vm.stat_interval"
  value = "7"
  scope = "global"

  [[fix.change]]
  sysfs = "kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"
  value = "1234"
  scope = "global"

  [[fix.expect]]
  metric = "scenario.cpu_us_per_op"
  down = "1%"
TOML
knobs() { read a < $SYSCTL; read b < $SYSFS; echo "$a $b"; }
irqs() { for f in /proc/irq/*/smp_affinity_list; do read v < "$f"; echo "$f $v"; done; }
sampler() {  # FILE: every change of the two knobs' values, until killed
    last=
    while :; do
        now=$(knobs)
        [ "$now" = "$last" ] || { echo "$now" >> "$1"; last=$now; }
        usleep 10000
    done
}
# Word-split on purpose; no function, so `$!` below is hotline's own pid.
validate="hotline validate --fixes fixes --fix guest-global-knobs --scenario tcp-crr --duration 1s --targets dst_release"
read orig_a < $SYSCTL; read orig_b < $SYSFS
echo 2 > $SYSCTL; echo 4095 > $SYSFS
knobs > knobs-before.txt; irqs > irqs-before.txt

sampler seen-run.txt & s=$!
$validate --allow-global --trials 2 --max-trials 2 -o verdict.json > run.txt 2>&1
echo $? > run.rc
kill $s; wait $s 2>/dev/null
knobs > knobs-after-run.txt; irqs > irqs-after-run.txt

$validate --allow-global --trials 3 --max-trials 3 > killed.txt 2>&1 & v=$!
i=0
while [ "$(knobs)" != "7 1234" ] && [ $i -lt 6000 ]; do usleep 10000; i=$((i + 1)); done
kill -9 $v; wait $v; echo $? > killed.rc
knobs > knobs-after-kill.txt
# Whatever still holds the knob lock (nothing may: the lock dies with its run).
for p in /proc/[0-9]*; do
    ls -l "$p/fd" 2>/dev/null | grep -q hotline-knobs.lock && echo "${p#/proc/} $(tr '\0' ' ' < "$p/cmdline")"
done > lock-holders.txt
hotline restore > restore.txt 2>&1
echo $? > restore.rc
knobs > knobs-after-restore.txt; irqs > irqs-after-restore.txt

sampler seen-refused.txt & s=$!
$validate --trials 2 --max-trials 2 -o refused.json > refused.txt 2>&1
echo $? > refused.rc
kill $s; wait $s 2>/dev/null
knobs > knobs-after-refused.txt; irqs > irqs-after-refused.txt

echo "$orig_a" > $SYSCTL; echo "$orig_b" > $SYSFS
exit 0
