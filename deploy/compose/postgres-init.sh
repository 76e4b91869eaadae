#!/bin/sh
# First start of the primary only (docker-entrypoint-initdb.d): the ledger's owner, the service's role
# (README, "Pointing it at real Redis and PostgreSQL"), a replication role for the standby. Passwords from
# secret files, never from this file.
set -eu
owner=$(cat /run/secrets/pg-owner-password)
app=$(cat /run/secrets/pg-app-password)
repl=$(cat /run/secrets/pg-replication-password)
psql -v ON_ERROR_STOP=1 --username postgres -v owner="$owner" -v app="$app" -v repl="$repl" <<'SQL'
CREATE ROLE jackpotd_owner LOGIN PASSWORD :'owner';
CREATE ROLE jackpotd_app LOGIN NOINHERIT PASSWORD :'app';
CREATE ROLE replicator LOGIN REPLICATION PASSWORD :'repl';
CREATE DATABASE jackpot OWNER jackpotd_owner;
SELECT pg_create_physical_replication_slot('standby1');
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
