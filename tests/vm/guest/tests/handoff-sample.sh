# SPDX-License-Identifier: Apache-2.0
# --handoff-sample on two nodes.  vfs_write's argument 0 (fentry) is the
# struct file written: this shell opens 64 files once (fds 10-73); one shell
# pinned to CPU 0 (node 0) writes each once, then one pinned to CPU 2 (node 1),
# 10 rounds.  Every file is touched 10 times on each node and hands off 19
# times, all across nodes (10 from node 0 to node 1, 9 back).  Recorded with
# every object tracked (--handoff-sample 1) and with 1 object in 4.
# Checked by hotline_vm_check --test handoff-sample.
# hlvm-timeout: 150
mkdir -p /tmp/handoff-sample
i=10
while [ $i -lt 74 ]; do eval "exec $i>/tmp/handoff-sample/f$i"; i=$((i + 1)); done
write_all='i=10; while [ $i -lt 74 ]; do echo x >&$i; i=$((i + 1)); done'
rounds="r=0; while [ \$r -lt 10 ]; do taskset -c 0 sh -c '$write_all'; taskset -c 2 sh -c '$write_all';
        r=\$((r + 1)); done"
for n in 1 4; do
    hotline record --handoff-share 100 --mechanism fentry --func vfs_write:arg0 --no-workq --handoff-sample "$n" \
        --quiet --output "sample-$n.json" -- sh -c "$rounds" || exit 1
done
