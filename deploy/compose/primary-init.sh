#!/bin/bash
# Runs once, when the primary's data directory is created: lets the replica stream from it.
set -euo pipefail
echo "host replication postgres all scram-sha-256" >> "$PGDATA/pg_hba.conf"
