// The ESM entry points' types.
import { seckill, installSeckill, Outcome, SeckillError } from 'seckill-client';
import { seckill as m } from 'seckill-client/node-redis';
import { installSeckill as i } from 'seckill-client/ioredis';
import { installSeckill as g } from 'seckill-client/glide';
import { createClient } from 'redis';

const client = createClient({ modules: { seckill: m } });
const r = await client.seckill.deduct('k', 'u', 1);
const ok: boolean = r.outcome === Outcome.BOUGHT;
console.log(seckill === m, installSeckill === i, installSeckill === g, ok, SeckillError.name);
