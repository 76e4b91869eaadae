#!/bin/sh
# Valkey with its password from the secret file (never on the command line). With an argument: a replica of
# that host, which Sentinel watches but never promotes by itself. No persistence needed: the ledger writer rebuilds any link Redis lost from PostgreSQL.
set -eu
pw=$(cat /run/secrets/valkey-password)
conf=/tmp/valkey.conf
umask 077
{
    echo "requirepass $pw"
    echo "masterauth $pw"
    echo "appendonly no"
    echo "save \"\""
    # a replica Sentinel never promotes by itself (replica-priority 0): jackpotd follows one address, so a
    # failover is an operator's act (docs/OPERATIONS.md, Failing Valkey over)
    [ $# -gt 0 ] && { echo "replicaof $1 6379"; echo "replica-priority 0"; }
} > "$conf"
exec valkey-server "$conf"
