// ESM entry of the Valkey GLIDE installer.
import cjs from './glide.js';

export const { installSeckill } = cjs;
