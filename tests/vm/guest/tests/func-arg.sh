# SPDX-License-Identifier: Apache-2.0
# --func NAME:argN on fentry and on kprobe.  vfs_write's argument 0 is the
# struct file written: one file opened once by this shell, written by one
# short-lived shell after another, alternately on CPU 0 (node 0) and CPU 2
# (node 1), 10 rounds: the file hands off 19 times, every time across nodes.
# hlvm-timeout: 120
for mech in fentry kprobe; do
    hotline record --handoff-share 100 --mechanism "$mech" --func vfs_write:arg0 --no-workq --quiet --output "arg-$mech.json" -- \
        sh -c 'exec 3>/tmp/func-arg.out; i=0; while [ $i -lt 10 ]; do
                   taskset -c 0 sh -c "echo a >&3"; taskset -c 2 sh -c "echo b >&3"; i=$((i + 1)); done' ||
        exit 1
done
