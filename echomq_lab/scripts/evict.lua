-- evict: FOR DEMONSTRATION ONLY. The eviction fault of the load lab, as another client's
-- atomic step (or maxmemory with allkeys-lru would do it): delete the row of one live lease,
-- leaving its id in active. No handle in jobs runs it; the lab's evictor does.
-- KEYS[1] active   emq:{Q}:active
-- ARGV[1] prefix   the row-key prefix emq:{Q}:job:
-- ARGV[2] pick     any whole number: which of the first 50 live leases (pick mod their count)
-- ARGV[3] margin   ms a lease must still have to run to count as live
-- Reply: the id whose row was deleted | nil when no lease was live enough
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local from = '(' .. (now + tonumber(ARGV[3]))
local live = redis.call('ZRANGE', KEYS[1], from, '+inf', 'BYSCORE', 'LIMIT', 0, 50)
if #live == 0 then
  return false
end
local id = live[tonumber(ARGV[2]) % #live + 1]
if redis.call('DEL', ARGV[1] .. id) == 0 then
  return false
end
return id
