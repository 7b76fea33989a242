// Compiled by test/types.test.js (tsc --noEmit): the declarations must type
// real usage with node-redis and ioredis, and reject wrong calls.
import { createClient, createCluster } from 'redis';
import Redis, { Cluster } from 'ioredis';
import {
  seckill, installSeckill, Outcome, ConfirmOutcome, DeductResult, ItemInfo, Hold,
  SeckillError, RequestIdConflictError, UNLIMITED, UNLIMITED_STOCK, ErrorKind,
} from 'seckill-client';
import { seckill as seckillModule } from 'seckill-client/node-redis';
import { installSeckill as install2 } from 'seckill-client/ioredis';

async function nodeRedis(): Promise<void> {
  const client = createClient({ RESP: 2, modules: { seckill } });
  const created: boolean = await client.seckill.init('sku:1', 5, { limit: 2, ex: 3600 });
  const r = await client.seckill.deduct('sku:1', 'alice', 2, { requestId: 'order-1' });
  const outcome: Outcome = r.outcome;
  const stock: number | null = r.stock;
  const ok: boolean = r.ok;
  if (r.outcome === Outcome.SOLD_OUT) console.log('sold out');
  const c: ConfirmOutcome = await client.seckill.confirm('sku:1', 'order-1');
  const info = await client.seckill.info('sku:1');
  if (info !== null) {
    const s: number = info.stock;
    const u: boolean = info.unlimited;
    const st: string | Buffer | null = info.stream;
    console.log(s, u, st, info.streamMaxlen === 0);
  }
  const holds = await client.seckill.holds('sku:1');
  if (holds) for (const h of holds) console.log(h.requestId, h.deadline + 1);
  const released: number | null = await client.seckill.release('sku:1', 'a', 'b');
  await client.seckill.init('sku:2', UNLIMITED);
  await client.seckill.DEDUCT('sku:2', 7n, { qty: 1, holdUntil: new Date() });
  // @ts-expect-error unknown option
  await client.seckill.deduct('sku:1', 'alice', 1, { requestID: 'x' });
  // @ts-expect-error the user is required
  await client.seckill.deduct('sku:1');
  const replies = await client.multi().seckill.get('sku:1').seckill.add('sku:1', 3).exec();
  console.log(created, outcome, stock, ok, c, released, replies, UNLIMITED_STOCK);

  const cluster = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:30001' }], modules: { seckill: seckillModule } });
  const g: number | null = await cluster.seckill.get('sku:1');
  console.log(g);
}

async function ioredis(): Promise<void> {
  const redis = installSeckill(new Redis({ keyPrefix: 'app:' }));
  const r: DeductResult = await redis.seckill.deduct('sku:1', 'alice');
  const i: ItemInfo | null = await redis.seckill.info('sku:1');
  const flat: boolean = await redis.seckillInit('sku:3', 10, { stream: 'orders' });
  const results = await redis.pipeline().seckill.deduct('sku:1', 'bob', 1).seckill.get('sku:1').exec();
  await redis.multi().seckillGet('sku:1').seckill.bought('sku:1', 'bob').exec();
  await redis.set('plain', '1');
  // @ts-expect-error stock must be an integer or UNLIMITED
  await redis.seckill.init('sku:1', { stock: 1 });
  const cluster = install2(new Cluster([{ host: '127.0.0.1', port: 30001 }], { enableAutoPipelining: true }));
  const hs: Hold[] | null = await cluster.seckill.holds('sku:1', 'alice');
  console.log(r, i, flat, results, hs);
}

function errors(err: unknown): void {
  const e = SeckillError.from(err);
  if (e instanceof RequestIdConflictError) {
    const k: ErrorKind = e.kind;
    console.log(k === ErrorKind.REQUEST_ID_CONFLICT, e.code, e.message, e.retryable);
  }
}

void nodeRedis; void ioredis; void errors;
