// Compiled by test/entry-points.test.js (tsc --noEmit): the declarations must
// type real usage with node-redis, ioredis and Valkey GLIDE, and reject wrong calls.
import { createClient, createCluster } from 'redis';
import Redis, { Cluster } from 'ioredis';
import {
  seckill, installSeckill, Outcome, ConfirmOutcome, DeductResult, ItemInfo, Hold,
  SeckillError, RequestIdConflictError, UNLIMITED, UNLIMITED_STOCK, ErrorKind,
  SettleOutcome, Transfer, SplitItem, fnv1a32, seckillOf, Durable, UnavailableError,
  RequestStatus, ScanPage, ScanRecord, BuyerRecord, RequestRecord, OrderState, RefundOutcome, RefundResult,
  OrderResult, OrderConfirmation, OrderLine, CartSaga, CartPlacement, CartConfirmation,
} from 'seckill-client';
import { seckill as seckillModule } from 'seckill-client/node-redis';
import { installSeckill as install2 } from 'seckill-client/ioredis';
import { installSeckill as installSeckillGlide } from 'seckill-client/glide';
import { GlideClient, GlideClusterClient, Batch, ClusterBatch } from '@valkey/valkey-glide';

async function nodeRedis(): Promise<void> {
  const client = createClient({ RESP: 2, modules: { seckill } });
  const created: boolean = await client.seckill.init('sku:1', 5, { limit: 2, ex: 3600 });
  const r = await client.seckill.deduct('sku:1', 'alice', 2, { requestId: 'order-1' });
  const outcome: Outcome = r.outcome;
  const stock: number | null = r.stock;
  const ok: boolean = r.ok;
  if (r.outcome === Outcome.SOLD_OUT) console.log('sold out');
  const c: ConfirmOutcome = await client.seckill.confirm('sku:1', 'order-1');
  if (c === ConfirmOutcome.LAPSED || c === ConfirmOutcome.REFUNDED || c === ConfirmOutcome.UNKNOWN_REQUEST) console.log('gone');
  const held1 = await client.seckill.deduct('sku:1', 'alice', 1, { requestId: 'order-2', hold: 900 });
  const payBy: number | null = held1.deadline;
  const refunded: RefundResult = await client.seckill.refund('sku:1', 'order-2');
  const units: number | null = refunded.units;
  if (refunded.outcome === RefundOutcome.ALREADY_REFUNDED || refunded.ok || refunded.refunded) console.log(units, payBy);
  // @ts-expect-error refund gives a RefundResult, not a count
  const count: number | null = await client.seckill.refund('sku:1', 'order-2');
  // @ts-expect-error not an outcome of refund
  if (refunded.outcome === 'CANCELLED') console.log(count);
  const info = await client.seckill.info('sku:1');
  if (info !== null) {
    const s: number = info.stock;
    const u: boolean = info.unlimited;
    const st: string | Buffer | null = info.stream;
    console.log(s, u, st, info.streamMaxlen === 0);
  }
  const holds = await client.seckill.holds('sku:1');
  if (holds) for (const h of holds) console.log(h.requestId, h.deadline + 1);
  const state: OrderState | null = await client.seckill.status('sku:1', 'order-1');
  if (state !== null && state.status === RequestStatus.HELD) console.log(state.user, state.qty, state.deadline + 1);
  const released: number | null = await client.seckill.release('sku:1', 'a', 'b');
  await client.seckill.init('sku:2', UNLIMITED);
  await client.seckill.DEDUCT('sku:2', 7n, { qty: 1, holdUntil: new Date() });
  // @ts-expect-error unknown option
  await client.seckill.deduct('sku:1', 'alice', 1, { requestID: 'x' });
  // @ts-expect-error the user is required
  await client.seckill.deduct('sku:1');
  const replies = await client.multi().seckill.get('sku:1').seckill.add('sku:1', 3).exec();
  console.log(created, outcome, stock, ok, c, released, replies, UNLIMITED_STOCK);

  // Transfers between parts.
  const taken: number | null = await client.seckill.take('sku:1:part:0', 4, 'move-1', 'sku:1:part:1');
  await client.seckill.take('sku:1:part:0', 4, 'move-1', { to: 'sku:1:part:1' });
  await client.seckill.take('sku:1:part:0', 4, 'move-2');
  const added: number | null = await client.seckill.add('sku:1:part:1', 4, { transferId: 'move-1' });
  const settled: SettleOutcome = await client.seckill.settle('sku:1:part:0', 'move-1');
  if (settled === SettleOutcome.UNKNOWN) console.log('unknown');
  const open: Transfer[] | null = await client.seckill.transfers('sku:1:part:0');
  if (open) for (const t of open) console.log(t.transferId, t.units + 1, t.destination);
  if (info !== null) console.log(info.movedOut + info.movedIn);
  // @ts-expect-error take needs a transfer id
  await client.seckill.take('sku:1:part:0', 4);
  // @ts-expect-error unknown option
  await client.seckill.add('sku:1', 1, { transferID: 'x' });
  console.log(taken, added);

  const cluster = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:30001' }], modules: { seckill: seckillModule } });
  const g: number | null = await cluster.seckill.get('sku:1');
  console.log(g);

  // Waits: through seckillOf, on a client or a cluster.
  const sk = seckillOf(client);
  const held: Durable<DeductResult> = await sk.deduct('sku:1', 'alice', 1, { requestId: 'o-9', hold: 900, waitReplicas: 1 });
  const paid: Durable<ConfirmOutcome> = await sk.confirm('sku:1', 'o-9', { waitReplicas: 1, waitTimeoutMs: 200 });
  const back: Durable<RefundResult> = await seckillOf(cluster).refund('sku:1', 'o-9', { waitReplicas: 1n });
  const byOptions: Durable<DeductResult> = await sk.deduct('sku:1', 'bob', { qty: 2, waitReplicas: 1 });
  if (!paid.durable) console.log(paid.replicas + 1, paid.result === ConfirmOutcome.CONFIRMED);
  const unwaited: DeductResult = await sk.deduct('sku:1', 'carol', 1, { requestId: 'o-10' });
  const plainConfirm: ConfirmOutcome = await sk.confirm('sku:1', 'o-10');
  // @ts-expect-error the module's own call sends one command, so it takes no wait
  await client.seckill.confirm('sku:1', 'o-9', { waitReplicas: 1 });
  // @ts-expect-error waitReplicas is a number
  await sk.confirm('sku:1', 'o-9', { waitReplicas: '1' });
  // @ts-expect-error a wait is not a deduct result
  const wrong: DeductResult = await sk.deduct('sku:1', 'alice', 1, { waitReplicas: 1 });
  console.log(held.result.stock, held.result.deadline, back.result.units, byOptions.durable, unwaited.ok, plainConfirm, wrong);

  // A split item over the node-redis client and over the cluster.
  const parts: string[] = SplitItem.named('sku:9', 3);
  const split = new SplitItem(cluster, parts);
  const shares: boolean[] = await split.init(100, { limit: 1 });
  const i: number = split.partFor('alice');
  const d: DeductResult = await split.deduct('alice', 1, { requestId: 'o-1', hold: 60 });
  const co: ConfirmOutcome = await split.confirm('alice', 'o-1');
  const rf: RefundResult = await split.refund('alice', 'o-1');
  const b: number | null = await split.bought(42);
  const total: number | null = await split.stock();
  const infos: Array<ItemInfo | null> = await split.info();
  const overClient = new SplitItem(client, [Buffer.from('p0'), 'p1']);
  await overClient.deduct('bob');
  const h: number = fnv1a32('foobar') + fnv1a32(Buffer.from('a'));
  // @ts-expect-error a SplitItem needs a client with the seckill commands
  new SplitItem(createClient(), parts);
  console.log(shares, i, d, co, rf, b, total, infos, h, split.parts[0]);

  // Orders of several items (one hash tag), and a cart across shards.
  const lines: OrderLine[] = [['{c}:phone', 1], { key: '{c}:case', qty: 2n }, { key: '{c}:cable' }];
  const ordered: OrderResult = await client.seckill.order(lines, 'alice', 'order-7', { hold: 900 });
  const wholeOrder: boolean = ordered.taken && ordered.ok;
  const firstLine: DeductResult | null = ordered.lines[0];
  const orderDeadline: number | null = ordered.deadline;
  await client.seckill.order([['{c}:phone', 1]], 'alice', 'order-8', { holdUntil: new Date() });
  const oc: OrderConfirmation = await client.seckill.confirmOrder(['{c}:phone', '{c}:case'], 'order-7');
  const lineOutcome: ConfirmOutcome | null = oc.lines[1];
  await client.seckill.confirmOrder(lines, 'order-7');
  const ors: RefundResult[] = await cluster.seckill.refundOrder(lines, 'order-7');
  const durableOrder: Durable<OrderResult> = await sk.order(lines, 'alice', 'order-9', { hold: 60, waitReplicas: 1 });
  const durableConfirm: Durable<OrderConfirmation> = await sk.confirmOrder(lines, 'order-9', { waitReplicas: 1 });
  const durableRefund: Durable<RefundResult[]> = await sk.refundOrder(lines, 'order-9', { waitReplicas: 1 });
  const orderTx = await client.multi().seckill.order(lines, 'bob', 'order-10').seckill.confirmOrder(lines, 'order-10').exec();
  // @ts-expect-error an order needs its request id
  await client.seckill.order(lines, 'alice');
  // @ts-expect-error unknown option
  await client.seckill.order(lines, 'alice', 'o', { requestId: 'x' });
  // @ts-expect-error a line is [key, qty] or { key, qty }
  await client.seckill.order([{ item: '{c}:phone' }], 'alice', 'o');
  // @ts-expect-error the module's own call sends one command, so it takes no wait
  await client.seckill.confirmOrder(lines, 'o', { waitReplicas: 1 });
  const saga = new CartSaga(cluster);
  const placement: CartPlacement = await saga.place('cart-1', 'alice', [['{a}:phone', 1], ['{b}:case', 1]], 900);
  if (!placement.placed) console.log(placement.refusedLine, placement.refusal === Outcome.SOLD_OUT, placement.refunds.length);
  const payBy2: number | null = placement.deadline;
  const paid2: CartConfirmation = await saga.confirm('cart-1', ['{a}:phone', '{b}:case']);
  if (!paid2.paid) console.log(paid2.failedLine, paid2.failure === ConfirmOutcome.LAPSED, paid2.refunds[0].units);
  const cancelled: readonly RefundResult[] = await new CartSaga(client).cancel('cart-1', [['{a}:phone', 1]]);
  // @ts-expect-error place needs the hold's seconds
  await saga.place('cart-1', 'alice', [['{a}:phone', 1]]);
  console.log(wholeOrder, firstLine, orderDeadline, lineOutcome, ors, durableOrder, durableConfirm, durableRefund, orderTx, payBy2, cancelled);

  // Scans: one page on the module, the iterator through seckillOf.
  const page: ScanPage = await client.seckill.scan('sku:1', '0', { count: 100 });
  const next: string = page.cursor;
  for (const rec of page.records) {
    if (rec.type === 'buyer') { const units: number = rec.units; console.log(units); }
    else { const status: RequestStatus = rec.status; console.log(status === RequestStatus.HELD, rec.deadline + 1); }
  }
  for await (const rec of seckillOf(client).scanIterator('sku:1', { count: 1000 })) {
    const r: ScanRecord = rec;
    if (r instanceof BuyerRecord) console.log(r.user);
    if (r instanceof RequestRecord) console.log(r.requestId);
  }
  // @ts-expect-error unknown scan option
  await client.seckill.scan('sku:1', 0, { limit: 1 });
  // @ts-expect-error the module sends one command: the iterator is seckillOf's
  client.seckill.scanIterator('sku:1');
  console.log(next);

  // Variants: several stocks under one limit.
  await client.seckill.init('{drop:7}', { 42: 2, 43: 1, 44: UNLIMITED }, { limit: 1, variantLimits: { 44: 1 }, stream: '{drop:7}:orders' });
  await client.seckill.init('{drop:8}', new Map([[Buffer.from('s'), 1], [Buffer.from('m'), 2]]), { variantLimits: new Map([['s', 1n]]) });
  const size: DeductResult = await client.seckill.deduct('{drop:7}', 'ana', 1, { requestId: 'order-60', variant: 43 });
  const sized: DeductResult = await client.seckill.deduct('{drop:7}', 'ana', { variant: '42', hold: 60, requestId: 'order-61' });
  const whole: number | null = await client.seckill.get('{drop:7}');
  const one: number | null = await client.seckill.get('{drop:7}', { variant: 44 });
  const mine: number | null = await client.seckill.bought('{drop:7}', 'ana', { variant: 43 });
  const vinfo: ItemInfo | null = await client.seckill.info('{drop:7}', { variant: '43' });
  if (vinfo !== null) console.log(vinfo.variants + 1);
  const restocked: number | null = await client.seckill.add('{drop:7}', 5, { variant: 42 });
  const vpage: ScanPage = await client.seckill.scan('{drop:7}', 0, { count: 10, variant: 42 });
  for await (const rec of seckillOf(client).scanIterator('{drop:7}', { variant: 43 })) console.log(rec.type);
  const vstate = await client.seckill.status('{drop:7}', 'order-60');
  const bySize: string | Buffer | null = vstate === null ? null : vstate.variant;
  const vholds = await client.seckill.holds('{drop:7}');
  if (vholds) for (const hold of vholds) { const v: string | Buffer | null = hold.variant; console.log(v); }
  const vtx = await client.multi().seckill.get('{drop:7}', { variant: 42 }).seckill.info('{drop:7}', { variant: 42 }).exec();
  // @ts-expect-error a variant name is not an object
  await client.seckill.get('{drop:7}', { variant: { size: 42 } });
  // @ts-expect-error unknown option of get
  await client.seckill.get('{drop:7}', { size: 42 });
  // @ts-expect-error a variant limit is an integer
  await client.seckill.init('{drop:9}', { s: 1 }, { variantLimits: { s: true } });
  console.log(size, sized, whole, one, mine, restocked, vpage, bySize, vtx);
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
  await redis.seckill.init('sku:1', true);
  // @ts-expect-error a variant's stock must be an integer or UNLIMITED
  await redis.seckill.init('sku:1', { s: true });
  // Variants: the namespace, the flat methods, a pipeline.
  await redis.seckill.init('{drop}', new Map<string | number, number | 'UNLIMITED'>([[42, 1], ['43', UNLIMITED]]), { limit: 1 });
  const vr: DeductResult = await redis.seckill.deduct('{drop}', 'alice', { variant: 42, requestId: 'v-1' });
  const vs: number | null = await redis.seckillGet('{drop}', { variant: '42' });
  const vi: ItemInfo | null = await redis.seckill.info('{drop}', { variant: Buffer.from('43') });
  await redis.pipeline().seckill.bought('{drop}', 'alice', { variant: 42 }).seckill.add('{drop}', 1, { variant: 42 }).exec();
  for await (const rec of redis.seckill.scanIterator('{drop}', { variant: 42, count: 10 })) console.log(rec.type);
  console.log(vr, vs, vi);
  const cluster = install2(new Cluster([{ host: '127.0.0.1', port: 30001 }], { enableAutoPipelining: true }));
  const hs: Hold[] | null = await cluster.seckill.holds('sku:1', 'alice');
  const moved = await redis.pipeline()
    .seckill.take('{m}:0', 2, 't-1', '{m}:1')
    .seckill.add('{m}:1', 2, 't-1')
    .seckill.settle('{m}:0', 't-1')
    .seckill.transfers('{m}:0')
    .exec();
  const flatTake: number | null = await redis.seckillTake('p', 1, 't');
  const st: SettleOutcome = await redis.seckillSettle('p', 't');
  const split = new SplitItem(cluster, SplitItem.named('sku:7', 3));
  const sd: DeductResult = await split.deduct('alice');
  const sdw: Durable<DeductResult> = await split.deduct('alice', 1, { requestId: 'w', hold: 60, waitReplicas: 1 });
  const scw: Durable<ConfirmOutcome> = await split.confirm('alice', 'w', { waitReplicas: 1 });
  const srw: Durable<RefundResult> = await split.refund('alice', 'w', { waitReplicas: 1, waitTimeoutMs: 500 });

  // Waits on the client: the namespace and the flat methods.
  const dr: Durable<DeductResult> = await redis.seckill.deduct('sku:1', 'alice', 1, { requestId: 'o-1', waitReplicas: 1 });
  const dc: Durable<ConfirmOutcome> = await redis.seckillConfirm('sku:1', 'o-1', { waitReplicas: 1, waitTimeoutMs: 200 });
  const df: Durable<RefundResult> = await cluster.seckill.refund('sku:1', 'o-1', { waitReplicas: 1 });
  const same: typeof redis.seckill = seckillOf(redis);
  // @ts-expect-error no wait in a pipeline
  redis.pipeline().seckill.confirm('sku:1', 'o-1', { waitReplicas: 1 });
  // @ts-expect-error no wait in a transaction
  redis.multi().seckillDeduct('sku:1', 'alice', 1, { waitReplicas: 1 });
  console.log(sdw, scw, srw, dr.result.outcome, dc.durable, df.replicas, same);
  const overRedis = new SplitItem(redis, ['a', 'b']);
  const ss: number | null = await overRedis.stock();
  // @ts-expect-error ioredis without installSeckill has no seckill commands
  new SplitItem(new Redis(), ['a']);
  console.log(r, i, flat, results, hs, moved, flatTake, st, sd, ss);
  const flatScan: ScanPage = await redis.seckillScan('sku:1', 0);
  for await (const rec of redis.seckill.scanIterator('sku:1')) console.log(rec.type, flatScan.cursor);
  await redis.pipeline().seckill.scan('sku:1', '0').exec();
  const io: OrderResult = await cluster.seckill.order([['{c}:a', 1], ['{c}:b', 2]], 'alice', 'o-1', { hold: 60 });
  const ioFlat: OrderConfirmation = await redis.seckillConfirmOrder(['{c}:a', '{c}:b'], 'o-1');
  const ioWait: Durable<RefundResult[]> = await redis.seckill.refundOrder(['{c}:a', '{c}:b'], 'o-1', { waitReplicas: 1 });
  await redis.pipeline().seckill.order([['{c}:a', 1]], 'bob', 'o-2').seckillRefundOrder(['{c}:a'], 'o-2').exec();
  const ioCart: CartPlacement = await new CartSaga(cluster).place('cart-2', 'bob', [{ key: '{a}:x', qty: 1 }], 60);
  console.log(io, ioFlat, ioWait, ioCart);
}

async function glide(): Promise<void> {
  const client = installSeckill(await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: 6380 }] }));
  const r: DeductResult = await client.seckill.deduct('sku:1', 'alice', 2, { requestId: 'order-1', hold: 900 });
  const w: Durable<ConfirmOutcome> = await client.seckill.confirm('sku:1', 'order-1', { waitReplicas: 1 });
  const i: ItemInfo | null = await client.seckill.info('sku:1');
  const same: Durable<RefundResult> = await seckillOf(client).refund('sku:1', 'order-1', { waitReplicas: 1 });
  const o: OrderResult = await client.seckill.order([['{c}:a', 1], ['{c}:b', 2]], 'alice', 'o-1');
  for await (const rec of client.seckill.scanIterator('sku:1', { count: 100 })) console.log(rec.type);
  const batch = installSeckillGlide(new Batch(false));
  const chained: Batch = batch.seckill.deduct('sku:1', 'bob', 1).seckill.get('sku:1').set('k', 'v');
  const results: unknown[] | null = await client.seckill.exec(batch, false);
  // @ts-expect-error no wait in a batch
  batch.seckill.confirm('sku:1', 'order-1', { waitReplicas: 1 });
  const cluster = installSeckill(await GlideClusterClient.createClient({ addresses: [{ host: '127.0.0.1', port: 7000 }] }));
  const part = new SplitItem(cluster, ['a', 'b']);
  const placed: CartPlacement = await new CartSaga(cluster).place('cart-3', 'cy', [['{a}:x', 1]], 60);
  await cluster.seckill.exec(installSeckill(new ClusterBatch(true)).seckill.get('{c}:a'));
  // @ts-expect-error a GLIDE client without installSeckill has no seckill commands
  new SplitItem(await GlideClient.createClient({ addresses: [] }), ['a']);
  console.log(r, w, i, same, o, chained, results, part, placed);
}

function errors(err: unknown): void {
  const e = SeckillError.from(err);
  if (e instanceof UnavailableError && e.retryable) {
    const k: ErrorKind = e.kind;
    console.log(k === ErrorKind.UNAVAILABLE, e.code === 'NOREPLICAS' || e.code === '');
  }
  if (e instanceof RequestIdConflictError) {
    const k: ErrorKind = e.kind;
    console.log(k === ErrorKind.REQUEST_ID_CONFLICT, e.code, e.message, e.retryable);
  }
}

void nodeRedis; void ioredis; void glide; void errors;
