#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test workload: two processes pinned to CPU_A and CPU_B pass one byte back
and forth through two pipes ROUNDS times, so each read wakes the other side:
on two CPUs every wakeup is made from the CPU the woken task does not run on."""
import os
import sys

rounds, cpu_a, cpu_b = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
to_b_r, to_b_w = os.pipe()
to_a_r, to_a_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {cpu_b})
    for _ in range(rounds):
        os.read(to_b_r, 1)
        os.write(to_a_w, b"x")
    os._exit(0)
os.sched_setaffinity(0, {cpu_a})
for _ in range(rounds):
    os.write(to_b_w, b"x")
    os.read(to_a_r, 1)
os.waitpid(pid, 0)
