#!/usr/bin/env bash
# How a fresh process of the service (or the Koa floor, or raw) comes up to speed: its throughput,
# p99 and CPU a request in consecutive windows of one load, from its first request on, the first
# window after the warm-up the shared kit gives each case (a short low-concurrency pre-flight, then
# WARMUP seconds at full concurrency). What the windows differ by is the JIT's work (V8 compiling
# the request path, more of it for more code) and nothing else: the same process, load and data.
#
#   npm run build && export TOKEN_KEY=…   # the key the databases of a bench:compare run were seeded with
#   bench/warmup.sh service us-user       # or: koa us-user | raw raw-user | service us-mixed-id | …
#
# Prints one line a window: requests a second, p99, and the process's user and system CPU a request
# (from /proc: every thread, the compiler's and the collector's too).
#
# env: WARMUP (2) WINDOW (8) WINDOWS (3) CONNS (32) PORT (5792) READ_CACHE_MB (0, for the service) DATABASE_URL
set -euo pipefail
server=${1:?service | koa | raw}
mode=${2:?a load.lua mode}
source "$(dirname "$0")/one-server.sh"
WARMUP=${WARMUP:-2}; WINDOW=${WINDOW:-8}; WINDOWS=${WINDOWS:-3}; CONNS=${CONNS:-32}; PORT=${PORT:-5792}
server_of "$server" "$PORT"
out=$(mktemp -d)
cd "$root"
env "${server_env[@]}" "$node" "${server_args[@]}" >"$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$out"' EXIT
wait_ready "$PORT" "$server_ready" 30 "$out/server.log"
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14, $15}' "/proc/$pid/stat"; } # user and system ticks, every thread
load 1 4 2 "$PORT" "$mode" >/dev/null # as the kit's pre-flight
load 2 "$CONNS" "$WARMUP" "$PORT" "$mode" >/dev/null
for window in $(seq "$WINDOWS"); do
  read -r user0 sys0 < <(cpu)
  result=$(load 2 "$CONNS" "$WINDOW" "$PORT" "$mode")
  read -r user1 sys1 < <(cpu)
  requests=$(requests_of <<<"$result")
  rps=$(sed -nE 's/.*"rps":([0-9.]+).*/\1/p' <<<"$result")
  p99=$(sed -nE 's/.*"p99_ms":([0-9.]+).*/\1/p' <<<"$result")
  awk -v w="$window" -v n="$requests" -v rps="$rps" -v p99="$p99" -v u=$((user1 - user0)) -v s=$((sys1 - sys0)) -v hz="$ticks" -v name="$server $mode" \
    'BEGIN { printf "%s, window %d: %s req/s, p99 %s ms, CPU a request %.0f µs user + %.0f µs system\n", name, w, rps, p99, u * 1e6 / hz / n, s * 1e6 / hz / n }'
done
