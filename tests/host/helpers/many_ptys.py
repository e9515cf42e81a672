#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test workload: opens N ptys at once and writes one line through each, so N
distinct work items (each pty's flush_to_ldisc work) are queued, all alive
together: more objects than a small owner table holds."""
import os
import pty
import sys

n = int(sys.argv[1])
pairs = [pty.openpty() for _ in range(n)]
for master, slave in pairs:
    os.write(master, b"x\n")
for master, slave in pairs:
    os.read(slave, 16)
for master, slave in pairs:
    os.close(master)
    os.close(slave)
