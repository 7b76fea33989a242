// ESM entry of the node-redis module.
import cjs from './node-redis.js';

export const { seckill } = cjs;
