#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Steady-state cost of `hotline serve` at one scrape per second: the daemon's own
# CPU share and RSS, and the BPF programs' run time.  Reports against the budget
# (CPU <= 0.5% of one core, RSS <= 32 MB); never fails on the numbers, but fails
# when serve does not start or a scrape carries no hotline counters.  Root.
#   tests/bench/serve_cost.sh [HOTLINE_BIN] [SECONDS]
set -euo pipefail
BIN=${1:-build/hotline}
SECS=${2:-60}
dir=$(mktemp -d /tmp/hotline-serve-bench-XXXXXX)
# The background job opens its own redirection after the fork; the log must
# exist before the loop below reads it (under load the child opens it late).
: >"$dir/log"
"$BIN" serve --listen 127.0.0.1:0 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT

port=
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/log")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$dir/log"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "serve did not start"; cat "$dir/log"; exit 1; }

scrape() {  # body of GET /metrics, over bash's /dev/tcp (no curl needed)
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n' >&3
  sed '1,/^\r$/d' <&3
  exec 3>&-
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
bpf_seconds() { scrape | awk '/^hotline_probe_run_seconds_total/ {s += $2} END {printf "%.9f", s}'; }

for _ in 1 2 3 4 5; do scrape >/dev/null; done
# A daemon that serves nothing costs nothing: that is a failure, not a result.
scrape | grep -q '^hotline_probe_attached{.*} 1$' ||
  { echo "serve_cost: /metrics shows no attached target"; cat "$dir/log"; exit 1; }
t0=$(cpu_ticks); b0=$(bpf_seconds); s0=$(date +%s.%N)
for _ in $(seq 1 "$SECS"); do scrape >/dev/null; sleep 1; done
t1=$(cpu_ticks); b1=$(bpf_seconds); s1=$(date +%s.%N)
hz=$(getconf CLK_TCK)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
awk -v t0="$t0" -v t1="$t1" -v hz="$hz" -v s0="$s0" -v s1="$s1" -v b0="$b0" -v b1="$b1" \
    -v rss="$rss" -v hwm="$hwm" -v n="$SECS" 'BEGIN {
  el = s1 - s0
  if (el <= 0 || rss <= 0 || t1 < t0) { print "serve_cost: measured nothing"; exit 1 }
  cpu = (t1 - t0) / hz / el * 100; bpf = (b1 - b0) / el * 100
  printf "serve cost over %.0f s at 1 scrape/s (%d scrapes):\n", el, n
  printf "  daemon CPU      %.3f%% of one core (budget 0.5%%) %s\n", cpu, cpu <= 0.5 ? "ok" : "OVER"
  printf "  daemon RSS      %.1f MB in steady state (budget 32 MB) %s\n", rss / 1024, rss <= 32768 ? "ok" : "OVER"
  printf "  daemon RSS peak %.1f MB (start-up: kallsyms and BTF parsing, returned after attach)\n", hwm / 1024
  printf "  BPF programs    %.4f%% of one core (kernel run statistics; 0 when they are off)\n", bpf
}'
