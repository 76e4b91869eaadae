-- A checked read of a link (ARCHITECTURE.md, Recovery): its sequence, balances and one round, refused
-- when Redis forgot the link, went back behind the ledger, or the link is fenced.
-- KEYS: 1 config  2 seq  3 balances  4 round (or an unused key)  5 fence
-- ARGV: 1 floor: the ledger's durable sequence as the caller knows it
-- Returns {'ok', seq, balances JSON, round JSON} or {reason, detail}.
local fence = redis.call('GET', KEYS[5])
if fence then return {'fenced', fence} end
local current = redis.call('GET', KEYS[2])
if not current or redis.call('EXISTS', KEYS[1]) == 0 then return {'lost', ''} end
if tonumber(current) < tonumber(ARGV[1]) then return {'behind', current} end
return {'ok', current, cjson.encode(redis.call('HGETALL', KEYS[3])), cjson.encode(redis.call('HGETALL', KEYS[4]))}
