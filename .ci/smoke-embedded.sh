#!/usr/bin/env bash
# The README's quick start, for real: `npm start` with no DATABASE_URL (embedded PostgreSQL under a
# fresh DATA_DIR) prints a first token; that token works; the token key file is 0600; SIGTERM stops the service with exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(mktemp -d)
out=$(mktemp)
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
env -u DATABASE_URL DATA_DIR="$data" PORT="$port" LOG_LEVEL=warn npm start >"$out" 2>&1 &
npm_pid=$!
trap 'kill $npm_pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 120); do grep -q "listening on" "$out" && break; sleep 0.5; done
grep -q "listening on" "$out" || { cat "$out"; echo "smoke: the service did not start"; exit 1; }
token=$(grep -A2 "not shown again" "$out" | tail -n 1 | tr -d '[:space:]')
[ -n "$token" ] || { cat "$out"; echo "smoke: no first token printed"; exit 1; }
base="http://127.0.0.1:$port"
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")
[ "$code" = 200 ] || { echo "smoke: /readyz answered $code"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"firstName":"Smoke","lastName":"Test"}' "$base/user/")
[ "$code" = 201 ] || { echo "smoke: POST /user/ answered $code"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/user/")
[ "$code" = 401 ] || { echo "smoke: GET /user/ without a token answered $code"; exit 1; }
# Secrets at rest: without TOKEN_KEY the first start made the key file, readable by its owner only.
[ "$(stat -c %a "$data/token.key")" = 600 ] || { ls -l "$data"; echo "smoke: no key file with mode 600 in DATA_DIR"; exit 1; }
# SIGTERM to npm itself, as a process manager sends it: npm forwards it to the service (npm start
# execs node scripts/start.mjs, which runs the service in its own process).
kill -TERM "$npm_pid"
set +e
wait "$npm_pid"
status=$?
set -e
trap - EXIT
rm -rf "$data"
[ "$status" -eq 0 ] || { cat "$out"; echo "smoke: the service exited with $status after SIGTERM"; exit 1; }
# Fixed strings after `--`: a token is base64url and may begin with "-", which grep took for an option.
grep -qF -- "$token" "$out" && [ "$(grep -cF -- "$token" "$out")" -eq 1 ] || { echo "smoke: the first token was printed more than once"; exit 1; }
echo "smoke: 5 passed, 0 failed"
