#!/usr/bin/env python3
"""Test workload: N loopback TCP connections, one after another, each sending
one byte and closing from both sides.  Independent of hotline's own churn
workload, so its counts can judge hotline's."""
import socket
import sys

n = int(sys.argv[1])
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(64)
addr = server.getsockname()
for _ in range(n):
    client = socket.create_connection(addr)
    accepted, _ = server.accept()
    client.sendall(b"x")
    accepted.recv(1)
    accepted.close()
    client.close()
server.close()
