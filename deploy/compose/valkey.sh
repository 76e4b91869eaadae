#!/bin/sh
# Valkey with its password from the secret file (never on the command line). With an argument: a replica of
# that host, which Sentinel promotes if the primary fails (jackpotd follows it: JACKPOTD_REDIS_SENTINELS). No persistence needed: the ledger writer rebuilds any link Redis lost from PostgreSQL.
set -eu
pw=$(cat /run/secrets/valkey-password)
conf=/tmp/valkey.conf
umask 077
{
    echo "requirepass $pw"
    echo "masterauth $pw"
    echo "appendonly no"
    echo "save \"\""
    [ $# -gt 0 ] && echo "replicaof $1 6379"
} > "$conf"
exec valkey-server "$conf"
