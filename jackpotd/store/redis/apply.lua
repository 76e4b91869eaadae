-- The one atomic step of every mutating operation on a link (ARCHITECTURE.md, write path 2).
-- Money arrives as decimal strings and moves with HINCRBY, so no value ever passes through a double
-- except for the sign check below, where balances are below 2^53 µ¢ by rule (RULES.md §2).
--
-- KEYS: 1 config  2 balances  3 seq  4 journal  5 request record  6 round (or an unused key)  7 last  8 fence
--       9 open: how many of the link's rounds are open (committed, or settled with a hit awaiting verification)
--       10 the filter of used ids (its state and size)  11 its bits
-- Returns {'ok', '', seq, balances} (the caller holds the rest of the reply), {'dup' | 'conflict', stored
-- reply}, or {reason, detail}.
-- ARGV: 1 request hash  2 expected config version ("new" to create the link)  3 expected round state
--       ("" none, "absent", or a state)  4 expected round revision  5 new round state  6 round data
--       7 new config ("" unchanged)  8 entry JSON  9 result JSON  10 safety TTL (s) of the record and of a
--       finished round (the ledger writer shortens it once the entry is durable)
--       11 request content JSON  12 floor: the ledger's durable sequence as the caller knows it
--       13 the request's identity (of its id and content)
--       14 "1" if the step needs the link between rounds (NZ 11.6A/B), else ""
--       15 "1" if the new round state (5) finishes the round (lua_codec: domain.rounds.FINISHED), else ""
--       16 n guards, then n (pool, balance) pairs, then n deltas and (pool, delta) pairs
--       fourth from last: the time the step was decided (the entry's ts_ms, the deciding process's clock), and
--       third from last: how far (ms) it may be from Redis's clock ("0": not checked, a test's clock)
--       last but one: the ids to look up in the filter of used ids ("" none: the caller asked the ledger), and
--       last: the ids the step uses, added to the filter; each id as its bit positions in hex (domain/seen_filter.py)
-- The ARGV are built and the replies read in one place, jackpotd/store/lua_codec.py. Of our vocabulary the
-- script knows only the caller's two markers: "new" (ports.NEW_LINK) and "absent" (ports.ROUND_ABSENT).

-- A store that forgot or went back answers nothing (ARCHITECTURE.md, Recovery): the link is rebuilt first.
local fence = redis.call('GET', KEYS[8])
if fence then return {'fenced', fence} end
local version = redis.call('HGET', KEYS[1], 'version')
local current = redis.call('GET', KEYS[3])
if ARGV[2] ~= 'new' then
  if not version or not current then return {'lost', ''} end
  if tonumber(current) < tonumber(ARGV[12]) then return {'behind', current} end
end

-- A retry is answered from its record (the caller then waits until the ledger holds that very request).
local record = redis.call('GET', KEYS[5])
if record then  -- a stored reply (service/replies.py): read by field, whatever the order its fields were written in
  if cjson.decode(record)['hash'] == ARGV[1] then return {'dup', record} end
  return {'conflict', record}
end

-- A process whose clock jumped (issue 23) decides nothing: its entry would be dated outside every bound.
local tolerance = tonumber(ARGV[#ARGV - 2])
if tolerance > 0 then
  local now = redis.call('TIME')
  local skew = tonumber(ARGV[#ARGV - 3]) - (tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
  if math.abs(skew) > tolerance then return {'clock', string.format('%d', skew)} end
end

-- The filter of used ids (issue 22, P1) holds every request and round id the ledger holds, once a fill made it
-- complete ("ok"): an id with a bit unset was never used, so the ledger need not be asked. Otherwise it is.
local seen = redis.call('HMGET', KEYS[10], 'state', 'bits')
local seen_size = tonumber(seen[2])
local asked = ARGV[#ARGV - 1]  -- each id K=4 positions of 8 hex digits (domain/seen_filter.py)
if asked ~= '' then
  if seen[1] ~= 'ok' or not seen_size then return {'unsure', 'unfilled'} end
  for i = 1, #asked, 32 do
    local all = true
    for j = i, i + 24, 8 do
      if redis.call('GETBIT', KEYS[11], tonumber(string.sub(asked, j, j + 7), 16) % seen_size) == 0 then
        all = false
        break
      end
    end
    if all then return {'unsure', 'maybe'} end
  end
end

if ARGV[2] == 'new' then
  if version or current or tonumber(ARGV[12]) > 0 then return {'exists', ''} end
elseif version ~= ARGV[2] then
  return {'stale_config', version}
end

if ARGV[3] ~= '' then
  local state = redis.call('HGET', KEYS[6], 'state')
  if ARGV[3] == 'absent' then
    if state then return {'round_state', state} end
  else
    if state ~= ARGV[3] then return {'round_state', state or 'absent'} end
    if redis.call('HGET', KEYS[6], 'rev') ~= ARGV[4] then return {'round_moved', ''} end
  end
end

if ARGV[14] == '1' then  -- a count that is not zero refuses: below zero it is wrong, and only a rebuild mends it
  local open = redis.call('GET', KEYS[9])
  if not open then return {'lost', ''} end  -- not known: the writer's probe rebuilds the link, which counts
  if tonumber(open) ~= 0 then return {'rounds_open', open} end
end

-- A guard is a pool the step was priced against (a hit, a cap, a restructure): had it changed, the step would move
-- the wrong amounts, so the caller decides again on the pools as they now stand (a CAS retry).
local i = 16
local n = tonumber(ARGV[i])
for k = 1, n do
  local pool, expected = ARGV[i + 2 * k - 1], ARGV[i + 2 * k]
  if (redis.call('HGET', KEYS[2], pool) or '0') ~= expected then return {'pool_moved', pool} end
end
i = i + 2 * n + 1
local m = tonumber(ARGV[i])
for k = 1, m do
  local pool, delta = ARGV[i + 2 * k - 1], ARGV[i + 2 * k]
  if string.sub(delta, 1, 1) == '-' then  -- only a withdrawal can take a pool below zero
    local after = tonumber(redis.call('HGET', KEYS[2], pool) or '0') + tonumber(delta)
    if after < 0 then return {'negative', pool} end
  end
end
for k = 1, m do
  redis.call('HINCRBY', KEYS[2], ARGV[i + 2 * k - 1], ARGV[i + 2 * k])
end

-- Each entry names the request it follows, so the ledger writer can tell a journal that went back and
-- forked from one that continues the ledger.
local after = redis.call('GET', KEYS[7]) or ''
local seq = redis.call('INCR', KEYS[3])
if ARGV[2] == 'new' then redis.call('SET', KEYS[9], '0') end
redis.call('SET', KEYS[7], ARGV[13])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'version', tostring(seq), 'config', ARGV[7])
end
local ttl = tonumber(ARGV[10])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[6], 'state', ARGV[5], 'data', ARGV[6], 'rev', tostring(seq))
  if ARGV[15] == '1' then  -- a finished round: kept until the ledger holds it, and no longer open
    redis.call('EXPIRE', KEYS[6], ttl)
    if ARGV[3] ~= 'absent' then redis.call('DECR', KEYS[9]) end
  elseif ARGV[3] == 'absent' then
    redis.call('INCR', KEYS[9])
  end
end
local balances = cjson.encode(redis.call('HGETALL', KEYS[2]))
-- The reply embeds the caller's canonical JSON as it is: re-encoding it as strings cost more than the rest.
local reply = '{"hash":"' .. ARGV[1] .. '","seq":' .. seq .. ',"result":' .. ARGV[9] .. ',"balances":' ..
  balances .. ',"content":' .. ARGV[11] .. '}'
redis.call('XADD', KEYS[4], '0-' .. seq, 'entry', ARGV[8], 'balances', balances, 'reply', reply, 'after', after)
redis.call('SET', KEYS[5], reply, 'EX', ttl)
if seen_size then  -- only ever added to, here and by a fill: so "absent" stays exact
  local added = ARGV[#ARGV]
  for j = 1, #added, 8 do redis.call('SETBIT', KEYS[11], tonumber(string.sub(added, j, j + 7), 16) % seen_size, 1) end
end
return {'ok', '', tostring(seq), balances}  -- the caller has the rest of the reply already
