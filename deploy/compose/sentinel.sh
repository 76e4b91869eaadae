#!/bin/sh
# A Sentinel watching valkey-primary (quorum 2 of 3) and promoting a replica if it fails; jackpotd asks the
# Sentinels where the primary is (JACKPOTD_REDIS_SENTINELS) and follows it. The Sentinels ask their clients, and
# one another, for the Valkey password (requirepass); jackpotd reads it from JACKPOTD_REDIS_SENTINEL_PASSWORD_FILE.
set -eu
pw=$(cat /run/secrets/valkey-password)
conf=/tmp/sentinel.conf
umask 077
cat > "$conf" <<CONF
port 26379
requirepass $pw
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel monitor jackpot valkey-primary 6379 2
sentinel auth-pass jackpot $pw
sentinel down-after-milliseconds jackpot 5000
sentinel failover-timeout jackpot 30000
CONF
exec valkey-sentinel "$conf"
