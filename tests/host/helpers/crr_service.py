#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test workload for `validate --live`: a loopback connect/request/response/
close service and its clients.  On each CPU of the set the command was started
on, a server process and a client process that talks to the next CPU's server
(both ends of every connection on two CPUs of a two-CPU machine; all on one
when a placement fix gives it one CPU).  The client closes first and the
server closes on its end of file, so each connection's route is released on
the server's CPU after the client's CPU used it: the handoffs per connection do
not hang on how the CPUs' processes interleave (with the server closing first
they did, and a loaded machine's scheduling took them under the rfs fix's
precondition).  Runs for the given seconds and prints `connections N` and
`ops_per_s N`; exits 4 when a connection fails."""
import ctypes
import os
import signal
import socket
import sys
import time

REQUEST = b"q" * 64
RESPONSE = b"r" * 64
PR_SET_PDEATHSIG = 1


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed early")
        data += chunk
    return data


def serve(server):
    while True:
        conn, _ = server.accept()
        recv_exactly(conn, len(REQUEST))
        conn.sendall(RESPONSE)
        conn.recv(1)  # the client's end of file
        conn.close()


def one_exchange(addr):
    with socket.create_connection(addr) as c:
        c.sendall(REQUEST)
        recv_exactly(c, len(RESPONSE))


def pinned_child(cpu):
    """Forks a child on `cpu` that dies with this process; its pid in the parent."""
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.sched_setaffinity(0, {cpu})
    return pid


def client(cpu, addr, seconds, out):
    done = 0
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            one_exchange(addr)
            done += 1
    except OSError as e:
        print(f"connection failed on CPU {cpu}: {e}", file=sys.stderr)
        os._exit(4)
    os.write(out, f"{done}\n".encode())
    os._exit(0)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    cpus = sorted(os.sched_getaffinity(0))
    servers, addrs = [], []
    for cpu in cpus:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        addrs.append(listener.getsockname())
        pid = pinned_child(cpu)
        if pid == 0:
            try:
                serve(listener)
            finally:
                os._exit(3)
        listener.close()
        servers.append(pid)
    start = time.monotonic()
    clients = []
    for i, cpu in enumerate(cpus):
        r, w = os.pipe()
        pid = pinned_child(cpu)
        if pid == 0:
            os.close(r)
            client(cpu, addrs[(i + 1) % len(cpus)], seconds, w)
        os.close(w)
        clients.append((pid, r))
    total, failed = 0, False
    for pid, r in clients:
        text = os.read(r, 64).decode().strip()
        _, status = os.waitpid(pid, 0)
        failed |= status != 0 or not text
        total += int(text or 0)
    wall = time.monotonic() - start
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if failed:
        sys.exit(4)
    print(f"connections {total}")
    print(f"ops_per_s {total / wall:.1f}")


if __name__ == "__main__":
    main()
