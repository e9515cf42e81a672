#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test workload: loopback TCP connections at a steady RATE per second for
SECONDS, each as loopback_churn.py makes them.  Paced by the clock, not by the
CPU: on a busy machine the rate over any 100 ms stays the same (a late batch
catches up at once), so a sample of a few windows estimates the whole run."""
import sys
import time

from loopback_churn import listener, one_connection

rate, seconds = float(sys.argv[1]), float(sys.argv[2])
server, addr = listener()
start = time.monotonic()
done = 0
while time.monotonic() - start < seconds:
    due = int((time.monotonic() - start) * rate)
    while done < due:
        one_connection(server, addr)
        done += 1
    time.sleep(0.001)
server.close()
