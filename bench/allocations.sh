#!/usr/bin/env bash
# Bytes a request allocates, by package and function (bench/allocation-sampler.mjs): the service
# (or the Koa floor, or raw) under wrk load, sampled over WINDOW seconds after WARMUP.
#
#   npm run build && export TOKEN_KEY=…   # the key the databases of a bench:compare run were seeded with
#   bench/allocations.sh service us-user  # or: koa us-user | raw raw-user | service us-patch | …
#
# env: WARMUP (5) WINDOW (5) TOP (25) CONNS (32) PORT (5791) READ_CACHE_MB (0, for the service) DATABASE_URL
set -euo pipefail
server=${1:?service | koa | raw}
mode=${2:?a load.lua mode}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
WARMUP=${WARMUP:-5}; WINDOW=${WINDOW:-5}; TOP=${TOP:-25}; CONNS=${CONNS:-32}; PORT=${PORT:-5791}
node=$root/node_modules/node/bin/node
base=postgres://postgres:postgres@127.0.0.1:5432
out=$(mktemp -d)
case $server in
  service) env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$PORT HOST=127.0.0.1 NODE_ENV=production READ_CACHE_MB=${READ_CACHE_MB:-0}); args=(dist/src/main.js); ready=/readyz ;;
  koa) env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$PORT); args=(bench/koa-floor.mjs); ready=/ ;;
  raw) env=(BENCHKIT=$root/bench/compare DATABASE_URL=${DATABASE_URL:-$base/uts_bench_anchor} PORT=$PORT); args=(bench/compare/raw-server.mjs); ready=/ ;;
  *) echo "unknown server $server"; exit 2 ;;
esac
cd "$root"
env "${env[@]}" ALLOCATION_PROFILE="$out/profile.heapprofile" "$node" --import "$here/allocation-sampler.mjs" "${args[@]}" >"$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$PORT$ready" && break; sleep 0.2; done
load() { wrk -t2 -c"$CONNS" -d"$1s" --timeout 10s -s "$here/compare/load.lua" "http://127.0.0.1:$PORT" -- "$mode"; }
load "$WARMUP" >/dev/null
kill -USR2 $pid
requests=$(load "$WINDOW" | sed -nE 's/^RESULT .*"requests":([0-9]+).*/\1/p')
kill -USR2 $pid
for _ in $(seq 50); do [ -s "$out/profile.heapprofile" ] && break; sleep 0.2; done
sleep 0.5
"$node" "$here/allocation-sampler.mjs" "$out/profile.heapprofile" "$requests" "$TOP"
