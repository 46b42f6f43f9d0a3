#!/usr/bin/env bash
# npm run bench:compare: the service side by side with raw node:http + pg (the practical limit) and
# PostGraphile 5 (the peer), on the same 10,000-user data set, in one run; prints a table and the
# target ratios (docs/benchmarks.md). Needs wrk, psql and curl, and a PostgreSQL it may create
# databases on; measures this checkout (built first if a source changed).
#
#   npm run bench:compare                    # one round (~5 min)
#   ROUNDS=2 npm run bench:compare           # medians over two rounds: use this for claims
#   ONLY=write npm run bench:compare         # only the cases whose line matches (no Targets line)
#   FLOORS=1 npm run bench:compare           # also the floors of the stack (bench/koa-floor.mjs,
#                                            # bench/apollo-floor.mjs) beside the service
#
# env: ROUNDS (1) DURATION (8) WARMUP (2) WRITE_PCT (10) CONNS (32) ONLY FLOORS (0)
#      BENCH_DATABASE_URL (postgres://postgres:postgres@127.0.0.1:5432/postgres: an admin URL; the run
#      makes the databases uts_bench_anchor and uts_bench_service there, and leaves them for profiling)
#      US_SQL (SQL run on the service's database after the seed: for experiments) US_LOG_LEVEL (info)
#      TOKEN_KEY (a new one each run: export one to use the database the run leaves by hand)
# Cases (ratio = service / anchor, medians over rounds):
#   cold-*:  the service with READ_CACHE_MB=0, read-only load: every answer computed
#   mixed-*: the service as shipped (read cache on), WRITE_PCT % of requests patch a random user
#   write-*: every request patches a random user
#   hot-*:   the service as shipped, read-only load (its read cache serves repeats): shown, no target
# With FLOORS=1, the REST cases of the targets (cold-id-rest, mixed-id-rest, write-rest) also run on
# the Koa floor and the GraphQL ones (cold-id-gql, cold-page, mixed-page, write-gql) on the Apollo floor; each is printed as a share of its
# floor, and each floor against the anchor and target of its case (what the stack itself reaches).
#
# The anchors' packages (postgraphile, pg) are this folder's own (package.json, package-lock.json),
# installed here on the first run, never the service's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
work=$(mktemp -d)
ROUNDS=${ROUNDS:-1}; DURATION=${DURATION:-8}; WARMUP=${WARMUP:-2}; CONNS=${CONNS:-32}; FLOORS=${FLOORS:-0}
export WRITE_PCT=${WRITE_PCT:-10}
ADMIN=${BENCH_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
ANCHORDB=${ADMIN%/*}/uts_bench_anchor
USDB=${ADMIN%/*}/uts_bench_service
# The service's Node (the `node` devDependency): what npm runs the scripts on, whatever Node is on PATH.
NODE=$root/node_modules/.bin/node
[ -x "$NODE" ] || { echo "run npm install first (the node devDependency is missing)"; exit 1; }
q() { local db=$1; shift; psql "$db" -qAt "$@"; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; sleep 1; for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
for tool in wrk psql curl; do command -v $tool >/dev/null || { echo "$tool missing"; exit 1; }; done
if [ ! -d "$here/node_modules/postgraphile" ]; then
  echo "installing the anchors' packages into bench/compare (once)"
  (cd "$here" && PATH="$(dirname "$NODE"):$PATH" npm ci --no-audit --no-fund >"$work/anchors-install.log" 2>&1) || { tail -5 "$work/anchors-install.log"; echo "anchor install failed"; exit 1; }
fi
q "$ADMIN" -c "drop database if exists uts_bench_anchor" -c "create database uts_bench_anchor" >/dev/null || { echo "cannot create databases at $ADMIN"; exit 1; }
q "$ANCHORDB" -v ON_ERROR_STOP=1 -f "$here/schema.sql" >/dev/null && q "$ANCHORDB" -v ON_ERROR_STOP=1 -f "$here/seed.sql" >/dev/null || { echo "anchor seed failed"; exit 1; }
q "$ANCHORDB" -c analyze >/dev/null
echo "measuring $(git describe --always --dirty 2>/dev/null || echo 'this checkout') $(git log -1 --format='%s' 2>/dev/null | cut -c1-60)"
"$NODE" scripts/build-if-stale.mjs >"$work/build.log" 2>&1 || { tail -5 "$work/build.log"; echo "build failed"; exit 1; }
export TOKEN_KEY=${TOKEN_KEY:-$("$NODE" -e "process.stdout.write(require('node:crypto').randomBytes(32).toString('base64'))")}
q "$ADMIN" -c "drop database if exists uts_bench_service" -c "create database uts_bench_service" >/dev/null
DATABASE_URL=$USDB "$NODE" dist/src/cli/migrate.js >"$work/migrate.log" 2>&1 || { tail -5 "$work/migrate.log"; echo "migrate failed"; exit 1; }
"$NODE" bench/us-seed-secrets.mjs >"$work/seed.sql" || { echo "seed generation failed"; exit 1; }
q "$USDB" -v ON_ERROR_STOP=1 -f "$work/seed.sql" >"$work/seed.log" 2>&1 || { tail -3 "$work/seed.log"; echo "seed failed"; exit 1; }
[ -n "${US_SQL:-}" ] && q "$USDB" -v ON_ERROR_STOP=1 -c "$US_SQL"  # an experiment's change to the service's database

declare -A PORT PID
wait_http() { for _ in $(seq 150); do curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.2; done; return 1; }
start() { # name port path cmd...
  local n=$1 p=$2 path=$3; shift 3
  "$@" >"$work/$n.log" 2>&1 & PID[$n]=$!; PORT[$n]=$p; PIDS+=($!)
  wait_http "$p" "$path" || { tail -5 "$work/$n.log"; echo "$n did not start"; exit 1; }
}
start raw 5711 / env BENCHKIT="$here" DATABASE_URL="$ANCHORDB" PORT=5711 "$NODE" "$here/raw-server.mjs"
start pgl 5712 / env BENCHKIT="$here" DATABASE_URL="$ANCHORDB" PORT=5712 "$NODE" "$here/pgl-server.mjs"
start us 5713 /readyz env DATABASE_URL="$USDB" PORT=5713 HOST=127.0.0.1 NODE_ENV=production LOG_LEVEL=${US_LOG_LEVEL:-info} "$NODE" dist/src/main.js
start cold 5714 /readyz env DATABASE_URL="$USDB" PORT=5714 HOST=127.0.0.1 NODE_ENV=production READ_CACHE_MB=0 LOG_LEVEL=${US_LOG_LEVEL:-info} "$NODE" dist/src/main.js
if [ "$FLOORS" = 1 ]; then
  # The floors answer only the requests they are made for: any answer means up.
  start koa 5715 / env DATABASE_URL="$USDB" PORT=5715 "$NODE" bench/koa-floor.mjs
  start apollo 5716 /graphql env DATABASE_URL="$USDB" PORT=5716 "$NODE" bench/apollo-floor.mjs
fi
DIGEST=$(curl -s -H 'Authorization: Bearer tok-1-1' -H 'content-type: application/json' \
  --data '{"query":"{ allUsers(first: 1, orderBy: ROW_ID_ASC) { edges { cursor } } }"}' http://127.0.0.1:5712/graphql |
  sed -E 's/.*"cursor":"([^"]+)".*/\1/' | base64 -d | sed -E 's/^\["([^"]+)".*/\1/')
res=$work/results.jsonl; : >"$res"
rss() { awk '/^VmRSS:/ {print $2}' /proc/$1/status; }
load=$here/load.lua
preflight() { # server mode
  local out; out=$(BENCH_CHECK=1 wrk -t1 -c4 -d2s --timeout 10s -s "$load" "http://127.0.0.1:${PORT[$1]}" -- "$2" "$DIGEST" 2>&1)
  grep -q '"err_status":0,"err_timeout":0,"bad":0}' <<<"$out" || { echo "$out" | tail -5; echo "pre-flight failed: $1 $2"; exit 1; }
}
measure() { # round case server mode
  local r=$1 c=$2 s=$3 m=$4 url="http://127.0.0.1:${PORT[$3]}" pid=${PID[$3]} peak=0 x
  wrk -t2 -c"$CONNS" -d"${WARMUP}s" --timeout 10s -s "$load" "$url" -- "$m" "$DIGEST" >/dev/null
  wrk -t2 -c"$CONNS" -d"${DURATION}s" --timeout 10s --latency -s "$load" "$url" -- "$m" "$DIGEST" >"$work/w.txt" &
  local w=$!
  while kill -0 $w 2>/dev/null; do x=$(rss "$pid"); ((x > peak)) && peak=$x; sleep 0.25; done
  wait $w
  local line; line=$(grep '^RESULT ' "$work/w.txt" | sed 's/^RESULT {//; s/}$//')
  echo "{\"round\":$r,\"case\":\"$c\",\"server\":\"$s\",$line,\"rss_peak_mb\":$((peak / 1024))}" | tee -a "$res"
}
# The cases of the shared benchmark kit's compare.sh of 2026-11-26, in its order; the floors right after the
# service in the cases they serve.
floor() { [ "$FLOORS" = 1 ] && echo "$1"; }
mapfile -t CASES < <(printf '%s\n' \
  "cold-id-rest raw raw-user" "cold-id-rest cold us-user" "$(floor "cold-id-rest koa us-user")" \
  "cold-id-gql pgl pgl-user" "cold-id-gql cold us-gql-user" "$(floor "cold-id-gql apollo us-gql-user")" \
  "cold-page raw raw-users" "cold-page pgl pgl-users-cursor" "cold-page cold us-users" "$(floor "cold-page apollo us-users")" \
  "mixed-id-rest raw raw-mixed-id" "mixed-id-rest us us-mixed-id" "$(floor "mixed-id-rest koa us-mixed-id")" \
  "mixed-page raw raw-mixed-page" "mixed-page pgl pgl-mixed-page" "mixed-page us us-gql-mixed-page" "$(floor "mixed-page apollo us-gql-mixed-page")" \
  "write-rest raw raw-patch" "write-rest us us-patch" "$(floor "write-rest koa us-patch")" \
  "write-gql pgl pgl-patch" "write-gql us us-gql-patch" "$(floor "write-gql apollo us-gql-patch")" \
  "hot-id-rest us us-user" "hot-id-gql us us-gql-user" "hot-page us us-users" | sed '/^$/d')
if [ -n "${ONLY:-}" ]; then keep=(); for c in "${CASES[@]}"; do [[ $c =~ $ONLY ]] && keep+=("$c"); done; CASES=("${keep[@]}"); fi
for c in "${CASES[@]}"; do set -- $c; preflight "$2" "$3"; done
echo "pre-flight ok"
for r in $(seq 1 "$ROUNDS"); do for c in "${CASES[@]}"; do set -- $c; measure "$r" "$1" "$2" "$3"; done; done
echo
"$NODE" "$here/summarize.mjs" "$res" ${ONLY:+--partial}
