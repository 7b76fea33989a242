// ESM entry of the ioredis installer.
import cjs from './ioredis.js';

export const { installSeckill } = cjs;
