'use strict';
// The ioredis installer against a real server: RESP2, RESP3 (both reply
// mappings), string numbers, auto-pipelining, pipelines, transactions,
// errors and keyPrefix.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { startServer } = require('./helpers/servers');
const {
  commandsScenario, scanScenario, variantsScenario, transfersScenario, holdsScenario, ordersScenario, splitScenario, errorsScenario, expectSeckillError,
  plain, bought, rejected, plainRefund, refunded, notRefunded, plainOrder, plainConfirmation, plainRefunds, FAR,
} = require('./helpers/suite');
const {
  installSeckill, Outcome, ConfirmOutcome, RefundOutcome, SettleOutcome, DeductResult, ItemInfo, Hold, Transfer, SeckillError,
  RequestIdConflictError, InvalidArgumentError, ErrorKind, seckillOf, RequestStatus,
} = require('..');

let server;
const clients = [];

async function connect(options = {}) {
  const redis = new Redis({
    host: '127.0.0.1',
    port: server.port,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    lazyConnect: true,
    ...options,
  });
  redis.on('error', () => {});
  clients.push(redis);
  await redis.connect();
  return installSeckill(redis);
}

const admin = (...args) => server.command(...args);

before(async () => {
  server = await startServer();
});

after(async () => {
  for (const c of clients) c.disconnect();
  if (server) await server.stop();
});

const CONFIGS = {
  'RESP2': { protocol: 2 },
  'RESP3 (legacy reply mapping)': { protocol: 3 },
  'RESP3 (resp3 reply mapping)': { protocol: 3, replyMapping: 'resp3' },
  'RESP2 with stringNumbers': { protocol: 2, stringNumbers: true },
  'RESP3 with enableAutoPipelining': { protocol: 3, enableAutoPipelining: true },
  'RESP2 with enableAutoPipelining': { protocol: 2, enableAutoPipelining: true },
};

test('every command gives the same typed values in every configuration', async (t) => {
  const transcripts = {};
  for (const [name, options] of Object.entries(CONFIGS)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const redis = await connect(options);
      transcripts[name] = await commandsScenario(redis.seckill, admin);
    });
  }
  const [first, ...others] = Object.keys(CONFIGS);
  assert.ok(transcripts[first].length > 70);
  for (const name of others) assert.deepStrictEqual(transcripts[name], transcripts[first], name);
});

test('take, add with a transfer id, settle and transfers: the same typed values in every configuration', async (t) => {
  const transcripts = {};
  for (const [name, options] of Object.entries(CONFIGS)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const redis = await connect(options);
      transcripts[name] = await transfersScenario(redis.seckill);
    });
  }
  const [first, ...others] = Object.keys(CONFIGS);
  assert.ok(transcripts[first].length > 35);
  for (const name of others) assert.deepStrictEqual(transcripts[name], transcripts[first], name);
});

test('every fate of a hold and the deadline of deduct: the same typed values in every configuration', async (t) => {
  const transcripts = {};
  for (const [name, options] of Object.entries(CONFIGS)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const redis = await connect(options);
      transcripts[name] = await holdsScenario(redis.seckill, admin);
    });
  }
  const [first, ...others] = Object.keys(CONFIGS);
  assert.ok(transcripts[first].length > 20);
  for (const name of others) assert.deepStrictEqual(transcripts[name], transcripts[first], name);
});

test('orders of several items (order, confirmOrder, refundOrder): the same typed values in every configuration', async (t) => {
  const transcripts = {};
  for (const [name, options] of Object.entries(CONFIGS)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const redis = await connect(options);
      transcripts[name] = await ordersScenario(redis.seckill, admin);
    });
  }
  const [first, ...others] = Object.keys(CONFIGS);
  assert.ok(transcripts[first].length > 20);
  for (const name of others) assert.deepStrictEqual(transcripts[name], transcripts[first], name);
});

for (const [name, options] of Object.entries({
  RESP2: { protocol: 2, keyPrefix: 'app:' },
  'RESP3 with enableAutoPipelining': { protocol: 3, replyMapping: 'resp3', enableAutoPipelining: true, keyPrefix: 'app:' },
})) {
  test(`${name}: orders in pipelines and MULTI/EXEC, with keyPrefix, flat methods and a wait`, async () => {
    await admin('FLUSHALL');
    const redis = await connect(options);
    const lines = [['{o}:a', 2], ['{o}:b', 1]];
    const tx = await redis.multi()
      .seckill.init('{o}:a', 5)
      .seckill.init('{o}:b', 1)
      .seckill.order(lines, 'ann', 'o-1', { holdUntil: FAR })
      .seckillOrder(lines, 'bob', 'o-2')
      .seckill.confirmOrder(lines, 'o-1')
      .seckillRefundOrder(['{o}:a', '{o}:b'], 'o-1')
      .exec();
    assert.ok(tx.every(([err]) => err === null));
    const values = tx.map(([, v]) => v);
    assert.deepEqual(values.slice(0, 2), [true, true]);
    assert.deepEqual(plainOrder(values[2]), { taken: true, lines: [bought(3), bought(0)], deadline: FAR });
    assert.deepEqual(plainOrder(values[3]), { taken: false, lines: [null, rejected(Outcome.SOLD_OUT)], deadline: null });
    assert.deepEqual(plainConfirmation(values[4]), { confirmed: true, lines: [ConfirmOutcome.CONFIRMED, ConfirmOutcome.CONFIRMED] });
    assert.deepEqual(plainRefunds(values[5]), [refunded(2), refunded(1)]);
    // keyPrefix went on every key of every line.
    assert.deepEqual([await admin('SECKILL.GET', 'app:{o}:a'), await admin('EXISTS', '{o}:a', '{o}:b')], [5, 0]);
    assert.equal((await admin('SECKILL.STATUS', 'app:{o}:b', 'o-1'))[1], 'refunded');

    const piped = await redis.pipeline()
      .seckill.order(lines, 'cy', 'o-3', { hold: 600 })
      .seckill.confirmOrder(lines, 'o-3')
      .seckill.order([['{o}:a', 1], ['{o}:a', 1]], 'cy', 'o-4')
      .exec();
    assert.deepEqual({ ...plainOrder(piped[0][1]), deadline: piped[0][1].deadline > 0 }, {
      taken: true, lines: [bought(3), bought(0)], deadline: true,
    });
    assert.equal(piped[1][1].confirmed, true);
    expectSeckillError(piped[2][0], InvalidArgumentError, {
      kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'a key appears on more than one line',
    });

    // Direct calls (not auto-pipelined: the first argument is not a key), with and without a wait.
    const [flat, durable] = await Promise.all([
      redis.seckillOrder([['{o}:a', 1]], 'dee', 'o-5', { hold: 600 }),
      redis.seckill.order([['{o}:a', 1]], 'eve', 'o-6', { hold: 600, waitReplicas: 0 }),
    ]);
    assert.deepEqual(plainOrder(flat).lines.length, 1);
    assert.deepEqual([durable.result.taken, durable.replicas, durable.durable], [true, 0, true]);
    const confirmed = await redis.seckill.confirmOrder(['{o}:a'], 'o-6', { waitReplicas: 1, waitTimeoutMs: 10 });
    assert.deepEqual([confirmed.result.lines, confirmed.replicas, confirmed.durable], [[ConfirmOutcome.CONFIRMED], 0, false]);
    const back = await redis.seckillRefundOrder(['{o}:a'], 'o-6', { waitReplicas: 0 });
    assert.deepEqual(plainRefunds(back.result), [refunded(1)]);
    assert.throws(() => redis.pipeline().seckill.refundOrder(['{o}:a'], 'o-6', { waitReplicas: 0 }), TypeError);
    const err = await redis.seckill.order([['{o}:a', 2]], 'dee', 'o-5').catch((e) => e);
    assert.ok(err instanceof RequestIdConflictError, String(err));
    assert.equal(await redis.seckill.get('{o}:a'), 2); // 5 - cy's 2 - dee's 1
  });
}

for (const [name, options] of Object.entries({
  RESP2: { protocol: 2 },
  'RESP3 with enableAutoPipelining': { protocol: 3, enableAutoPipelining: true },
})) {
  test(`${name}: SplitItem over an ioredis client`, async () => {
    await admin('FLUSHALL');
    const redis = await connect(options);
    await splitScenario(redis, admin);
  });
}

test('the flat methods, and installing twice', async () => {
  await admin('FLUSHALL');
  const redis = await connect();
  assert.equal(installSeckill(redis), redis);
  assert.equal(await redis.seckillInit('flat', 3), true);
  assert.deepEqual(plain(await redis.seckillDeduct('flat', 'u', 2)), bought(1));
  assert.equal(await redis.seckill.get('flat'), 1);
  assert.equal(await redis.seckillTake('flat', 1, 'm-1'), 1);
  assert.equal(await redis.seckillSettle('flat', 'm-1'), SettleOutcome.SETTLED);
  assert.deepEqual(await redis.seckillTransfers('flat'), []);
  assert.equal(redis.seckillDeductBuffer, undefined);
  // Its own commands are untouched.
  assert.equal(await redis.set('plain', 'v'), 'OK');
  assert.equal(await redis.get('plain'), 'v');
  assert.throws(() => installSeckill({}), TypeError);
});

for (const [name, options] of Object.entries({
  RESP2: { protocol: 2 },
  RESP3: { protocol: 3, replyMapping: 'resp3' },
})) {
  test(`${name}: pipelines and MULTI/EXEC return typed values`, async () => {
    await admin('FLUSHALL');
    const redis = await connect(options);
    const tx = await redis.multi()
      .seckill.init('{p}', 10, { limit: 3 })
      .seckill.deduct('{p}', 'alice', 2, { requestId: 'p-1', holdUntil: FAR })
      .set('{p}:plain', 'x')
      .seckill.get('{p}')
      .seckill.holds('{p}')
      .seckill.confirm('{p}', 'p-1')
      .seckill.info('{p}')
      .seckill.info('{nothing}')
      .seckill.take('{p}', 2, 'm-1', '{p}:elsewhere')
      .seckill.transfers('{p}')
      .seckillSettle('{p}', 'm-1')
      .seckill.add('{p}', 2, { transferId: 'm-2' })
      .exec();
    assert.equal(tx.length, 12);
    assert.ok(tx.every(([err]) => err === null));
    const values = tx.map(([, v]) => v);
    assert.equal(values[0], true);
    assert.ok(values[1] instanceof DeductResult);
    assert.deepEqual(plain(values[1]), bought(8));
    assert.equal(values[2], 'OK');
    assert.equal(values[3], 8);
    assert.ok(values[4][0] instanceof Hold);
    assert.deepEqual({ ...values[4][0] }, { requestId: 'p-1', user: 'alice', qty: 2, deadline: FAR, variant: null });
    assert.equal(values[5], ConfirmOutcome.CONFIRMED);
    assert.ok(values[6] instanceof ItemInfo);
    assert.equal(values[6].sold, 2);
    assert.equal(values[7], null);
    assert.equal(values[8], 2);
    assert.ok(values[9][0] instanceof Transfer);
    assert.deepEqual(values[9].map((r) => ({ ...r })), [{ transferId: 'm-1', units: 2, destination: '{p}:elsewhere', variant: null }]);
    assert.equal(values[10], SettleOutcome.SETTLED);
    assert.equal(values[11], 8);

    const piped = await redis.pipeline()
      .seckill.deduct('{p}', 'bob', 1, { requestId: 'p-2' })
      .seckillBought('{p}', 'bob')
      .seckill.refund('{p}', 'p-2')
      .seckill.add('{p}', 5)
      .seckill.deduct('{p}', 'carol', 2, { requestId: 'p-1' })
      .exec();
    assert.deepEqual(plain(piped[0][1]), bought(7));
    assert.deepEqual(piped.slice(1, 4).map(([err]) => err), [null, null, null]);
    assert.deepEqual([piped[1][1], plainRefund(piped[2][1]), piped[3][1]], [1, refunded(1), 13]);
    const moved = await redis.pipeline()
      .seckill.take('{p}', 1, 'm-3')
      .seckill.settle('{p}', 'm-3')
      .seckill.info('{p}')
      .seckill.take('{p}', 5, 'm-3')
      .exec();
    assert.deepEqual(moved.slice(0, 2), [[null, 1], [null, SettleOutcome.SETTLED]]);
    assert.deepEqual([moved[2][1].movedOut, moved[2][1].movedIn], [3, 2]);
    expectSeckillError(moved[3][0], RequestIdConflictError, {
      kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
      message: 'transfer id was already used for another quantity or the other direction',
    });
    // In a pipeline the error is ioredis's own; SeckillError.from types it.
    expectSeckillError(piped[4][0], RequestIdConflictError, {
      kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
      message: 'request id was already used by another user or for another quantity',
    });

    // A pipeline given as an array, then extended with seckill commands.
    const batch = await redis.pipeline([['set', '{p}:a', '1']]).seckill.get('{p}').exec();
    assert.deepEqual(batch, [[null, 'OK'], [null, 12]]);

    // An error at EXEC time.
    const failed = await redis.multi().seckill.get('{p}').seckill.deduct('{p}', 'carol', 0).exec();
    assert.equal(failed[0][1], 12);
    expectSeckillError(failed[1][0], InvalidArgumentError, {
      kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'value is out of range, must be positive',
    });
  });

  test(`${name}: deadlines and the fates of holds in pipelines and MULTI/EXEC`, async () => {
    await admin('FLUSHALL');
    const redis = await connect(options);
    // DEDUCT with a hold replies [code, deadline] inside EXEC too.
    const tx = await redis.multi()
      .seckill.init('{f}', 5)
      .seckill.deduct('{f}', 'ann', 1, { requestId: 'h-1', holdUntil: FAR })
      .seckill.deduct('{f}', 'bob', 1, { requestId: 'p-1' })
      .seckillDeduct('{f}', 'cy', 1, { requestId: 'h-2', hold: 600 })
      .seckill.status('{f}', 'h-2')
      .seckill.refund('{f}', 'h-2')
      .seckillRefund('{f}', 'h-2')
      .seckill.confirm('{f}', 'h-2')
      .seckillConfirm('{f}', 'never-used')
      .seckill.refund('{f}', 'never-used')
      .seckill.deduct('{f}', 'dee', 9, { requestId: 'h-3', hold: 600 })
      .exec();
    assert.ok(tx.every(([err]) => err === null));
    const values = tx.map(([, v]) => v);
    assert.equal(values[0], true);
    assert.deepEqual([plain(values[1]), values[1].deadline], [bought(4), FAR]);
    assert.deepEqual([plain(values[2]), values[2].deadline], [bought(3), null]);
    assert.deepEqual([plain(values[3]), values[4].status], [bought(2), RequestStatus.HELD]);
    assert.equal(values[3].deadline, values[4].deadline);
    assert.deepEqual(values.slice(5, 10).map((v) => (typeof v === 'string' ? v : plainRefund(v))), [
      refunded(1), notRefunded(RefundOutcome.ALREADY_REFUNDED), ConfirmOutcome.REFUNDED,
      ConfirmOutcome.UNKNOWN_REQUEST, notRefunded(RefundOutcome.UNKNOWN_REQUEST),
    ]);
    assert.deepEqual([plain(values[10]), values[10].deadline], [rejected(Outcome.SOLD_OUT), null]);

    // A hold that lapsed, in a pipeline; with the replay of a pending hold, and of one confirmed since.
    assert.equal(await admin('SECKILL.RELEASE', '{f}', 'h-1'), 1);
    await redis.seckill.deduct('{f}', 'eve', 1, { requestId: 'h-4', holdUntil: FAR });
    const piped = await redis.pipeline()
      .seckill.confirm('{f}', 'h-1')
      .seckill.refund('{f}', 'h-1')
      .seckill.deduct('{f}', 'eve', 1, { requestId: 'h-4', holdUntil: FAR })
      .seckill.confirm('{f}', 'h-4')
      .seckill.deduct('{f}', 'eve', 1, { requestId: 'h-4', holdUntil: FAR })
      .seckill.confirm('{nothing}', 'h-1')
      .seckill.refund('{nothing}', 'h-1')
      .exec();
    assert.ok(piped.every(([err]) => err === null));
    const got = piped.map(([, v]) => v);
    assert.deepEqual([got[0], plainRefund(got[1])], [ConfirmOutcome.LAPSED, notRefunded(RefundOutcome.LAPSED)]);
    assert.deepEqual([plain(got[2]), got[2].deadline], [bought(3), FAR]);
    assert.equal(got[3], ConfirmOutcome.CONFIRMED);
    assert.deepEqual([plain(got[4]), got[4].deadline], [bought(3), null]);
    assert.deepEqual([got[5], plainRefund(got[6])], [ConfirmOutcome.NO_ITEM, notRefunded(RefundOutcome.NO_ITEM)]);
  });

  test(`${name}: direct calls reject with typed errors`, async () => {
    await admin('FLUSHALL');
    const redis = await connect(options);
    await errorsScenario(redis.seckill, admin, async (username, password) => {
      const c = await connect({ ...options, username, password });
      return { sk: c.seckill, close: () => c.disconnect() };
    }, { typedDirectly: true });
  });
}

test('auto-pipelining: concurrent calls are batched and each gets its own value', async () => {
  await admin('FLUSHALL');
  const redis = await connect({ enableAutoPipelining: true });
  await redis.seckill.init('{burst}', 150, { limit: 1 });
  const calls = Array.from({ length: 200 }, (_, i) => redis.seckill.deduct('{burst}', `u${i % 180}`, 1, { requestId: `r${i % 180}` }));
  assert.ok(redis.autoPipelineQueueSize > 0, 'the calls are queued in an auto-pipeline');
  const results = await Promise.all(calls);
  // 180 distinct requests on 150 units, then 20 replays of the first ones.
  const firsts = results.slice(0, 180);
  assert.equal(firsts.filter((r) => r.ok).length, 150);
  assert.equal(firsts.filter((r) => r.outcome === Outcome.SOLD_OUT).length, 30);
  assert.deepEqual(firsts.filter((r) => r.ok).map((r) => r.stock).sort((a, b) => a - b), Array.from({ length: 150 }, (_, i) => i));
  for (let i = 180; i < 200; i++) assert.deepEqual(plain(results[i]), plain(results[i - 180]));
  // Errors of auto-pipelined calls are typed too.
  const err = await redis.seckill.deduct('{burst}', 'someone-else', 1, { requestId: 'r1' }).catch((e) => e);
  assert.ok(err instanceof RequestIdConflictError);
  assert.equal(await redis.seckill.get('{burst}'), 0);
});

test('ids that are not UTF-8 come back as Buffers', async () => {
  await admin('FLUSHALL');
  const redis = await connect();
  const id = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
  const user = Buffer.from([0xc3, 0x28]);
  await redis.seckill.init('{bin}', 5);
  assert.deepEqual(plain(await redis.seckill.deduct('{bin}', user, 1, { requestId: id, holdUntil: FAR })), bought(4));
  assert.deepEqual(plain(await redis.seckill.deduct('{bin}', 'zoë', 1, { requestId: 'ünïcode', holdUntil: FAR })), bought(3));
  const holds = await redis.seckill.holds('{bin}');
  assert.deepEqual(holds.map((h) => ({ ...h })), [
    { requestId: 'ünïcode', user: 'zoë', qty: 1, deadline: FAR, variant: null },
    { requestId: id, user, qty: 1, deadline: FAR, variant: null },
  ]);
  assert.equal(await redis.seckill.bought('{bin}', user), 1);
  assert.deepEqual((await redis.seckill.holds('{bin}', user)).map((h) => h.requestId), [id]);
  // A binary item key works too.
  const key = Buffer.from([0x7b, 0x62, 0x7d, 0xff]);
  assert.equal(await redis.seckill.init(key, 2), true);
  assert.equal(await redis.seckill.get(key), 2);
});

for (const enableAutoPipelining of [false, true]) {
  test(`keyPrefix${enableAutoPipelining ? ' with auto-pipelining' : ''}: item and stream keys are prefixed, INFO names the stream unprefixed`, async () => {
    await admin('FLUSHALL');
    const redis = await connect({ keyPrefix: 'app:', enableAutoPipelining });
    assert.equal(await redis.seckill.init('{sku:9}', 5, { stream: '{sku:9}:orders' }), true);
    assert.deepEqual(plain(await redis.seckill.deduct('{sku:9}', 'alice', 1, { requestId: 'k-1' })), bought(4));
    assert.equal(await admin('EXISTS', 'app:{sku:9}'), 1);
    assert.equal(await admin('EXISTS', '{sku:9}'), 0);
    assert.equal(await admin('XLEN', 'app:{sku:9}:orders'), 1);
    const raw = await admin('SECKILL.INFO', 'app:{sku:9}');
    assert.equal(raw[raw.indexOf('stream') + 1], 'app:{sku:9}:orders');
    assert.equal((await redis.seckill.info('{sku:9}')).stream, '{sku:9}:orders');
    // ioredis's own commands get the same prefix.
    assert.equal(await redis.exists('{sku:9}'), 1);
    assert.equal(await redis.xlen('{sku:9}:orders'), 1);
    const tx = await redis.multi().seckill.info('{sku:9}').seckill.get('{sku:9}').exec();
    assert.equal(tx[0][1].stream, '{sku:9}:orders');
    assert.equal(tx[1][1], 4);
    const piped = await redis.pipeline().seckill.stream('{sku:9}', '{sku:9}:o2', { maxlen: 3 }).seckill.bought('{sku:9}', 'alice').exec();
    assert.deepEqual(piped, [[null, true], [null, 1]]);
    const raw2 = await admin('SECKILL.INFO', 'app:{sku:9}');
    assert.equal(raw2[raw2.indexOf('stream') + 1], 'app:{sku:9}:o2');
    // A Buffer prefix works the same.
    const bufRedis = await connect({ keyPrefix: Buffer.from('buf:'), enableAutoPipelining });
    assert.equal(await bufRedis.seckill.init('{b}', 1, { stream: '{b}:orders' }), true);
    assert.equal(await admin('EXISTS', 'buf:{b}'), 1);
    assert.equal((await bufRedis.seckill.info('{b}')).stream, '{b}:orders');

    // TAKE's destination names a key: it gets the prefix too, and TRANSFERS
    // reports it as the caller named it.
    assert.equal(await redis.seckill.init('part:0', 10), true);
    assert.equal(await redis.seckill.init('part:1', 0), true);
    assert.equal(await redis.seckill.take('part:0', 3, 'm-1', 'part:1'), 3);
    assert.deepEqual(await admin('SECKILL.TRANSFERS', 'app:part:0'), [['m-1', 3, 'app:part:1']]);
    assert.deepEqual((await redis.seckill.transfers('part:0')).map((x) => ({ ...x })), [
      { transferId: 'm-1', units: 3, destination: 'part:1', variant: null },
    ]);
    const moved = await redis.pipeline().seckill.transfers('part:0').seckill.add('part:1', 3, { transferId: 'm-1' }).exec();
    assert.equal(moved[0][1][0].destination, 'part:1');
    assert.equal(moved[1][1], 3);
    assert.equal(await admin('SECKILL.GET', 'app:part:1'), 3);
    assert.equal(await redis.seckill.settle('part:0', 'm-1'), SettleOutcome.SETTLED);
    await admin('SECKILL.TAKE', 'app:part:0', '1', 'ID', 'm-2', 'TO', 'other:part');
    assert.equal((await redis.seckill.transfers('part:0'))[0].destination, 'other:part');
    assert.equal(await admin('EXISTS', 'part:0', 'part:1'), 0);
    assert.equal(await bufRedis.seckill.init('{b}:p0', 4), true);
    assert.equal(await bufRedis.seckill.take('{b}:p0', 1, 'm', Buffer.from('{b}:p1')), 1);
    assert.deepEqual(await admin('SECKILL.TRANSFERS', 'buf:{b}:p0'), [['m', 1, 'buf:{b}:p1']]);
    assert.equal((await bufRedis.seckill.transfers('{b}:p0'))[0].destination, '{b}:p1');
  });
}

test('arguments are checked before anything is sent', async () => {
  const redis = await connect();
  await assert.rejects(redis.seckill.deduct('k', 'u', Number.MAX_SAFE_INTEGER + 2), RangeError);
  await assert.rejects(redis.seckill.deduct('k', 'u', 1, { hold: 1, requestId: {} }), TypeError);
  await assert.rejects(redis.seckill.stream('k', null, 5), TypeError);
  const err = await redis.seckill.add('k', true).catch((e) => e);
  assert.ok(err instanceof TypeError);
  assert.equal(SeckillError.from(err), err);
  // In a pipeline the same mistake throws at once.
  assert.throws(() => redis.pipeline().seckill.add('k', true), TypeError);
});

test('scan: one page, and scanIterator over every record, in every configuration', async (t) => {
  for (const [name, options] of Object.entries(CONFIGS)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const redis = await connect(options);
      assert.equal(seckillOf(redis), redis.seckill);
      await scanScenario(redis.seckill, admin);
      assert.equal((await redis.seckillScan('{scan}:every', 0, { count: 2 })).records.length, 2);
      const [[err, page]] = await redis.pipeline().seckill.scan('{scan}:every', '0', { count: 100 }).exec();
      assert.equal(err, null);
      assert.deepEqual([page.cursor, page.records.length], ['0', 11]);
      assert.throws(() => redis.pipeline().seckill.scanIterator('{scan}:every'), TypeError);
    });
  }
});

test('variants (a drop of sizes under one limit): the same typed values in every configuration', async (t) => {
  const transcripts = {};
  for (const [name, options] of Object.entries(CONFIGS)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const redis = await connect(options);
      transcripts[name] = await variantsScenario(redis.seckill, admin, { typedDirectly: true });
    });
  }
  const [first, ...others] = Object.keys(CONFIGS);
  assert.ok(transcripts[first].length > 40);
  for (const name of others) assert.deepStrictEqual(transcripts[name], transcripts[first], name);
});

for (const [name, options] of Object.entries({
  RESP2: { protocol: 2, keyPrefix: 'app:' },
  'RESP3 with enableAutoPipelining': { protocol: 3, replyMapping: 'resp3', enableAutoPipelining: true, keyPrefix: 'app:' },
})) {
  test(`${name}: variants in pipelines and MULTI/EXEC, with keyPrefix (on the key, not on the variant), and flat methods`, async () => {
    await admin('FLUSHALL');
    const redis = await connect(options);
    const tx = await redis.multi()
      .seckill.init('{v}', new Map([['s', 1], ['m', 2]]), { limit: 1, variantLimits: { m: 1 } })
      .seckill.deduct('{v}', 'ann', 1, { requestId: 'v-1', variant: 'm', holdUntil: FAR })
      .seckill.deduct('{v}', 'ann', 1, { requestId: 'v-2', variant: 's' })
      .seckill.get('{v}')
      .seckillGet('{v}', { variant: 'm' })
      .seckill.bought('{v}', 'ann', { variant: 'm' })
      .seckill.holds('{v}')
      .seckill.status('{v}', 'v-1')
      .seckill.info('{v}')
      .seckill.info('{v}', { variant: 's' })
      .seckill.add('{v}', 2, { variant: 's' })
      .seckill.scan('{v}', '0', { variant: 'm' })
      .exec();
    assert.ok(tx.every(([err]) => err === null), String(tx.map(([err]) => err)));
    const values = tx.map(([, v]) => v);
    assert.equal(values[0], true);
    assert.deepEqual([plain(values[1]), values[1].deadline], [bought(1), FAR]);
    assert.deepEqual(plain(values[2]), rejected(Outcome.LIMIT_REACHED));
    assert.deepEqual(values.slice(3, 6), [2, 1, 1]);
    assert.deepEqual(values[6].map((h) => ({ ...h })), [{ requestId: 'v-1', user: 'ann', qty: 1, deadline: FAR, variant: 'm' }]);
    assert.deepEqual([values[7].status, values[7].variant], [RequestStatus.HELD, 'm']);
    assert.ok(values[8] instanceof ItemInfo);
    assert.deepEqual([values[8].variants, values[8].stock, values[8].held], [2, 2, 1]);
    assert.deepEqual([values[9].variants, values[9].stock, values[9].sold], [0, 1, 0]);
    assert.equal(values[10], 3);
    assert.deepEqual(values[11].records.map((r) => r.type), ['buyer', 'request']);
    assert.deepEqual([await admin('SECKILL.GET', 'app:{v}', 'VARIANT', 's'), await admin('EXISTS', '{v}')], [3, 0]);

    const piped = await redis.pipeline()
      .seckill.refund('{v}', 'v-1')
      .seckillDeduct('{v}', 'ann', 1, { requestId: 'v-3', variant: 's' })
      .seckill.deduct('{v}', 'bob', 1)
      .seckill.get('{v}', { variant: 's' })
      .exec();
    assert.deepEqual(plainRefund(piped[0][1]), refunded(1));
    assert.deepEqual(plain(piped[1][1]), bought(2));
    expectSeckillError(piped[2][0], InvalidArgumentError, {
      kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'the item sells variants: name one with VARIANT',
    });
    assert.equal(piped[3][1], 2);
    // Direct calls, concurrent (auto-pipelined in the second configuration).
    const direct = await Promise.all([
      redis.seckill.get('{v}', { variant: 's' }), redis.seckillBought('{v}', 'ann'), redis.seckill.info('{v}', { variant: 'm' }),
    ]);
    assert.deepEqual([direct[0], direct[1], direct[2].stock], [2, 1, 2]);
  });
}
