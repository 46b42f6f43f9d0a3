# Sourced by bench/instructions.sh, bench/allocations.sh and bench/warmup.sh: one of the servers bench:compare
# measures (the service, the Koa and Apollo floors, raw), on the databases a bench:compare run leaves, and the
# wrk load of one of load.lua's modes against it. Sets, for `server_of <name> <port>`: server_env
# and server_args (what to run, under whatever wrapper the caller puts before node), server_ready
# (the path that answers once it is up) and server_port; `start_server` runs it. `$out` is the
# run's own folder (the server's log, a tool's files), removed on exit with the server stopped.
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$bench/.." && pwd)
node=$root/node_modules/node/bin/node
command -v wrk >/dev/null || { echo "wrk missing"; exit 1; }
out=$(mktemp -d)
pid=
# The Koa floor and raw exit 143 on SIGTERM: not a failure of the caller.
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; fi; rm -rf "$out"' EXIT

server_of() { # name port
  local base=postgres://postgres:postgres@127.0.0.1:5432
  server_port=$2
  case $1 in
    service) server_env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$2 HOST=127.0.0.1 NODE_ENV=production READ_CACHE_MB=${READ_CACHE_MB:-0}); server_args=(dist/src/main.js); server_ready=/readyz ;;
    koa) server_env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$2); server_args=(bench/koa-floor.mjs); server_ready=/ ;;
    apollo) server_env=(DATABASE_URL=${DATABASE_URL:-$base/uts_bench_service} PORT=$2); server_args=(bench/apollo-floor.mjs); server_ready=/graphql ;;
    raw) server_env=(BENCHKIT=$root/bench/compare DATABASE_URL=${DATABASE_URL:-$base/uts_bench_anchor} PORT=$2); server_args=(bench/compare/raw-server.mjs); server_ready=/ ;;
    *) echo "unknown server $1 (service, koa, apollo or raw)"; exit 2 ;;
  esac
}

wait_ready() { # port path seconds log
  local tries=$(($3 * 5))
  for _ in $(seq "$tries"); do curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.2; done
  tail -5 "$4"
  echo "the server did not answer $2 within $3 s"
  exit 1
}

# start_server <seconds> <command…>: from the project's root, `env "${server_env[@]}" <command…>` (the
# caller's wrapper, variables and "$node" "${server_args[@]}") in the background, its output in
# $out/server.log, its pid in $pid; returns once it answers, or fails with its log after <seconds>.
start_server() {
  local seconds=$1
  shift
  (cd "$root" && exec env "${server_env[@]}" "$@") >"$out/server.log" 2>&1 &
  pid=$!
  wait_ready "$server_port" "$server_ready" "$seconds" "$out/server.log"
}

load() { # threads connections seconds port mode: wrk's RESULT line
  wrk -t"$1" -c"$2" -d"$3s" --timeout 30s -s "$bench/compare/load.lua" "http://127.0.0.1:$4" -- "$5" | grep '^RESULT '
}

result_field() { sed -nE "s/^RESULT .*\"$1\":([0-9.]+).*/\\1/p"; } # name: a figure of load's RESULT line (stdin)
requests_of() { result_field requests; }
