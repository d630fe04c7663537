-- claim: lease the oldest pending job to a worker and mint its fencing token.
-- KEYS[1] pending  emq:{Q}:pending
-- KEYS[2] active   emq:{Q}:active
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job: (the row key is prefix .. id)
-- ARGV[2] lease    lease length in ms (1 .. 31536000000: one year)
-- Reply: {} when nothing is pending | {id, payload, token}
--        token is the row's new attempts: every later call on this lease must present it
--        members with no job behind them are dropped on the way (include/pick.lua): an orphan
--        is a well-formed JOB id with no row, a malformed member is no JOB id; when any were,
--        the reply is {id, payload, token, {orphans}, {malformed}}, or {{orphans}, {malformed}}
-- Error: EMQROW when the oldest job's row is broken (nothing is written)
-- Error: EMQARG when an argument is malformed (include/argument.lua; nothing is written)
--@include argument
--@include pick
local bad = prefix_of(ARGV[1], KEYS[1]) or decimal('lease', ARGV[2], '1', '31536000000')
if bad then
  return bad
end
local p = pick()
if p.refused then
  return p.refused
end
if not p.id then
  if p.dropped then
    return {p.orphans, p.malformed}
  end
  return {}
end
local id = p.id
local row = ARGV[1] .. id
redis.call('ZREM', KEYS[1], id)
local token = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], string.format('%d', now + tonumber(ARGV[2])), id)
if p.dropped then
  return {id, p.payload, token, p.orphans, p.malformed}
end
return {id, p.payload, token}
