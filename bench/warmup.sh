#!/usr/bin/env bash
# How a fresh process of the service (or the Koa or Apollo floor, or raw) comes up to speed: its throughput,
# p99 and CPU a request in consecutive windows of one load, the first right after a short warm-up
# (2 s at 4 connections with every answer checked, as the kit's pre-flight of one mode, then WARMUP
# seconds at full concurrency; the kit pre-flights every mode a process serves, so its first case
# starts somewhat warmer). The windows differ by what V8 still compiles of the request path, and by
# the machine's own spread between windows (on a 2-vCPU guest, ±10 %): compare servers by several
# fresh processes each.
#
#   npm run build && export TOKEN_KEY=…   # the key the databases of a bench:compare run were seeded with
#   bench/warmup.sh service us-user       # or: koa us-user | raw raw-user | READ_CACHE_MB=8 … service us-mixed-id
#
# Prints one line a window: requests a second, p99, and the process's user and system CPU a request
# (from /proc: every thread, the compiler's and the collector's too). Fails when any answer was not
# the one expected (a TOKEN_KEY other than the seed's answers 401s).
#
# env: WARMUP (2) WINDOW (8) WINDOWS (3) CONNS (32) PORT (5792) READ_CACHE_MB (0, for the service) DATABASE_URL
set -euo pipefail
server=${1:?service | koa | apollo | raw}
mode=${2:?a load.lua mode}
source "$(dirname "$0")/one-server.sh"
WARMUP=${WARMUP:-2}; WINDOW=${WINDOW:-8}; WINDOWS=${WINDOWS:-3}; CONNS=${CONNS:-32}; PORT=${PORT:-5792}
server_of "$server" "$PORT"
# One process: with WORKERS>1 the pid would be the cluster's primary, which serves no request.
start_server 30 WORKERS=1 "$node" "${server_args[@]}"
ticks=$(getconf CLK_TCK)
alive() { kill -0 "$pid" 2>/dev/null || { tail -5 "$out/server.log"; echo "the server exited"; exit 1; }; }
cpu() { awk '{print $14, $15}' "/proc/$pid/stat"; } # user and system ticks of every thread
# As the kit checks its pre-flight: no answer of another status, none timed out, none unexpected.
clean() { grep -q '"err_status":0,"err_timeout":0,"bad":0}' <<<"$1" || { echo "$1"; echo "answers were not all as expected"; exit 1; }; }
clean "$(BENCH_CHECK=1 load 1 4 2 "$PORT" "$mode")"
load 2 "$CONNS" "$WARMUP" "$PORT" "$mode" >/dev/null
for window in $(seq "$WINDOWS"); do
  alive
  read -r user0 sys0 < <(cpu)
  result=$(load 2 "$CONNS" "$WINDOW" "$PORT" "$mode")
  alive
  read -r user1 sys1 < <(cpu)
  clean "$result"
  requests=$(requests_of <<<"$result")
  rps=$(result_field rps <<<"$result")
  p99=$(result_field p99_ms <<<"$result")
  awk -v w="$window" -v n="$requests" -v rps="$rps" -v p99="$p99" -v u=$((user1 - user0)) -v s=$((sys1 - sys0)) -v hz="$ticks" -v name="$server $mode" \
    'BEGIN { printf "%s, window %d: %s req/s, p99 %s ms, CPU a request %.0f µs user + %.0f µs system\n", name, w, rps, p99, u * 1e6 / hz / n, s * 1e6 / hz / n }'
done
