#!/usr/bin/env python3
"""Test workload: loopback TCP connections at a steady RATE per second for
SECONDS, each sending one byte and closing from both sides.  Paced by the
clock, not by the CPU: on a busy machine the rate over any 100 ms stays the
same (a late batch catches up at once), so a sample of a few windows
estimates the whole run."""
import socket
import sys
import time

rate, seconds = float(sys.argv[1]), float(sys.argv[2])
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(64)
addr = server.getsockname()
start = time.monotonic()
done = 0
while True:
    elapsed = time.monotonic() - start
    if elapsed >= seconds:
        break
    due = int(elapsed * rate)
    while done < due:
        client = socket.create_connection(addr)
        accepted, _ = server.accept()
        client.sendall(b"x")
        accepted.recv(1)
        accepted.close()
        client.close()
        done += 1
    time.sleep(0.001)
server.close()
