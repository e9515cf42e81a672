#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test workload: N loopback TCP connections, one after another, each sending
one byte and closing from both sides.  Independent of hotline's own churn
workload, so its counts can judge hotline's."""
import socket
import sys


def listener():
    """A listening socket on a free loopback port, and its address."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    return server, server.getsockname()


def one_connection(server, addr):
    """Connects, sends one byte, closes both sides."""
    client = socket.create_connection(addr)
    accepted, _ = server.accept()
    client.sendall(b"x")
    accepted.recv(1)
    accepted.close()
    client.close()


if __name__ == "__main__":
    server, addr = listener()
    for _ in range(int(sys.argv[1])):
        one_connection(server, addr)
    server.close()
