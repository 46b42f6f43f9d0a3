#!/usr/bin/env bash
# Instructions a request costs, counted by valgrind's callgrind: a count that the machine's other
# tenants, its steal time and its clock do not move, for comparing two builds, or the service and
# its floors, where req/s and CPU per request move 20–40 % between runs (docs/benchmarks.md).
# User-space instructions of every thread of the process (V8's compiler and collector threads too);
# not the kernel's work, and not time: two programs with the same count may differ in cache misses.
#
#   npm run build && export TOKEN_KEY=…     # the key the databases of a bench:compare run were seeded with
#   bench/instructions.sh service us-user   # or: koa us-user | raw raw-user | service us-patch | …
#
# A server under callgrind runs ~50x slower: it starts in ~80 s, and the service takes ~15,000
# requests (~4 min) before its count settles, so the load warms it WARMUP seconds, then each of
# ROUNDS windows counts from zero over WINDOW seconds of load (one wrk thread, CONNS connections).
# Read the last windows: warm, they agree to ~1 % (a read: 414k, 417k, 419k); one with a full
# collection or a compilation in it reads higher. Run one at a time: two servers under callgrind
# at once unsettle each other's figures.
#
# env: WARMUP (300) WINDOW (40) ROUNDS (5) CONNS (4) PORT (5790) READ_CACHE_MB (0, for the service)
#      DATABASE_URL (uts_bench_service, or uts_bench_anchor for raw, as bench:compare leaves them)
set -euo pipefail
server=${1:?service | koa | apollo | raw}
mode=${2:?a load.lua mode: us-user, us-patch, us-mixed-id, raw-user, …}
source "$(dirname "$0")/one-server.sh"
WARMUP=${WARMUP:-300}; WINDOW=${WINDOW:-40}; ROUNDS=${ROUNDS:-5}; CONNS=${CONNS:-4}; PORT=${PORT:-5790}
command -v valgrind >/dev/null || { echo "valgrind missing"; exit 1; }
server_of "$server" "$PORT"
# valgrind names the pipes callgrind_control talks through after $HOST, which the service also
# reads (its listen address): both sides are given the same.
export HOST=127.0.0.1
start_server 600 valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file="$out/cg.out" "$node" "${server_args[@]}"
load 1 "$CONNS" "$WARMUP" "$PORT" "$mode" >/dev/null
for r in $(seq "$ROUNDS"); do
  callgrind_control -z "$pid" >/dev/null 2>&1
  requests=$(load 1 "$CONNS" "$WINDOW" "$PORT" "$mode" | requests_of)
  callgrind_control -d "$pid" >/dev/null 2>&1
  for _ in $(seq 50); do compgen -G "$out/cg.out.*" >/dev/null && break; sleep 0.2; done
  dump=$(ls -t "$out"/cg.out.* | head -1)
  # The dump's own `summary:` line is the program's total (what callgrind_annotate prints as PROGRAM TOTALS).
  total=$(sed -n 's/^summary: //p' "$dump")
  rm -f "$dump"
  echo "$server $mode window $r: $requests requests, $((total / requests)) instructions a request"
done
