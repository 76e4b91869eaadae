#!/bin/sh
# A Sentinel watching valkey-primary (quorum 2 of 3). jackpotd does not yet follow Sentinel by itself
# (docs/OPERATIONS.md, Not yet supported): after a failover point JACKPOTD_REDIS_URL at the new primary.
set -eu
pw=$(cat /run/secrets/valkey-password)
conf=/tmp/sentinel.conf
umask 077
cat > "$conf" <<CONF
port 26379
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel monitor jackpot valkey-primary 6379 2
sentinel auth-pass jackpot $pw
sentinel down-after-milliseconds jackpot 5000
sentinel failover-timeout jackpot 30000
CONF
exec valkey-sentinel "$conf"
