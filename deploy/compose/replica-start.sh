#!/bin/bash
# The replica: on first start, a base backup of the primary (-R: it follows the primary from then
# on), then PostgreSQL as a hot standby.
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA" && chmod 700 "$PGDATA"
  until pg_basebackup -h primary -U postgres -D "$PGDATA" -R -X stream -c fast; do sleep 1; done
fi
exec postgres -c hot_standby=on
