# Sourced by bench/instructions.sh, bench/allocations.sh and bench/warmup.sh: one of the servers bench:compare
# measures (the service, the Koa floor, raw), on the databases a bench:compare run leaves, and the
# wrk load of one of load.lua's modes against it. Sets, for `server_of <name> <port>`: server_env
# and server_args (what to run, under whatever wrapper the caller puts before node) and
# server_ready (the path that answers once it is up).
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$bench/.." && pwd)
node=$root/node_modules/node/bin/node
command -v wrk >/dev/null || { echo "wrk missing"; exit 1; }

server_of() { # name port
  local base=postgres://postgres:postgres@127.0.0.1:5432
  case $1 in
    service) server_env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$2 HOST=127.0.0.1 NODE_ENV=production READ_CACHE_MB=${READ_CACHE_MB:-0}); server_args=(dist/src/main.js); server_ready=/readyz ;;
    koa) server_env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$2); server_args=(bench/koa-floor.mjs); server_ready=/ ;;
    raw) server_env=(BENCHKIT=$root/bench/compare DATABASE_URL=${DATABASE_URL:-$base/uts_bench_anchor} PORT=$2); server_args=(bench/compare/raw-server.mjs); server_ready=/ ;;
    *) echo "unknown server $1 (service, koa or raw)"; exit 2 ;;
  esac
}

wait_ready() { # port path seconds log
  local tries=$(($3 * 5))
  for _ in $(seq "$tries"); do curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.2; done
  tail -5 "$4"
  echo "the server did not answer $2 within $3 s"
  exit 1
}

load() { # threads connections seconds port mode: wrk's RESULT line
  wrk -t"$1" -c"$2" -d"$3s" --timeout 30s -s "$bench/compare/load.lua" "http://127.0.0.1:$4" -- "$5" | grep '^RESULT '
}

requests_of() { sed -nE 's/^RESULT .*"requests":([0-9]+).*/\1/p'; }
