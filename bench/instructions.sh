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
server=${1:?service | koa | raw}
mode=${2:?a load.lua mode: us-user, us-patch, us-mixed-id, raw-user, …}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
WARMUP=${WARMUP:-300}; SECS=${WINDOW:-40}; ROUNDS=${ROUNDS:-5}; CONNS=${CONNS:-4}; PORT=${PORT:-5790}
command -v valgrind >/dev/null || { echo "valgrind missing"; exit 1; }
command -v wrk >/dev/null || { echo "wrk missing"; exit 1; }
node=$root/node_modules/node/bin/node
base=postgres://postgres:postgres@127.0.0.1:5432
out=$(mktemp -d)
# valgrind names the pipes callgrind_control talks through after $HOST, which the service also
# reads (its listen address): both sides are given the same.
export HOST=127.0.0.1
case $server in
  service) env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$PORT NODE_ENV=production READ_CACHE_MB=${READ_CACHE_MB:-0}); args=(dist/src/main.js); ready=/readyz ;;
  koa) env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$PORT); args=(bench/koa-floor.mjs); ready=/ ;;
  raw) env=(BENCHKIT=$root/bench/compare DATABASE_URL=${DATABASE_URL:-$base/uts_bench_anchor} PORT=$PORT); args=(bench/compare/raw-server.mjs); ready=/ ;;
  *) echo "unknown server $server"; exit 2 ;;
esac
cd "$root"
env "${env[@]}" valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file="$out/cg.out" "$node" "${args[@]}" >"$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT$ready" && break; sleep 1; done
load() { wrk -t1 -c"$CONNS" -d"$1s" --timeout 30s -s "$here/compare/load.lua" "http://127.0.0.1:$PORT" -- "$mode"; }
load "$WARMUP" >/dev/null
for r in $(seq "$ROUNDS"); do
  callgrind_control -z "$pid" >/dev/null 2>&1
  requests=$(load "$SECS" | sed -nE 's/^RESULT .*"requests":([0-9]+).*/\1/p')
  callgrind_control -d "$pid" >/dev/null 2>&1
  sleep 2
  dump=$(ls -t "$out"/cg.out.* | head -1)
  total=$(callgrind_annotate "$dump" 2>/dev/null | sed -nE 's/^ *([0-9,]+) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
  rm -f "$dump"
  echo "$server $mode window $r: $requests requests, $((total / requests)) instructions a request"
done
