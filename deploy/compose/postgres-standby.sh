#!/bin/sh
# The standby: a base backup of the primary on first start (streaming, slot standby1), then a hot standby
# whose application_name makes it the primary's synchronous standby.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    export PGPASSWORD="$(cat /run/secrets/pg-replication-password)"
    pg_basebackup --host postgres-primary --username replicator --pgdata "$PGDATA" --wal-method stream \
        --slot standby1 --write-recovery-conf --progress
    echo "primary_conninfo = 'host=postgres-primary user=replicator application_name=standby1 passfile=/tmp/pgpass'" \
        >> "$PGDATA/postgresql.auto.conf"
    chmod 0700 "$PGDATA"
fi
printf 'postgres-primary:5432:*:replicator:%s\n' "$(cat /run/secrets/pg-replication-password)" > /tmp/pgpass
chmod 0600 /tmp/pgpass
exec postgres -c hot_standby=on
