'use strict';
// The node-redis module against a real server, under RESP2 and RESP3.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient, RESP_TYPES } = require('redis');
const { startServer } = require('./helpers/servers');
const {
  commandsScenario, scanScenario, variantsScenario, transfersScenario, holdsScenario, ordersScenario, splitScenario, errorsScenario, expectSeckillError,
  plain, bought, rejected, plainRefund, refunded, notRefunded, plainOrder, plainConfirmation, plainRefunds, FAR,
} = require('./helpers/suite');
const {
  seckill, Outcome, ConfirmOutcome, RefundOutcome, SettleOutcome, DeductResult, ItemInfo, Hold, Transfer, SeckillError,
  RequestIdConflictError, InvalidArgumentError, ErrorKind, SplitItem, seckillOf, RequestStatus,
} = require('..');

let server;
const clients = [];

async function connect(options = {}) {
  const client = createClient({
    socket: { host: '127.0.0.1', port: server.port, reconnectStrategy: false },
    modules: { seckill },
    ...options,
  });
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  return client;
}

const admin = (...args) => server.command(...args);

before(async () => {
  server = await startServer();
});

after(async () => {
  for (const c of clients) {
    try { c.destroy(); } catch { /* closed */ }
  }
  if (server) await server.stop();
});

test('every command gives the same typed values under RESP2, RESP3 and other type mappings', async (t) => {
  const transcripts = {};
  for (const RESP of [2, 3]) {
    await t.test(`RESP${RESP}`, async () => {
      await admin('FLUSHALL');
      const client = await connect({ RESP });
      transcripts[`RESP${RESP}`] = await commandsScenario(client.seckill, admin);
    });
  }
  await t.test('RESP3 with numbers as BigInt, strings as Buffers, maps as Map', async () => {
    await admin('FLUSHALL');
    const client = (await connect({ RESP: 3 })).withTypeMapping({
      [RESP_TYPES.NUMBER]: BigInt,
      [RESP_TYPES.BLOB_STRING]: Buffer,
      [RESP_TYPES.SIMPLE_STRING]: Buffer,
      [RESP_TYPES.MAP]: Map,
    });
    transcripts.mapped = await commandsScenario(client.seckill, admin);
  });
  await t.test('RESP2 with numbers as strings', async () => {
    await admin('FLUSHALL');
    const client = (await connect({ RESP: 2 })).withTypeMapping({ [RESP_TYPES.NUMBER]: String });
    transcripts.strings = await commandsScenario(client.seckill, admin);
  });
  assert.ok(transcripts.RESP2.length > 70, `${transcripts.RESP2.length} values`);
  assert.deepStrictEqual(transcripts.RESP3, transcripts.RESP2);
  assert.deepStrictEqual(transcripts.mapped, transcripts.RESP2);
  assert.deepStrictEqual(transcripts.strings, transcripts.RESP2);
});

test('take, add with a transfer id, settle and transfers: the same typed values under RESP2, RESP3 and other type mappings', async (t) => {
  const transcripts = {};
  const configs = {
    RESP2: (c) => c,
    RESP3: (c) => c,
    'RESP3 mapped': (c) => c.withTypeMapping({
      [RESP_TYPES.NUMBER]: BigInt,
      [RESP_TYPES.BLOB_STRING]: Buffer,
      [RESP_TYPES.SIMPLE_STRING]: Buffer,
      [RESP_TYPES.MAP]: Map,
    }),
    'RESP2 strings': (c) => c.withTypeMapping({ [RESP_TYPES.NUMBER]: String }),
  };
  for (const [name, map] of Object.entries(configs)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const client = map(await connect({ RESP: name.startsWith('RESP3') ? 3 : 2 }));
      transcripts[name] = await transfersScenario(client.seckill);
    });
  }
  assert.ok(transcripts.RESP2.length > 35, `${transcripts.RESP2.length} values`);
  for (const name of Object.keys(configs)) assert.deepStrictEqual(transcripts[name], transcripts.RESP2, name);
});

test('every fate of a hold and the deadline of deduct: the same typed values under RESP2, RESP3 and other type mappings', async (t) => {
  const transcripts = {};
  const configs = {
    RESP2: (c) => c,
    RESP3: (c) => c,
    'RESP3 mapped': (c) => c.withTypeMapping({
      [RESP_TYPES.NUMBER]: BigInt,
      [RESP_TYPES.BLOB_STRING]: Buffer,
      [RESP_TYPES.SIMPLE_STRING]: Buffer,
      [RESP_TYPES.MAP]: Map,
    }),
    'RESP2 strings': (c) => c.withTypeMapping({ [RESP_TYPES.NUMBER]: String }),
  };
  for (const [name, map] of Object.entries(configs)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const client = map(await connect({ RESP: name.startsWith('RESP3') ? 3 : 2 }));
      transcripts[name] = await holdsScenario(client.seckill, admin);
    });
  }
  assert.ok(transcripts.RESP2.length > 20, `${transcripts.RESP2.length} values`);
  for (const name of Object.keys(configs)) assert.deepStrictEqual(transcripts[name], transcripts.RESP2, name);
});

test('orders of several items (order, confirmOrder, refundOrder): the same typed values under RESP2, RESP3 and other type mappings', async (t) => {
  const transcripts = {};
  const configs = {
    RESP2: (c) => c,
    RESP3: (c) => c,
    'RESP3 mapped': (c) => c.withTypeMapping({
      [RESP_TYPES.NUMBER]: BigInt,
      [RESP_TYPES.BLOB_STRING]: Buffer,
      [RESP_TYPES.SIMPLE_STRING]: Buffer,
      [RESP_TYPES.MAP]: Map,
    }),
    'RESP2 strings': (c) => c.withTypeMapping({ [RESP_TYPES.NUMBER]: String }),
  };
  for (const [name, map] of Object.entries(configs)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const client = map(await connect({ RESP: name.startsWith('RESP3') ? 3 : 2 }));
      transcripts[name] = await ordersScenario(client.seckill, admin);
    });
  }
  assert.ok(transcripts.RESP2.length > 20, `${transcripts.RESP2.length} values`);
  for (const name of Object.keys(configs)) assert.deepStrictEqual(transcripts[name], transcripts.RESP2, name);
});

for (const RESP of [2, 3]) {
  test(`RESP${RESP}: orders in MULTI/EXEC and pipelines, with keyPrefix, and with a wait through seckillOf`, async () => {
    await admin('FLUSHALL');
    const client = await connect({ RESP, keyPrefix: 'app:' });
    const lines = [['{o}:a', 2], ['{o}:b', 1]];
    const tx = await client.multi()
      .seckill.init('{o}:a', 5)
      .seckill.init('{o}:b', 1)
      .seckill.order(lines, 'ann', 'o-1', { holdUntil: FAR })
      .seckill.order(lines, 'bob', 'o-2')
      .seckill.confirmOrder(lines, 'o-1')
      .seckill.refundOrder(['{o}:a', '{o}:b'], 'o-1')
      .exec();
    assert.deepEqual(tx.slice(0, 2), [true, true]);
    assert.deepEqual(plainOrder(tx[2]), { taken: true, lines: [bought(3), bought(0)], deadline: FAR });
    assert.deepEqual(plainOrder(tx[3]), { taken: false, lines: [null, rejected(Outcome.SOLD_OUT)], deadline: null });
    assert.deepEqual(plainConfirmation(tx[4]), { confirmed: true, lines: [ConfirmOutcome.CONFIRMED, ConfirmOutcome.CONFIRMED] });
    assert.deepEqual(plainRefunds(tx[5]), [refunded(2), refunded(1)]);
    // keyPrefix went on every key of every line.
    assert.deepEqual([await admin('SECKILL.GET', 'app:{o}:a'), await admin('EXISTS', '{o}:a', '{o}:b')], [5, 0]);
    assert.equal((await admin('SECKILL.STATUS', 'app:{o}:b', 'o-1'))[1], 'refunded');

    const piped = await client.multi()
      .seckill.order(lines, 'cy', 'o-3', { hold: 600 })
      .seckill.confirmOrder(lines, 'o-3')
      .execAsPipeline();
    assert.deepEqual({ ...plainOrder(piped[0]), deadline: piped[0].deadline > 0 }, { taken: true, lines: [bought(3), bought(0)], deadline: true });
    assert.equal(piped[1].confirmed, true);

    // A wait is seckillOf's (one pipeline with WAIT); the module's call refuses it.
    const sk = seckillOf(client);
    const durable = await sk.order([['{o}:a', 1]], 'dee', 'o-4', { hold: 600, waitReplicas: 0 });
    assert.deepEqual([plainOrder(durable.result).lines, durable.replicas, durable.durable], [[bought(2)], 0, true]);
    const confirmed = await sk.confirmOrder([['{o}:a', 1]], 'o-4', { waitReplicas: 0 });
    assert.deepEqual([confirmed.result.lines, confirmed.durable], [[ConfirmOutcome.CONFIRMED], true]);
    const back = await sk.refundOrder(['{o}:a'], 'o-4', { waitReplicas: 1, waitTimeoutMs: 10 });
    assert.deepEqual([plainRefunds(back.result), back.replicas, back.durable], [[refunded(1)], 0, false]);
    await assert.rejects(client.seckill.order([['{o}:a', 1]], 'dee', 'o-5', { waitReplicas: 0 }), TypeError);
    assert.deepEqual(plainOrder(await sk.order([['{o}:a', 1]], 'dee', 'o-4')), {
      taken: false, lines: [rejected(Outcome.CANCELLED)], deadline: null,
    });
  });
}

for (const RESP of [2, 3]) {
  test(`RESP${RESP}: SplitItem over a node-redis client`, async () => {
    await admin('FLUSHALL');
    const client = await connect({ RESP });
    await splitScenario(client, admin);
  });
}

test('upper-case aliases, as node-redis modules have them', async () => {
  await admin('FLUSHALL');
  const client = await connect({ RESP: 3 });
  assert.equal(seckill.DEDUCT, seckill.deduct);
  assert.equal(await client.seckill.INIT('alias', 2), true);
  assert.deepEqual(plain(await client.seckill.DEDUCT('alias', 'u')), bought(1));
});

for (const RESP of [2, 3]) {
  test(`RESP${RESP}: MULTI/EXEC and pipelines return typed values`, async () => {
    await admin('FLUSHALL');
    const client = await connect({ RESP });
    const replies = await client.multi()
      .seckill.init('{p}', 10, { limit: 3 })
      .seckill.deduct('{p}', 'alice', 2, { requestId: 'p-1', holdUntil: FAR })
      .seckill.get('{p}')
      .seckill.holds('{p}')
      .seckill.confirm('{p}', 'p-1')
      .seckill.info('{p}')
      .seckill.info('{nothing}')
      .seckill.take('{p}', 2, 'm-1', '{p}:elsewhere')
      .seckill.transfers('{p}')
      .seckill.settle('{p}', 'm-1')
      .seckill.add('{p}', 2, { transferId: 'm-2' })
      .exec();
    assert.equal(replies[0], true);
    assert.ok(replies[1] instanceof DeductResult);
    assert.deepEqual(plain(replies[1]), bought(8));
    assert.equal(replies[2], 8);
    assert.ok(replies[3][0] instanceof Hold);
    assert.deepEqual({ ...replies[3][0] }, { requestId: 'p-1', user: 'alice', qty: 2, deadline: FAR, variant: null });
    assert.equal(replies[4], ConfirmOutcome.CONFIRMED);
    assert.ok(replies[5] instanceof ItemInfo);
    assert.equal(replies[5].sold, 2);
    assert.equal(replies[6], null);
    assert.equal(replies[7], 2);
    assert.ok(replies[8][0] instanceof Transfer);
    assert.deepEqual(replies[8].map((r) => ({ ...r })), [{ transferId: 'm-1', units: 2, destination: '{p}:elsewhere', variant: null }]);
    assert.equal(replies[9], SettleOutcome.SETTLED);
    assert.equal(replies[10], 8);

    const piped = await client.multi()
      .seckill.deduct('{p}', 'bob', 1, { requestId: 'p-2' })
      .seckill.bought('{p}', 'bob')
      .seckill.refund('{p}', 'p-2')
      .seckill.add('{p}', 5)
      .execAsPipeline();
    assert.deepEqual(plain(piped[0]), bought(7));
    assert.deepEqual([piped[1], plainRefund(piped[2]), piped[3]], [1, refunded(1), 13]);
    const moved = await client.multi()
      .seckill.take('{p}', 1, 'm-3')
      .seckill.settle('{p}', 'm-3')
      .seckill.info('{p}')
      .execAsPipeline();
    assert.deepEqual(moved.slice(0, 2), [1, SettleOutcome.SETTLED]);
    assert.deepEqual([moved[2].movedOut, moved[2].movedIn], [3, 2]);

    // An error inside a transaction: the others still have typed values.
    let multiErr;
    try {
      await client.multi()
        .seckill.get('{p}')
        .seckill.deduct('{p}', 'carol', 2, { requestId: 'p-1' })
        .exec();
    } catch (err) {
      multiErr = err;
    }
    assert.ok(multiErr, 'EXEC with an error reply rejects');
    assert.equal(SeckillError.from(multiErr), multiErr, 'MultiErrorReply is not itself a seckill error');
    assert.equal(multiErr.replies[0], 12);
    expectSeckillError(multiErr.replies[1], RequestIdConflictError, {
      kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
      message: 'request id was already used by another user or for another quantity',
    });

    // Concurrent calls (node-redis pipelines them on its connection).
    await client.seckill.init('{burst}', 100);
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => client.seckill.deduct('{burst}', `u${i}`)));
    assert.deepEqual(results.map((r) => r.stock).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i));
    assert.deepEqual(plain(await client.seckill.deduct('{burst}', 'late')), { outcome: Outcome.SOLD_OUT, stock: null, ok: false, bought: false });
  });

  test(`RESP${RESP}: deadlines and the fates of holds in MULTI/EXEC and pipelines`, async () => {
    await admin('FLUSHALL');
    const client = await connect({ RESP });
    // DEDUCT with a hold replies [code, deadline] inside EXEC too.
    const tx = await client.multi()
      .seckill.init('{f}', 5)
      .seckill.deduct('{f}', 'ann', 1, { requestId: 'h-1', holdUntil: FAR })
      .seckill.deduct('{f}', 'bob', 1, { requestId: 'p-1' })
      .seckill.deduct('{f}', 'cy', 1, { requestId: 'h-2', hold: 600 })
      .seckill.status('{f}', 'h-2')
      .seckill.refund('{f}', 'h-2')
      .seckill.refund('{f}', 'h-2')
      .seckill.confirm('{f}', 'h-2')
      .seckill.confirm('{f}', 'never-used')
      .seckill.refund('{f}', 'never-used')
      .seckill.deduct('{f}', 'dee', 9, { requestId: 'h-3', hold: 600 })
      .exec();
    assert.equal(tx[0], true);
    assert.deepEqual([plain(tx[1]), tx[1].deadline], [bought(4), FAR]);
    assert.deepEqual([plain(tx[2]), tx[2].deadline], [bought(3), null]);
    assert.deepEqual([plain(tx[3]), tx[4].status], [bought(2), RequestStatus.HELD]);
    assert.equal(tx[3].deadline, tx[4].deadline);
    assert.deepEqual(tx.slice(5, 10).map((v) => (typeof v === 'string' ? v : plainRefund(v))), [
      refunded(1), notRefunded(RefundOutcome.ALREADY_REFUNDED), ConfirmOutcome.REFUNDED,
      ConfirmOutcome.UNKNOWN_REQUEST, notRefunded(RefundOutcome.UNKNOWN_REQUEST),
    ]);
    assert.deepEqual([plain(tx[10]), tx[10].deadline], [rejected(Outcome.SOLD_OUT), null]);

    // A hold that lapsed, in a pipeline; with the replay of a pending hold, and of one confirmed since.
    assert.equal(await admin('SECKILL.RELEASE', '{f}', 'h-1'), 1);
    await client.seckill.deduct('{f}', 'eve', 1, { requestId: 'h-4', holdUntil: FAR });
    const piped = await client.multi()
      .seckill.confirm('{f}', 'h-1')
      .seckill.refund('{f}', 'h-1')
      .seckill.deduct('{f}', 'eve', 1, { requestId: 'h-4', holdUntil: FAR })
      .seckill.confirm('{f}', 'h-4')
      .seckill.deduct('{f}', 'eve', 1, { requestId: 'h-4', holdUntil: FAR })
      .seckill.confirm('{nothing}', 'h-1')
      .seckill.refund('{nothing}', 'h-1')
      .execAsPipeline();
    assert.deepEqual([piped[0], plainRefund(piped[1])], [ConfirmOutcome.LAPSED, notRefunded(RefundOutcome.LAPSED)]);
    assert.deepEqual([plain(piped[2]), piped[2].deadline], [bought(3), FAR]);
    assert.equal(piped[3], ConfirmOutcome.CONFIRMED);
    assert.deepEqual([plain(piped[4]), piped[4].deadline], [bought(3), null]);
    assert.deepEqual([piped[5], plainRefund(piped[6])], [ConfirmOutcome.NO_ITEM, notRefunded(RefundOutcome.NO_ITEM)]);
  });

  test(`RESP${RESP}: errors are typed by SeckillError.from`, async () => {
    await admin('FLUSHALL');
    const client = await connect({ RESP });
    await errorsScenario(client.seckill, admin, async (username, password) => {
      const c = await connect({ RESP, username, password });
      return { sk: c.seckill, close: () => c.destroy() };
    }, { typedDirectly: false });
  });
}

test('ids that are not UTF-8 come back as Buffers when strings are mapped to Buffers', async () => {
  await admin('FLUSHALL');
  const client = (await connect({ RESP: 3 })).withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  const id = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
  const user = Buffer.from([0xc3, 0x28]);
  await client.seckill.init('{bin}', 5);
  assert.deepEqual(plain(await client.seckill.deduct('{bin}', user, 1, { requestId: id, holdUntil: FAR })), bought(4));
  assert.deepEqual(plain(await client.seckill.deduct('{bin}', 'zoë', 1, { requestId: 'ünïcode', holdUntil: FAR })), bought(3));
  const holds = await client.seckill.holds('{bin}');
  // Equal deadlines: ordered by request id bytes (0xc3... before 0xff...).
  assert.deepEqual(holds.map((h) => ({ ...h })), [
    { requestId: 'ünïcode', user: 'zoë', qty: 1, deadline: FAR, variant: null },
    { requestId: id, user, qty: 1, deadline: FAR, variant: null },
  ]);
  assert.equal(await client.seckill.bought('{bin}', user), 1);
});

test('keyPrefix (node-redis 6) applies to the item key and the stream key; INFO reports the stream unprefixed', async () => {
  await admin('FLUSHALL');
  const client = await connect({ RESP: 3, keyPrefix: 'app:' });
  assert.equal(await client.seckill.init('{sku:9}', 5, { stream: '{sku:9}:orders' }), true);
  assert.deepEqual(plain(await client.seckill.deduct('{sku:9}', 'alice', 1, { requestId: 'k-1' })), bought(4));
  assert.equal(await admin('EXISTS', 'app:{sku:9}'), 1);
  assert.equal(await admin('EXISTS', '{sku:9}'), 0);
  assert.equal(await admin('XLEN', 'app:{sku:9}:orders'), 1);
  const raw = await admin('SECKILL.INFO', 'app:{sku:9}');
  assert.equal(raw[raw.indexOf('stream') + 1], 'app:{sku:9}:orders');
  assert.equal((await client.seckill.info('{sku:9}')).stream, '{sku:9}:orders');
  const multi = await client.multi().seckill.info('{sku:9}').seckill.get('{sku:9}').exec();
  assert.equal(multi[0].stream, '{sku:9}:orders');
  assert.equal(multi[1], 4);
  assert.equal(await client.seckill.stream('{sku:9}', '{sku:9}:o2'), true);
  const raw2 = await admin('SECKILL.INFO', 'app:{sku:9}');
  assert.equal(raw2[raw2.indexOf('stream') + 1], 'app:{sku:9}:o2');

  // TAKE's destination names a key: it gets the prefix too, and TRANSFERS
  // reports it as the caller named it.
  assert.equal(await client.seckill.init('part:0', 10), true);
  assert.equal(await client.seckill.init('part:1', 0), true);
  assert.equal(await client.seckill.take('part:0', 3, 'm-1', 'part:1'), 3);
  assert.deepEqual(await admin('SECKILL.TRANSFERS', 'app:part:0'), [['m-1', 3, 'app:part:1']]);
  assert.deepEqual((await client.seckill.transfers('part:0')).map((x) => ({ ...x })), [
    { transferId: 'm-1', units: 3, destination: 'part:1', variant: null },
  ]);
  const tx = await client.multi().seckill.transfers('part:0').seckill.add('part:1', 3, { transferId: 'm-1' }).exec();
  assert.equal(tx[0][0].destination, 'part:1');
  assert.equal(tx[1], 3);
  assert.equal(await admin('SECKILL.GET', 'app:part:1'), 3);
  assert.equal(await client.seckill.settle('part:0', 'm-1'), SettleOutcome.SETTLED);
  // A destination written without the prefix (by another client) is shown as it is.
  await admin('SECKILL.TAKE', 'app:part:0', '1', 'ID', 'm-2', 'TO', 'other:part');
  assert.equal((await client.seckill.transfers('part:0'))[0].destination, 'other:part');
  // The parts of a drop with sizes move stock size by size.
  for (const part of ['drop:0', 'drop:1']) assert.equal(await client.seckill.init(part, { 42: 5, 43: 5 }), true);
  assert.equal(await client.seckill.take('drop:0', 2, 'd-1', { to: 'drop:1', variant: '43' }), 2);
  assert.deepEqual((await client.seckill.transfers('drop:0')).map((x) => ({ ...x })), [
    { transferId: 'd-1', units: 2, destination: 'drop:1', variant: '43' },
  ]);
  assert.equal(await client.seckill.add('drop:1', 2, { transferId: 'd-1', variant: '43' }), 7);
  assert.equal(await client.seckill.settle('drop:0', 'd-1', { variant: '43' }), SettleOutcome.SETTLED);
  assert.equal(await client.seckill.get('drop:0', { variant: '43' }), 3);
  // The unprefixed keys were never touched.
  assert.equal(await admin('EXISTS', 'part:0', 'part:1'), 0);
});

test('arguments are checked before anything is sent', async () => {
  const client = await connect({ RESP: 3 });
  await assert.rejects(client.seckill.deduct('k', 'u', Number.MAX_SAFE_INTEGER + 2), RangeError);
  await assert.rejects(client.seckill.deduct('k', 'u', 1, { hold: 1, requestId: {} }), TypeError);
  await assert.rejects(client.seckill.stream('k', null, 5), TypeError);
  await assert.rejects(client.seckill.init('k', 1, 'LIMIT'), TypeError);
  // A client-side error is not a SeckillError, and from() leaves it alone.
  const err = await client.seckill.add('k', true).catch((e) => e);
  assert.ok(err instanceof TypeError);
  assert.equal(SeckillError.from(err), err);
  // A server error about arguments is one.
  const serverErr = await client.seckill.add('k', -1n).catch((e) => e);
  expectSeckillError(serverErr, InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'value is out of range, must be positive',
  });
});

test('scan: one page, and scanIterator (seckillOf) over every record, under RESP2 and RESP3', async (t) => {
  for (const RESP of [2, 3]) {
    await t.test(`RESP${RESP}`, async () => {
      await admin('FLUSHALL');
      const client = await connect({ RESP });
      await scanScenario(seckillOf(client), admin);
      // The module's own scan: one page, in multi() too.
      const page = await client.seckill.scan('{scan}:every', 0, { count: 2 });
      assert.equal(page.records.length, 2);
      const [queued] = await client.multi().seckill.scan('{scan}:every', '0', { count: 100 }).exec();
      assert.deepEqual([queued.cursor, queued.records.length], ['0', 11]);
    });
  }
});

test('variants (a drop of sizes under one limit): the same typed values under RESP2, RESP3 and other type mappings', async (t) => {
  const transcripts = {};
  const configs = {
    RESP2: (c) => c,
    RESP3: (c) => c,
    'RESP3 mapped': (c) => c.withTypeMapping({
      [RESP_TYPES.NUMBER]: BigInt,
      [RESP_TYPES.BLOB_STRING]: Buffer,
      [RESP_TYPES.SIMPLE_STRING]: Buffer,
      [RESP_TYPES.MAP]: Map,
    }),
    'RESP2 strings': (c) => c.withTypeMapping({ [RESP_TYPES.NUMBER]: String }),
  };
  for (const [name, map] of Object.entries(configs)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const client = map(await connect({ RESP: name.startsWith('RESP3') ? 3 : 2 }));
      transcripts[name] = await variantsScenario(seckillOf(client), admin, { typedDirectly: false });
    });
  }
  assert.ok(transcripts.RESP2.length > 40, `${transcripts.RESP2.length} values`);
  for (const name of Object.keys(configs)) assert.deepStrictEqual(transcripts[name], transcripts.RESP2, name);
});

for (const RESP of [2, 3]) {
  test(`RESP${RESP}: variants in MULTI/EXEC and pipelines, with keyPrefix (on the key, not on the variant)`, async () => {
    await admin('FLUSHALL');
    const client = await connect({ RESP, keyPrefix: 'app:' });
    const tx = await client.multi()
      .seckill.init('{v}', new Map([['s', 1], ['m', 2]]), { limit: 1, variantLimits: { m: 1 } })
      .seckill.deduct('{v}', 'ann', 1, { requestId: 'v-1', variant: 'm', holdUntil: FAR })
      .seckill.deduct('{v}', 'ann', 1, { requestId: 'v-2', variant: 's' })
      .seckill.get('{v}')
      .seckill.get('{v}', { variant: 'm' })
      .seckill.bought('{v}', 'ann', { variant: 'm' })
      .seckill.holds('{v}')
      .seckill.status('{v}', 'v-1')
      .seckill.info('{v}')
      .seckill.info('{v}', { variant: 's' })
      .seckill.add('{v}', 2, { variant: 's' })
      .seckill.scan('{v}', '0', { variant: 'm' })
      .exec();
    assert.equal(tx[0], true);
    assert.deepEqual([plain(tx[1]), tx[1].deadline], [bought(1), FAR]);
    assert.deepEqual(plain(tx[2]), rejected(Outcome.LIMIT_REACHED));
    assert.deepEqual(tx.slice(3, 6), [2, 1, 1]);
    assert.deepEqual(tx[6].map((h) => ({ ...h })), [{ requestId: 'v-1', user: 'ann', qty: 1, deadline: FAR, variant: 'm' }]);
    assert.deepEqual([tx[7].status, tx[7].variant], [RequestStatus.HELD, 'm']);
    assert.ok(tx[8] instanceof ItemInfo);
    assert.deepEqual([tx[8].variants, tx[8].stock, tx[8].held], [2, 2, 1]);
    assert.deepEqual([tx[9].variants, tx[9].stock, tx[9].sold], [0, 1, 0]);
    assert.equal(tx[10], 3);
    assert.deepEqual(tx[11].records.map((r) => r.type), ['buyer', 'request']);
    // The key got the prefix; the variant names did not.
    assert.deepEqual([await admin('SECKILL.GET', 'app:{v}', 'VARIANT', 's'), await admin('EXISTS', '{v}')], [3, 0]);

    const piped = await client.multi()
      .seckill.refund('{v}', 'v-1')
      .seckill.deduct('{v}', 'ann', 1, { requestId: 'v-3', variant: 's' })
      .seckill.get('{v}', { variant: 's' })
      .execAsPipeline();
    assert.deepEqual(plainRefund(piped[0]), refunded(1));
    assert.deepEqual(plain(piped[1]), bought(2));
    assert.equal(piped[2], 2);
    // A call naming no variant: node-redis rejects the pipeline with the error reply, typed by from().
    const err = await client.multi().seckill.deduct('{v}', 'bob', 1).seckill.get('{v}').execAsPipeline().catch((e) => e);
    expectSeckillError(err, InvalidArgumentError, {
      kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'the item sells variants: name one with VARIANT',
    });
    assert.equal(await client.seckill.get('{v}', { variant: 's' }), 2);
  });
}
