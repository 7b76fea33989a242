-- seckill.lua, as the flash-sale write-ups publish it: check the stock,
-- check the buyer's count (a key built inside the script, which Redis
-- Cluster cannot route), decrement, count the buyer. The bench runs it
-- against SECKILL.DEDUCT (BENCHMARKS.md).
-- KEYS[1] stock key, KEYS[2] bought-key prefix; ARGV[1] user, ARGV[2] limit.
-- Replies 1 bought, -1 sold out, -2 over the limit.
local stockKey = KEYS[1]
local boughtKey = KEYS[2]
local userId = ARGV[1]
local limitPerUser = tonumber(ARGV[2])
local stock = tonumber(redis.call('get', stockKey) or '0')
if stock <= 0 then
    return -1
end
local bought = tonumber(redis.call('get', boughtKey .. ':' .. userId) or '0')
if bought >= limitPerUser then
    return -2
end
redis.call('decr', stockKey)
redis.call('incr', boughtKey .. ':' .. userId)
return 1
