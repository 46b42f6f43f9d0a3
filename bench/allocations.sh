#!/usr/bin/env bash
# Bytes a request allocates, by package and function (bench/allocation-sampler.mjs): the service
# (or the Koa or Apollo floor, or raw) under wrk load, sampled over WINDOW seconds after WARMUP.
#
#   npm run build && export TOKEN_KEY=…   # the key the databases of a bench:compare run were seeded with
#   bench/allocations.sh service us-user  # or: koa us-user | raw raw-user | service us-patch | …
#
# ALLOCATION_SURVIVORS=1 counts only what outlives the young generation (promoted, or made in the
# old one): what makes the old generation grow and full collections come.
#
# env: WARMUP (5) WINDOW (5) TOP (25) CONNS (32) PORT (5791) READ_CACHE_MB (0, for the service) DATABASE_URL
#      ALLOCATION_SURVIVORS (0)
set -euo pipefail
server=${1:?service | koa | apollo | raw}
mode=${2:?a load.lua mode}
source "$(dirname "$0")/one-server.sh"
WARMUP=${WARMUP:-5}; WINDOW=${WINDOW:-5}; TOP=${TOP:-25}; CONNS=${CONNS:-32}; PORT=${PORT:-5791}
server_of "$server" "$PORT"
profile=$out/profile.heapprofile
start_server 30 ALLOCATION_PROFILE="$profile" "$node" --import "$bench/allocation-sampler.mjs" "${server_args[@]}"
load 2 "$CONNS" "$WARMUP" "$PORT" "$mode" >/dev/null
kill -USR2 $pid
requests=$(load 2 "$CONNS" "$WINDOW" "$PORT" "$mode" | requests_of)
kill -USR2 $pid
# The sampler renames the profile into place once it is written whole.
for _ in $(seq 100); do [ -e "$profile" ] && break; sleep 0.2; done
"$node" "$bench/allocation-sampler.mjs" "$profile" "$requests" "$TOP"
