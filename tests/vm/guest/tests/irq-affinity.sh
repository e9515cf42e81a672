# SPDX-License-Identifier: Apache-2.0
# numa-local's irq_affinity change on a real kernel's IRQ: `--irqs-of NAME`
# finds a device IRQ in /proc/interrupts, `fixes apply` pins it to node 0's CPUs
# while the fix is held and puts back its exact previous affinity afterwards;
# without --allow-global it is refused (exit 64) and nothing changes.  The guest
# has no NIC (QEMU -nodefaults): its device IRQs are a virtio one if present,
# else the serial ports'.  Writes the files hotline_vm_check --test irq-affinity judges.
# hlvm-timeout: 90
cat /proc/interrupts > interrupts.txt
cat /sys/devices/system/node/node0/cpulist > node0.txt
# The last column of a numbered row is its action name.
name=$(awk '$1 ~ /^[0-9]+:$/ && $NF ~ /^virtio/ {print $NF; exit}' interrupts.txt)
[ -n "$name" ] || name=$(awk '$1 ~ /^[0-9]+:$/ && $NF ~ /^ttyS/ {print $NF; exit}' interrupts.txt)
[ -n "$name" ] || { echo "no virtio or serial IRQ in /proc/interrupts"; cat interrupts.txt; exit 1; }
irq=$(awk -v n="$name" '$1 ~ /^[0-9]+:$/ && $NF == n {sub(":", "", $1); print $1; exit}' interrupts.txt)
echo "$name" > name.txt
echo "$irq" > irq.txt
aff=/proc/irq/$irq/smp_affinity_list
# The kernel starts the guest's IO-APIC IRQs on node 0 already: move this one to
# node 1 first so the fix has something to change (its own value is put back last).
original=$(cat "$aff")
cat /sys/devices/system/node/node1/cpulist > "$aff" || { echo "cannot move IRQ $irq to node 1"; exit 1; }
cat "$aff" > before.txt
echo "IRQ $irq ($name): affinity $(cat before.txt), node 0 is CPUs $(cat node0.txt)"

hotline fixes apply numa-local --irqs-of "$name" -d 2s > refused.out 2>&1
echo $? > refused.rc
cat "$aff" > after-refused.txt
cat refused.out

hotline fixes apply numa-local --irqs-of no-such-device-irq --allow-global -d 2s > unknown.out 2>&1
echo $? > unknown.rc
cat unknown.out

# The value is sampled while the fix is held (every 0.2 s until hotline exits).
hotline fixes apply numa-local --irqs-of "$name" --allow-global -d 3s > applied.out 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
    cat "$aff" >> during.txt
    sleep 0.2
done
wait "$pid"
echo $? > applied.rc
cat "$aff" > after.txt
cat applied.out
echo "seen during the fix: $(sort -u during.txt | tr '\n' ' '); after: $(cat after.txt)"
echo "$original" > "$aff"
