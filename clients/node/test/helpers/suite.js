'use strict';
// Scenarios shared by the node-redis and ioredis tests. Each takes `sk`, the
// client's seckill namespace (client.seckill), and `admin`, a raw connection
// to the same server, asserts the typed values, and returns a transcript of
// every value so that runs under different protocols can be compared.

const assert = require('node:assert/strict');
const {
  Outcome, ConfirmOutcome, RefundOutcome, SettleOutcome, DeductResult, RefundResult, Hold, Transfer, ItemInfo, UNLIMITED, UNLIMITED_STOCK,
  SeckillError, RequestIdConflictError, OrderStreamError, ItemFullError, WrongTypeError, NoPermissionError,
  InvalidArgumentError, ErrorKind, SplitItem, RequestStatus, BuyerRecord, RequestRecord, ScanPage, OrderState,
  OrderResult, OrderConfirmation,
} = require('../..');

const FAR = 4102444800000; // 2100-01-01, Unix ms

function bought(stock) {
  return { outcome: Outcome.BOUGHT, stock, ok: true, bought: true };
}
function rejected(outcome) {
  return { outcome, stock: null, ok: false, bought: false };
}
function plain(r) {
  assert.ok(r instanceof DeductResult, `a DeductResult, got ${r}`);
  assert.ok(Object.isFrozen(r));
  return { outcome: r.outcome, stock: r.stock, ok: r.ok, bought: r.bought };
}

function refunded(units) {
  return { outcome: RefundOutcome.REFUNDED, units, ok: true, refunded: true };
}
function notRefunded(outcome) {
  return { outcome, units: null, ok: false, refunded: false };
}
function plainRefund(r) {
  assert.ok(r instanceof RefundResult, `a RefundResult, got ${r}`);
  assert.ok(Object.isFrozen(r));
  return { outcome: r.outcome, units: r.units, ok: r.ok, refunded: r.refunded };
}

// Every command, with every kind of reply, following the README's transcripts.
async function commandsScenario(sk, admin) {
  const t = [];
  const log = (v) => { t.push(v); return v; };

  // Creation and the purchase rules.
  assert.equal(log(await sk.init('sku:1001', 5, { limit: 2, ex: 3600 })), true);
  assert.equal(log(await sk.init('sku:1001', 5, { limit: 2, ex: 3600 })), false);
  const ttl = await admin('TTL', 'sku:1001');
  assert.ok(ttl > 3500 && ttl <= 3600, `TTL ${ttl}`);
  const first = log(await sk.deduct('sku:1001', 'alice', 2, { requestId: 'order-1' }));
  assert.deepEqual(plain(first), bought(3));
  assert.equal(first.deadline, null); // no hold, no deadline
  // A replayed request id gets the very same reply (there is no "replayed" outcome).
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'alice', 2, { requestId: 'order-1' }))), bought(3));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'alice', 1, { requestId: 'order-2' }))), rejected(Outcome.LIMIT_REACHED));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'bob', { qty: 2, requestId: 'order-3' }))), bought(1));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'carol', 1n, { requestId: 'order-4' }))), bought(0));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'dave', '1', { requestId: 'order-5' }))), rejected(Outcome.SOLD_OUT));
  assert.deepEqual(plainRefund(log(await sk.refund('sku:1001', 'order-3'))), refunded(2));
  assert.deepEqual(plainRefund(log(await sk.refund('sku:1001', 'order-3'))), notRefunded(RefundOutcome.ALREADY_REFUNDED));
  assert.deepEqual(plainRefund(log(await sk.refund('sku:1001', 'never-used'))), notRefunded(RefundOutcome.UNKNOWN_REQUEST));
  assert.equal(log(await sk.get('sku:1001')), 2);
  assert.equal(log(await sk.bought('sku:1001', 'bob')), 0);
  assert.equal(log(await sk.bought('sku:1001', 'alice')), 2);
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'bob', 2, { requestId: 'order-3' }))), rejected(Outcome.CANCELLED));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'dave', 1, { requestId: 'order-5' }))), bought(1));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'erin'))), bought(0)); // qty defaults to 1, no id
  const info = log(await sk.info('sku:1001'));
  assert.ok(info instanceof ItemInfo);
  assert.deepEqual({ ...info }, {
    stock: 0, unlimited: false, limit: 2, initial: 5, added: 0, sold: 7, refunded: 2, held: 0,
    holds: 0, expired: 0, buyers: 4, requests: 4, start: 0, end: 0, stream: null, streamMaxlen: 0,
    movedOut: 0, movedIn: 0, streamConfirmed: false, variants: 0,
  });
  assert.equal(log(await sk.add('sku:1001', 3)), 3);
  assert.equal(log(await sk.add('sku:1001', 2n)), 5);

  // No such item: every command says so.
  assert.deepEqual(plain(log(await sk.deduct('sku:2002', 'erin', 1))), rejected(Outcome.NO_ITEM));
  assert.equal(log(await sk.get('sku:2002')), null);
  assert.equal(log(await sk.bought('sku:2002', 'erin')), null);
  assert.equal(log(await sk.info('sku:2002')), null);
  assert.equal(log(await sk.holds('sku:2002')), null);
  assert.deepEqual(plainRefund(log(await sk.refund('sku:2002', 'x'))), notRefunded(RefundOutcome.NO_ITEM));
  assert.equal(log(await sk.release('sku:2002', 'x')), null);
  assert.equal(log(await sk.add('sku:2002', 1)), null);
  assert.equal(log(await sk.window('sku:2002', 0, 0)), null);
  assert.equal(log(await sk.stream('sku:2002')), null);
  assert.equal(log(await sk.confirm('sku:2002', 'x')), ConfirmOutcome.NO_ITEM);

  // The sale window.
  assert.equal(log(await sk.init('sku:3003', 100, { limit: 1, start: FAR })), true);
  assert.deepEqual(plain(log(await sk.deduct('sku:3003', 'erin', 1, { requestId: 'order-6' }))), rejected(Outcome.NOT_STARTED));
  assert.equal(log(await sk.window('sku:3003', 0, 1)), true);
  assert.deepEqual(plain(log(await sk.deduct('sku:3003', 'erin', 1, { requestId: 'order-6' }))), rejected(Outcome.ENDED));
  assert.equal(log(await sk.window('sku:3003', null, null)), true);
  assert.deepEqual(plain(log(await sk.deduct('sku:3003', 'erin', 1, { requestId: 'order-6' }))), bought(99));
  assert.equal(log(await sk.window('sku:3003', new Date(FAR - 1000), FAR)), true);
  const windowed = log(await sk.info('sku:3003'));
  assert.equal(windowed.start, FAR - 1000);
  assert.equal(windowed.end, FAR);

  // Holds, confirmation, release, and the order stream.
  assert.equal(log(await sk.init('{sku:4004}', 3, { limit: 1, stream: '{sku:4004}:orders', maxlen: 100 })), true);
  const frankHold = log(await sk.deduct('{sku:4004}', 'frank', 1, { requestId: 'order-7', holdUntil: FAR }));
  assert.deepEqual(plain(frankHold), bought(2));
  assert.equal(frankHold.deadline, FAR);
  const holds = log(await sk.holds('{sku:4004}'));
  assert.equal(holds.length, 1);
  assert.ok(holds[0] instanceof Hold);
  assert.deepEqual({ ...holds[0] }, { requestId: 'order-7', user: 'frank', qty: 1, deadline: FAR, variant: null });
  assert.deepEqual(log(await sk.holds('{sku:4004}', 'frank')), holds);
  assert.deepEqual(log(await sk.holds('{sku:4004}', 'nobody')), []);
  const held = log(await sk.status('{sku:4004}', 'order-7'));
  assert.ok(held instanceof OrderState);
  assert.deepEqual({ ...held }, { status: RequestStatus.HELD, user: 'frank', qty: 1, deadline: FAR, variant: null });
  assert.equal(log(await sk.confirm('{sku:4004}', 'order-7')), ConfirmOutcome.CONFIRMED);
  assert.equal(log(await sk.confirm('{sku:4004}', 'order-7')), ConfirmOutcome.ALREADY_FINAL);
  assert.equal(log(await sk.status('{sku:4004}', 'order-7')).status, RequestStatus.CONFIRMED);
  assert.deepEqual({ ...log(await sk.status('{sku:4004}', 'never-used')) }, { status: RequestStatus.UNKNOWN, user: null, qty: 0, deadline: 0, variant: null });
  assert.equal(log(await sk.status('sku:2002', 'order-7')), null);
  // A deadline of now + 900 s differs from run to run: logged without it.
  const graceOrder = await sk.deduct('{sku:4004}', 'grace', 1, { requestId: 'order-8', hold: 900 });
  assert.deepEqual(log(plain(graceOrder)), bought(1));
  const graceHold = (await sk.holds('{sku:4004}', 'grace'))[0];
  assert.ok(graceHold.deadline > Date.now() + 800000 && graceHold.deadline < Date.now() + 1000000);
  assert.equal(graceOrder.deadline, graceHold.deadline);
  assert.equal(log(await sk.release('{sku:4004}', 'order-8', 'unknown')), 1);
  assert.equal(log(await sk.release('{sku:4004}', ['order-8'])), 0);
  const heidiHold = log(await sk.deduct('{sku:4004}', 'heidi', 1, { requestId: 'order-9', holdUntil: 1 }));
  assert.deepEqual(plain(heidiHold), bought(1));
  assert.equal(heidiHold.deadline, 1); // a hold made lapsed already: its deadline all the same
  assert.equal(log(await sk.confirm('{sku:4004}', 'order-9')), ConfirmOutcome.LAPSED);
  assert.equal(log(await sk.confirm('{sku:4004}', 'never-used')), ConfirmOutcome.UNKNOWN_REQUEST);
  assert.equal(log(await sk.get('{sku:4004}')), 2);
  assert.equal(log(await sk.bought('{sku:4004}', 'heidi')), 0);
  const streamed = log(await sk.info('{sku:4004}'));
  assert.equal(streamed.stream, '{sku:4004}:orders');
  assert.equal(streamed.streamMaxlen, 100);
  assert.equal(streamed.expired, 2);
  // hold frank, confirm, hold grace, expire grace (released), hold heidi; heidi's
  // lapsed hold is reported at once but its expire event is written by the next
  // write or the server's timer (within about a second).
  const events = await admin('XLEN', '{sku:4004}:orders');
  assert.ok(events === 5 || events === 6, `XLEN ${events}`);
  assert.equal(log(await sk.stream('{sku:4004}')), true);
  assert.equal(log(await sk.info('{sku:4004}')).stream, null);
  assert.equal(log(await sk.stream('{sku:4004}', '{sku:4004}:orders2', { maxlen: 5 })), true);
  assert.equal(log(await sk.stream('{sku:4004}', '{sku:4004}:orders2', 7)), true);
  const restreamed = log(await sk.info('{sku:4004}'));
  assert.equal(restreamed.stream, '{sku:4004}:orders2');
  assert.equal(restreamed.streamMaxlen, 7);

  // Unlimited items: the sentinel stock, however the stock was asked for.
  assert.equal(log(await sk.init('sku:u1', UNLIMITED)), true);
  assert.equal(log(await sk.init('sku:u2', 'unlimited')), true);
  assert.equal(log(await sk.init('sku:u3', Infinity)), true);
  for (const key of ['sku:u1', 'sku:u2', 'sku:u3']) {
    assert.equal(log(await sk.get(key)), UNLIMITED_STOCK);
  }
  assert.deepEqual(plain(log(await sk.deduct('sku:u1', 'ivan', 1000))), bought(UNLIMITED_STOCK));
  assert.equal(log(await sk.add('sku:u1', 5)), UNLIMITED_STOCK);
  const unlimited = log(await sk.info('sku:u1'));
  assert.equal(unlimited.unlimited, true);
  assert.equal(unlimited.stock, UNLIMITED_STOCK);
  assert.equal(unlimited.initial, 0);
  assert.equal(unlimited.sold, 1000);

  // Numbers for ids, expiry options, REPLACE.
  assert.equal(log(await sk.init('sku:5005', 10, { px: 60000 })), true);
  const pttl = await admin('PTTL', 'sku:5005');
  assert.ok(pttl > 50000 && pttl <= 60000, `PTTL ${pttl}`);
  assert.deepEqual(plain(log(await sk.deduct('sku:5005', 42, 2, { requestId: 7001 }))), bought(8));
  assert.equal(log(await sk.bought('sku:5005', '42')), 2);
  assert.equal(log(await sk.bought('sku:5005', 42n)), 2);
  assert.deepEqual(plainRefund(log(await sk.refund('sku:5005', '7001'))), refunded(2));
  const exat = Math.floor(Date.now() / 1000) + 7200;
  assert.equal(log(await sk.init('sku:5005', 20, { replace: true, exat })), true);
  assert.equal(await admin('EXPIRETIME', 'sku:5005'), exat);
  assert.equal(log(await sk.get('sku:5005')), 20);
  assert.equal(log(await sk.bought('sku:5005', 42)), 0);
  assert.equal(log(await sk.init('sku:5005', 30, { replace: true, pxat: new Date(FAR) })), true);
  assert.equal(await admin('PEXPIRETIME', 'sku:5005'), FAR);
  assert.equal(log(await sk.init('sku:5005', 30, { replace: true })), true);
  assert.equal(await admin('TTL', 'sku:5005'), -1);

  return t;
}

function transfer(t) {
  assert.ok(t instanceof Transfer, `a Transfer, got ${t}`);
  assert.ok(Object.isFrozen(t));
  return { ...t };
}

// Moving stock between two parts, following the README's transcript: TAKE,
// its replay, the open transfers, ADD ... ID and its replay, SETTLE (twice),
// the counters INFO keeps, and every "no such item" reply.
async function transfersScenario(sk) {
  const t = [];
  const log = (v) => { t.push(v); return v; };
  const p0 = 'sku:1:part:0';
  const p1 = 'sku:1:part:1';

  assert.equal(log(await sk.init(p0, 10, { limit: 2 })), true);
  assert.equal(log(await sk.init(p1, 0, { limit: 2 })), true);
  assert.deepEqual(plain(log(await sk.deduct(p0, 'alice', 1, { requestId: 'o-1' }))), bought(9));
  assert.equal(log(await sk.take(p0, 4, 'move-1', p1)), 4);
  // A retry takes nothing more and replies the same.
  assert.equal(log(await sk.take(p0, 4, 'move-1', p1)), 4);
  assert.equal(log(await sk.get(p0)), 5);
  // Up to the stock in hand; then nothing, and a transfer that took nothing is not listed.
  assert.equal(log(await sk.take(p0, 100, 'move-2', { to: p1 })), 5);
  assert.equal(log(await sk.take(p0, 1, 'move-3')), 0);
  assert.deepEqual(log(await sk.transfers(p0)).map(transfer), [
    { transferId: 'move-1', units: 4, destination: p1, variant: null },
    { transferId: 'move-2', units: 5, destination: p1, variant: null },
  ]);
  assert.deepEqual(log(await sk.transfers(p1)), []);
  assert.equal(log(await sk.add(p1, 4, { transferId: 'move-1' })), 4);
  assert.equal(log(await sk.add(p1, 4, { transferId: 'move-1' })), 4); // a replay: the same, nothing added
  assert.equal(log(await sk.add(p1, 5, 'move-2')), 9);
  assert.equal(log(await sk.settle(p0, 'move-1')), SettleOutcome.SETTLED);
  assert.equal(log(await sk.settle(p0, 'move-1')), SettleOutcome.ALREADY_SETTLED);
  assert.equal(log(await sk.settle(p0, 'move-3')), SettleOutcome.UNKNOWN); // took nothing: nothing recorded
  assert.equal(log(await sk.settle(p0, 'never-given')), SettleOutcome.UNKNOWN);
  assert.equal(log(await sk.settle(p1, 'move-1')), SettleOutcome.UNKNOWN); // received there, not given out
  assert.deepEqual(log(await sk.transfers(p0)).map(transfer), [{ transferId: 'move-2', units: 5, destination: p1, variant: null }]);
  assert.equal(log(await sk.settle(p0, 'move-2')), SettleOutcome.SETTLED);
  assert.deepEqual(log(await sk.transfers(p0)), []);
  assert.equal(log(await sk.get(p0)), 0);
  assert.equal(log(await sk.get(p1)), 9);
  // Units sold on the other part, and a plain ADD, which moved_in does not count.
  assert.deepEqual(plain(log(await sk.deduct(p1, 'bob', 2, { requestId: 'o-2' }))), bought(7));
  assert.equal(log(await sk.add(p1, 1)), 8);
  const base = {
    unlimited: false, limit: 2, refunded: 0, held: 0, holds: 0, expired: 0,
    start: 0, end: 0, stream: null, streamMaxlen: 0, streamConfirmed: false, variants: 0,
  };
  const i0 = log(await sk.info(p0));
  assert.ok(i0 instanceof ItemInfo);
  assert.deepEqual({ ...i0 }, {
    ...base, stock: 0, initial: 10, added: 0, sold: 1, buyers: 1, requests: 1, movedOut: 9, movedIn: 0,
  });
  assert.deepEqual({ ...log(await sk.info(p1)) }, {
    ...base, stock: 8, initial: 0, added: 1, sold: 2, buyers: 1, requests: 1, movedOut: 0, movedIn: 9,
  });
  // The README's invariant: stock + sold - refunded - expired + moved_out - moved_in = initial + added.
  for (const i of [i0, await sk.info(p1)]) {
    assert.equal(i.stock + i.sold - i.refunded - i.expired + i.movedOut - i.movedIn, i.initial + i.added);
  }

  // Numbers as ids and quantities; no destination.
  assert.equal(log(await sk.take(p1, 1n, 7001)), 1);
  assert.deepEqual(log(await sk.transfers(p1)).map(transfer), [{ transferId: '7001', units: 1, destination: null, variant: null }]);
  assert.equal(log(await sk.add(p0, '1', { transferId: 7001n })), 1);
  assert.equal(log(await sk.settle(p1, 7001)), SettleOutcome.SETTLED);

  // No such item.
  assert.equal(log(await sk.take('sku:none', 1, 'm')), null);
  assert.equal(log(await sk.take('sku:none', 1, 'm', p1)), null);
  assert.equal(log(await sk.add('sku:none', 1, { transferId: 'm' })), null);
  assert.equal(log(await sk.settle('sku:none', 'm')), SettleOutcome.NO_ITEM);
  assert.equal(log(await sk.transfers('sku:none')), null);
  return t;
}

// SplitItem on one server: shares, the user's part for every call, the sums.
async function splitScenario(client, admin) {
  const parts = SplitItem.named('sku:s', 3);
  assert.deepEqual(parts, ['sku:s:part:0', 'sku:s:part:1', 'sku:s:part:2']);
  const split = new SplitItem(client, parts);
  assert.deepEqual(split.parts, parts);
  assert.ok(Object.isFrozen(split.parts));
  assert.equal(await split.stock(), null);
  assert.deepEqual(await split.info(), [null, null, null]);
  assert.equal(await split.bought('alice'), null);
  assert.deepEqual(plain(await split.deduct('alice')), rejected(Outcome.NO_ITEM));

  assert.deepEqual(await split.init(10, { limit: 2, ex: 3600 }), [true, true, true]);
  assert.deepEqual(await split.init(10, { limit: 2 }), [false, false, false]);
  const shares = [];
  for (const p of parts) shares.push(await admin('SECKILL.GET', p));
  assert.deepEqual(shares, [4, 3, 3]);
  assert.ok((await admin('TTL', parts[2])) > 3500);
  assert.equal(await split.stock(), 10);

  // Every call goes to the user's part, and only there.
  const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
  const stock = shares.slice();
  for (const [n, user] of users.entries()) {
    const p = split.partFor(user);
    assert.ok(Number.isInteger(p) && p >= 0 && p < 3);
    const r = await split.deduct(user, 1, { requestId: `s-${n}`, hold: 900 });
    if (stock[p] > 0) {
      stock[p] -= 1;
      assert.deepEqual(plain(r), bought(stock[p]));
      assert.equal(await split.bought(user), 1);
      assert.equal(await split.confirm(user, `s-${n}`), ConfirmOutcome.CONFIRMED);
      assert.equal(await split.confirm(user, `s-${n}`), ConfirmOutcome.ALREADY_FINAL);
    } else {
      assert.deepEqual(plain(r), rejected(Outcome.SOLD_OUT));
    }
    for (let q = 0; q < 3; q++) {
      if (q !== p) assert.equal(await client.seckill.bought(parts[q], user), 0);
    }
  }
  const sold = shares.reduce((a, b) => a + b) - stock.reduce((a, b) => a + b);
  assert.equal(await split.stock(), 10 - sold);
  const alice = split.partFor('alice');
  if (stock[alice] > 0) {
    // The limit is kept on the user's part: 1 + 2 > 2.
    assert.deepEqual(plain(await split.deduct('alice', { qty: 2 })), rejected(Outcome.LIMIT_REACHED));
  }
  assert.deepEqual(plainRefund(await split.refund('alice', 's-0')), refunded(1));
  assert.deepEqual(plainRefund(await split.refund('alice', 's-0')), notRefunded(RefundOutcome.ALREADY_REFUNDED));
  assert.equal(await split.bought('alice'), 0);
  assert.equal(await split.stock(), 10 - sold + 1);
  // A numeric user id is its decimal text.
  assert.equal(split.partFor(42), split.partFor('42'));
  assert.equal(split.partFor(42n), split.partFor(Buffer.from('42')));
  const infos = await split.info();
  assert.ok(infos.every((i) => i instanceof ItemInfo));
  assert.deepEqual(infos.map((i) => i.initial), shares);
  assert.equal(infos.reduce((a, i) => a + i.sold - i.refunded, 0), sold - 1);

  // A missing part counts 0 (and info says null there).
  await admin('DEL', parts[1]);
  const left = (await client.seckill.get(parts[0])) + (await client.seckill.get(parts[2]));
  assert.equal(await split.stock(), left);
  assert.equal((await split.info())[1], null);
  // REPLACE and the other options go to every part.
  assert.deepEqual(await split.init(8, { replace: true }), [true, true, true]);
  assert.deepEqual((await split.info()).map((i) => [i.stock, i.limit]), [[3, 0], [3, 0], [2, 0]]);
  assert.equal(await split.stock(), 8);
  assert.deepEqual(await split.init(2n, { replace: true }), [true, true, true]);
  assert.deepEqual((await split.info()).map((i) => i.stock), [1, 1, 0]);

  // A drop's sizes are shared out size by size; a buyer buys a size on their own part.
  const drop = new SplitItem(client, SplitItem.named('sku:d', 3));
  assert.equal(await drop.variants(), null);
  assert.deepEqual(await drop.init(new Map([['42', 10], ['43', 4], ['44', UNLIMITED]]), { limit: 1 }), [true, true, true]);
  assert.deepEqual([...(await client.seckill.variants(drop.parts[2]))], [['42', 3], ['43', 1], ['44', UNLIMITED_STOCK]]);
  assert.deepEqual([...(await drop.variants())], [['42', 10], ['43', 4], ['44', UNLIMITED_STOCK]]);
  assert.ok((await drop.deduct('ana', 1, { requestId: 'd-1', variant: 43 })).ok);
  assert.deepEqual(plain(await drop.deduct('ana', 1, { requestId: 'd-2', variant: 42 })), rejected(Outcome.LIMIT_REACHED));
  assert.equal((await drop.variants()).get('43'), 3);
  assert.deepEqual([...(await client.seckill.variants(parts[0]))], []);

  // An unlimited item is not shared out; parts made unlimited otherwise sum to UNLIMITED_STOCK.
  const unlimited = new SplitItem(client, SplitItem.named(Buffer.from('sku:u'), 2));
  assert.deepEqual(unlimited.parts, [Buffer.from('sku:u:part:0'), Buffer.from('sku:u:part:1')]);
  await assert.rejects(unlimited.init(UNLIMITED), TypeError);
  await assert.rejects(unlimited.init(Infinity), TypeError);
  assert.equal(await client.seckill.init(unlimited.parts[0], 4), true);
  assert.equal(await unlimited.stock(), 4);
  assert.equal(await client.seckill.init(unlimited.parts[1], UNLIMITED), true);
  assert.equal(await unlimited.stock(), UNLIMITED_STOCK);

  // One part: everyone goes there.
  const single = new SplitItem(client, ['sku:one']);
  assert.deepEqual(await single.init(3), [true]);
  assert.equal(single.partFor('whoever'), 0);

  // Mistakes, refused before anything is sent.
  assert.throws(() => new SplitItem(client, []), TypeError);
  assert.throws(() => new SplitItem(client, 'sku:s'), TypeError);
  assert.throws(() => new SplitItem({}, ['a']), TypeError);
  assert.throws(() => new SplitItem(client, [null]), TypeError);
  assert.throws(() => SplitItem.named('x', 0), RangeError);
  await assert.rejects(split.init(-1), RangeError);
  await assert.rejects(split.init(1.5), RangeError);
  await assert.rejects(split.init('ten'), TypeError);
  await assert.rejects(split.init(3, { limt: 1 }), TypeError);
}

// Asserts `err` (as the client threw it, then through SeckillError.from) is
// the typed error expected.
function expectSeckillError(err, Class, { kind, code, message, retryable = false }) {
  const typed = SeckillError.from(err);
  assert.ok(typed instanceof SeckillError, `a SeckillError, got ${err && err.stack}`);
  assert.ok(typed instanceof Class, `${Class.name}, got ${typed.constructor.name}: ${typed.message}`);
  assert.equal(typed.name, Class.name);
  assert.equal(typed.kind, kind);
  assert.equal(typed.code, code);
  if (message instanceof RegExp) assert.match(typed.message, message);
  else assert.equal(typed.message, message);
  assert.equal(typed.retryable, retryable);
  return typed;
}

async function rejectsWith(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('expected the call to fail');
}

// Each error kind a client can produce. `connectAs(user, password)` returns
// the seckill namespace of a client logged in as that user, and a close().
async function errorsScenario(sk, admin, connectAs, { typedDirectly }) {
  const check = (err, Class, expected) => {
    if (typedDirectly) assert.ok(err instanceof Class, `thrown as ${Class.name}: ${err}`);
    return expectSeckillError(err, Class, expected);
  };

  await sk.init('{e}:item', 10, { limit: 5 });
  await sk.deduct('{e}:item', 'alice', 1, { requestId: 'r-1' });
  check(await rejectsWith(sk.deduct('{e}:item', 'bob', 1, { requestId: 'r-1' })), RequestIdConflictError, {
    kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
    message: 'request id was already used by another user or for another quantity',
  });
  check(await rejectsWith(sk.deduct('{e}:item', 'alice', 2, { requestId: 'r-1' })), RequestIdConflictError, {
    kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
    message: 'request id was already used by another user or for another quantity',
  });

  await admin('SET', '{e}:string', 'x');
  check(await rejectsWith(sk.deduct('{e}:string', 'alice', 1)), WrongTypeError, {
    kind: ErrorKind.WRONG_TYPE, code: 'WRONGTYPE', message: 'Operation against a key holding the wrong kind of value',
  });
  check(await rejectsWith(sk.info('{e}:string')), WrongTypeError, {
    kind: ErrorKind.WRONG_TYPE, code: 'WRONGTYPE', message: 'Operation against a key holding the wrong kind of value',
  });

  check(await rejectsWith(sk.deduct('{e}:item', 'alice', 0)), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'value is out of range, must be positive',
  });
  check(await rejectsWith(sk.init('{e}:other', 1, { ex: 10, px: 10000 })), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'syntax error',
  });
  check(await rejectsWith(sk.deduct('{e}:item', 'alice', 1, { hold: 60 })), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'HOLD requires ID',
  });
  check(await rejectsWith(sk.init('{e}:other', 1, { stream: 'elsewhere' })), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: /^the order stream must hash to the item's slot/,
  });
  check(await rejectsWith(sk.release('{e}:item')), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: "wrong number of arguments for 'seckill.release' command",
  });
  check(await rejectsWith(sk.window('{e}:item', 10, 5)), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR',
    message: 'START and END must be non-negative Unix times in milliseconds, END after START',
  });

  // The order stream key holds a string.
  await admin('SET', '{e}:orders', 'oops');
  check(await rejectsWith(sk.init('{e}:s', 10, { stream: '{e}:orders' })), OrderStreamError, {
    kind: ErrorKind.ORDER_STREAM, code: 'WRONGTYPE', message: "the item's order stream key holds the wrong kind of value",
  });
  check(await rejectsWith(sk.stream('{e}:item', '{e}:orders')), OrderStreamError, {
    kind: ErrorKind.ORDER_STREAM, code: 'WRONGTYPE', message: "the item's order stream key holds the wrong kind of value",
  });
  // ... or comes to hold one after the item named it: the write is refused.
  await sk.init('{e}:s2', 10, { stream: '{e}:orders2' });
  await admin('SET', '{e}:orders2', 'oops');
  check(await rejectsWith(sk.deduct('{e}:s2', 'alice', 1)), OrderStreamError, {
    kind: ErrorKind.ORDER_STREAM, code: 'WRONGTYPE', message: "the item's order stream key holds the wrong kind of value",
  });
  assert.equal(await sk.get('{e}:s2'), 10);

  // A user who may write the item but only read its stream.
  await admin('ACL', 'SETUSER', 'seckill-limited', 'on', '>limited-pw', 'resetkeys', '~{e}:acl', '%R~{e}:acl:orders',
    '-@all', '+@connection', '+info', '+seckill.init', '+seckill.stream', '+seckill.deduct', '+seckill.get');
  const limited = await connectAs('seckill-limited', 'limited-pw');
  try {
    // INIT and STREAM name the stream key in their key specs, so the
    // server's own ACL check refuses it before the module runs, in the
    // server's words (Valkey 8: "No permissions to access a key").
    check(await rejectsWith(limited.sk.init('{e}:acl', 10, { stream: '{e}:acl:orders' })), NoPermissionError, {
      kind: ErrorKind.NO_PERMISSION, code: 'NOPERM',
      message: /^(this user has no permissions to access one of the keys used as arguments|No permissions to access a key)$/,
    });
    assert.equal(await limited.sk.init('{e}:acl', 10), true);
    check(await rejectsWith(limited.sk.stream('{e}:acl', '{e}:acl:orders')), NoPermissionError, {
      kind: ErrorKind.NO_PERMISSION, code: 'NOPERM',
      message: /^(this user has no permissions to access one of the keys used as arguments|No permissions to access a key)$/,
    });
    assert.equal((await limited.sk.deduct('{e}:acl', 'alice', 1)).stock, 9);
  } finally {
    await limited.close();
    await admin('ACL', 'DELUSER', 'seckill-limited');
  }

  // Transfers: an id reused for another quantity or the other direction is
  // a conflict like a reused request id; a part records 10,000 at most.
  await sk.init('{e}:part', 10);
  assert.equal(await sk.take('{e}:part', 2, 't-1', '{e}:other-part'), 2);
  const transferConflict = {
    kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
    message: 'transfer id was already used for another quantity or the other direction',
  };
  check(await rejectsWith(sk.take('{e}:part', 3, 't-1', '{e}:other-part')), RequestIdConflictError, transferConflict);
  check(await rejectsWith(sk.add('{e}:part', 2, { transferId: 't-1' })), RequestIdConflictError, transferConflict);
  assert.equal(await sk.add('{e}:part', 2, { transferId: 't-2' }), 10);
  check(await rejectsWith(sk.add('{e}:part', 3, { transferId: 't-2' })), RequestIdConflictError, transferConflict);
  check(await rejectsWith(sk.take('{e}:part', 2, 't-2')), RequestIdConflictError, transferConflict);
  check(await rejectsWith(sk.take('{e}:part', 1, 'x'.repeat(129))), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'transfer id must be 1 to 128 bytes',
  });
  check(await rejectsWith(sk.settle('{e}:part', '')), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'transfer id must be 1 to 128 bytes',
  });
  check(await rejectsWith(sk.take('{e}:part', 1, 't-3', '')), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'destination must be 1 to 255 bytes',
  });
  check(await rejectsWith(sk.take('{e}:part', 0, 't-3')), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'value is out of range, must be positive',
  });
  await sk.init('{e}:unlimited', UNLIMITED);
  check(await rejectsWith(sk.take('{e}:unlimited', 1, 't-1')), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'an unlimited item moves no units',
  });
  check(await rejectsWith(sk.add('{e}:unlimited', 1, { transferId: 't-1' })), InvalidArgumentError, {
    kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'an unlimited item moves no units',
  });
  check(await rejectsWith(sk.settle('{e}:string', 't-1')), WrongTypeError, {
    kind: ErrorKind.WRONG_TYPE, code: 'WRONGTYPE', message: 'Operation against a key holding the wrong kind of value',
  });
  await sk.init('{e}:full', 0);
  const accepted = await Promise.all(Array.from({ length: 10000 }, (_, i) => sk.add('{e}:full', 1, { transferId: `f-${i}` })));
  // Each call added one unit, whatever order they reached the server in (GLIDE
  // may send concurrent calls in another order than they were made).
  assert.deepEqual([...accepted].sort((a, b) => a - b), Array.from({ length: 10000 }, (_, i) => i + 1));
  const last = accepted.indexOf(10000);
  const full = {
    kind: ErrorKind.ITEM_FULL, code: 'ERR', message: 'sale item is full: it cannot record more transfers (10000 at most)',
  };
  check(await rejectsWith(sk.take('{e}:full', 1, 'f-last')), ItemFullError, full);
  check(await rejectsWith(sk.add('{e}:full', 1, { transferId: 'f-last' })), ItemFullError, full);
  assert.equal(await sk.add('{e}:full', 1, { transferId: `f-${last}` }), 10000); // a replay still answers
  assert.equal(await sk.get('{e}:full'), 10000);

  // Client-side checks: types the library refuses before sending.
  await assert.rejects(sk.deduct('{e}:item', 'alice', 1.5), RangeError);
  await assert.rejects(sk.deduct('{e}:item', 'alice', 1, { requestID: 'typo' }), TypeError);
  // (An object is the stocks of variants now: { stock: 1 } names a variant "stock".)
  await assert.rejects(sk.init('{e}:item', { stock: true }), TypeError);
  await assert.rejects(sk.init('{e}:item', [1]), TypeError);
  await assert.rejects(sk.deduct('{e}:item', null), TypeError);
  await assert.rejects(sk.take('{e}:item', 1), TypeError);
  await assert.rejects(sk.take('{e}:item', 1, 't', { destination: 'x' }), TypeError);
  await assert.rejects(sk.add('{e}:item', 1, { transferID: 't' }), TypeError);
}

// Every fate of a hold, as confirm and refund tell them apart (they send
// DETAIL), and the deadline deduct reports when it makes a hold (it sends
// WITHDEADLINE then), checked against SECKILL.STATUS. The transcript holds
// no figure that changes from run to run (a deadline of now + 600 s is
// checked, not logged).
async function holdsScenario(sk, admin) {
  const t = [];
  const log = (v) => { t.push(v); return v; };
  const key = '{fates}';
  const missing = '{fates}:missing';
  assert.equal(log(await sk.init(key, 10)), true);

  // A hold for 600 s: its deadline is the one STATUS reports, about 600 s
  // from the server's clock; a replay while it is pending reports it again.
  const held = await sk.deduct(key, 'ann', 1, { requestId: 'h-paid', hold: 600 });
  assert.deepEqual(log(plain(held)), bought(9));
  const [seconds] = await admin('TIME');
  const state = await sk.status(key, 'h-paid');
  assert.deepEqual([state.status, state.deadline], [RequestStatus.HELD, held.deadline]);
  assert.ok(Math.abs(held.deadline - (Number(seconds) * 1000 + 600000)) < 5000, `deadline ${held.deadline}`);
  assert.equal((await sk.deduct(key, 'ann', 1, { requestId: 'h-paid', hold: 600 })).deadline, held.deadline);
  // A hold until a time: that time.
  const until = log(await sk.deduct(key, 'bob', 2, { requestId: 'h-refunded', holdUntil: FAR }));
  assert.deepEqual([plain(until), until.deadline], [bought(7), FAR]);
  assert.equal((await sk.status(key, 'h-refunded')).deadline, FAR);
  // No hold, no deadline: with a request id or without.
  const noHold = log(await sk.deduct(key, 'cy', 1, { requestId: 'p-bought' }));
  assert.deepEqual([plain(noHold), noHold.deadline], [bought(6), null]);
  const anonymous = log(await sk.deduct(key, 'cy', 1));
  assert.deepEqual([plain(anonymous), anonymous.deadline], [bought(5), null]);
  // A hold refused: no deadline either.
  const soldOut = log(await sk.deduct(key, 'dee', 100, { requestId: 'h-too-many', holdUntil: FAR }));
  assert.deepEqual([plain(soldOut), soldOut.deadline], [rejected(Outcome.SOLD_OUT), null]);
  const noItem = log(await sk.deduct(missing, 'dee', 1, { requestId: 'h-none', hold: 600 }));
  assert.deepEqual([plain(noItem), noItem.deadline], [rejected(Outcome.NO_ITEM), null]);

  // Paid: confirmed, then final; a replay of the hold confirmed since gets
  // its first reply, with no deadline any more.
  assert.equal(log(await sk.confirm(key, 'h-paid')), ConfirmOutcome.CONFIRMED);
  assert.equal(log(await sk.confirm(key, 'h-paid')), ConfirmOutcome.ALREADY_FINAL);
  const replayed = log(await sk.deduct(key, 'ann', 1, { requestId: 'h-paid', hold: 600 }));
  assert.deepEqual([plain(replayed), replayed.deadline], [bought(9), null]);

  // Refunded: the units go back once; then both say it was refunded.
  assert.deepEqual(plainRefund(log(await sk.refund(key, 'h-refunded'))), refunded(2));
  assert.deepEqual(plainRefund(log(await sk.refund(key, 'h-refunded'))), notRefunded(RefundOutcome.ALREADY_REFUNDED));
  assert.equal(log(await sk.confirm(key, 'h-refunded')), ConfirmOutcome.REFUNDED);
  // A purchase without a hold is refunded the same way.
  assert.deepEqual(plainRefund(log(await sk.refund(key, 'p-bought'))), refunded(1));
  assert.equal(log(await sk.confirm(key, 'p-bought')), ConfirmOutcome.REFUNDED);

  // Lapsed: SECKILL.RELEASE lets the hold lapse now, and its unit goes back.
  const lapsing = log(await sk.deduct(key, 'eve', 1, { requestId: 'h-lapsed', holdUntil: FAR }));
  assert.deepEqual([plain(lapsing), lapsing.deadline], [bought(7), FAR]);
  assert.equal(await admin('SECKILL.RELEASE', key, 'h-lapsed'), 1);
  assert.equal(log(await sk.confirm(key, 'h-lapsed')), ConfirmOutcome.LAPSED);
  assert.deepEqual(plainRefund(log(await sk.refund(key, 'h-lapsed'))), notRefunded(RefundOutcome.LAPSED));
  assert.equal((await sk.status(key, 'h-lapsed')).status, RequestStatus.LAPSED);

  // An id the item never saw, and an item that does not exist.
  assert.equal(log(await sk.confirm(key, 'never-used')), ConfirmOutcome.UNKNOWN_REQUEST);
  assert.deepEqual(plainRefund(log(await sk.refund(key, 'never-used'))), notRefunded(RefundOutcome.UNKNOWN_REQUEST));
  assert.equal(log(await sk.confirm(missing, 'h-paid')), ConfirmOutcome.NO_ITEM);
  assert.deepEqual(plainRefund(log(await sk.refund(missing, 'h-paid'))), notRefunded(RefundOutcome.NO_ITEM));

  // None of those answers moved a unit: 10 - ann's 1 - cy's anonymous 1.
  assert.equal(log(await sk.get(key)), 8);
  return t;
}

// An OrderResult as plain data: each line as plain() gives it (no
// deadline: a line's is the order's, checked apart), or null.
function plainOrder(r) {
  assert.ok(r instanceof OrderResult, `an OrderResult, got ${r}`);
  assert.ok(Object.isFrozen(r) && Object.isFrozen(r.lines));
  assert.equal(r.ok, r.taken);
  for (const line of r.lines) {
    if (line !== null) assert.equal(line.deadline, line.bought ? r.deadline : null);
  }
  return { taken: r.taken, lines: r.lines.map((line) => (line === null ? null : plain(line))), deadline: r.deadline };
}

function plainConfirmation(c) {
  assert.ok(c instanceof OrderConfirmation, `an OrderConfirmation, got ${c}`);
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.lines));
  assert.equal(c.ok, c.confirmed);
  return { confirmed: c.confirmed, lines: c.lines };
}

const plainRefunds = (rs) => {
  assert.ok(Array.isArray(rs) && Object.isFrozen(rs));
  return rs.map(plainRefund);
};

// An order of several items (SECKILL.MDEDUCT, MCONFIRM, MREFUND) through
// order, confirmOrder and refundOrder: every line or none, each line's
// refusal, replays, the one deadline of a held order, a lapsed line that
// refuses the confirmation, refunds, errors. The items share a hash tag.
// The transcript holds no figure that changes from run to run.
async function ordersScenario(sk, admin) {
  const t = [];
  const log = (v) => { t.push(v); return v; };
  const phone = '{drop:1}:phone';
  const kase = '{drop:1}:case';
  const cable = '{drop:1}:cable';
  const charger = '{drop:1}:charger';
  const later = '{drop:1}:later';
  const missing = '{drop:1}:missing';
  assert.equal(await sk.init(phone, 2), true);
  assert.equal(await sk.init(kase, 1, { limit: 1 }), true);
  assert.equal(await sk.init(cable, 5, { limit: 1 }), true);
  assert.equal(await sk.init(charger, 3), true);
  assert.equal(await sk.init(later, 5, { start: FAR }), true);

  // Held until a time: every line taken, with one deadline; STATUS sees an
  // ordinary hold on each item.
  const held = await sk.order([[phone, 1], { key: kase, qty: 1 }], 'lena', 'order-50', { holdUntil: FAR });
  assert.deepEqual(log(plainOrder(held)), { taken: true, lines: [bought(1), bought(0)], deadline: FAR });
  for (const key of [phone, kase]) {
    assert.deepEqual({ ...(await sk.status(key, 'order-50')) }, { status: RequestStatus.HELD, user: 'lena', qty: 1, deadline: FAR, variant: null });
  }
  // A retry gets the first reply and takes nothing more.
  assert.deepEqual(log(plainOrder(await sk.order([[phone, 1], [kase]], 'lena', 'order-50', { holdUntil: FAR }))), plainOrder(held));
  assert.equal(log(await sk.get(phone)), 1);

  // Refused: the line that refuses says why, the others are null, and nothing is taken.
  const soldOut = await sk.order([[phone, 1], [kase, 1]], 'mo', 'order-51', { hold: 600 });
  assert.deepEqual(log(plainOrder(soldOut)), { taken: false, lines: [null, rejected(Outcome.SOLD_OUT)], deadline: null });
  assert.equal(log(await sk.get(phone)), 1);
  assert.equal((await sk.status(phone, 'order-51')).status, RequestStatus.UNKNOWN);
  // Several refusals at once: each refusing line's own outcome.
  const refusals = await sk.order([[cable, 2], [missing, 1], [later, 1], [phone, 1]], 'nat', 'order-52', { hold: 600 });
  assert.deepEqual(log(plainOrder(refusals)), {
    taken: false,
    lines: [rejected(Outcome.LIMIT_REACHED), rejected(Outcome.NO_ITEM), rejected(Outcome.NOT_STARTED), null],
    deadline: null,
  });

  // Without a hold: bought at once, no deadline; final already.
  const bundle = await sk.order([[phone, 1], [cable, 1]], 'omar', 'order-53');
  assert.deepEqual(log(plainOrder(bundle)), { taken: true, lines: [bought(0), bought(4)], deadline: null });
  assert.deepEqual(log(plainConfirmation(await sk.confirmOrder([phone, cable], 'order-53'))), {
    confirmed: true, lines: [ConfirmOutcome.ALREADY_FINAL, ConfirmOutcome.ALREADY_FINAL],
  });

  // Paid: confirmed whole, then final; a replay of the order confirmed since has no deadline.
  assert.deepEqual(log(plainConfirmation(await sk.confirmOrder([phone, kase], 'order-50'))), {
    confirmed: true, lines: [ConfirmOutcome.CONFIRMED, ConfirmOutcome.CONFIRMED],
  });
  // The order's lines may stand for its keys.
  assert.deepEqual(log(plainConfirmation(await sk.confirmOrder([[phone, 1], { key: kase }], 'order-50'))), {
    confirmed: true, lines: [ConfirmOutcome.ALREADY_FINAL, ConfirmOutcome.ALREADY_FINAL],
  });
  assert.deepEqual(log(plainOrder(await sk.order([[phone, 1], [kase, 1]], 'lena', 'order-50', { holdUntil: FAR }))), {
    taken: true, lines: [bought(1), bought(0)], deadline: null,
  });
  for (const key of [phone, kase]) assert.equal((await sk.status(key, 'order-50')).status, RequestStatus.CONFIRMED);

  // Held for 600 s: one deadline about 600 s from the server's clock, STATUS's on every line.
  const lapsing = await sk.order([[cable, 1], [charger, 2]], 'pia', 'order-54', { hold: 600 });
  assert.deepEqual(log({ ...plainOrder(lapsing), deadline: 'checked' }), {
    taken: true, lines: [bought(3), bought(1)], deadline: 'checked',
  });
  const [seconds] = await admin('TIME');
  assert.ok(Math.abs(lapsing.deadline - (Number(seconds) * 1000 + 600000)) < 5000, `deadline ${lapsing.deadline}`);
  for (const key of [cable, charger]) assert.equal((await sk.status(key, 'order-54')).deadline, lapsing.deadline);
  // One line lapses (SECKILL.RELEASE): the payment confirms nothing, so
  // never half the order; the lapsed line says why, the other is null.
  assert.equal(await admin('SECKILL.RELEASE', charger, 'order-54'), 1);
  assert.deepEqual(log(plainConfirmation(await sk.confirmOrder([cable, charger], 'order-54'))), {
    confirmed: false, lines: [null, ConfirmOutcome.LAPSED],
  });
  assert.equal((await sk.status(cable, 'order-54')).status, RequestStatus.HELD);
  // Refunded whole: the held line gives its unit back, the lapsed one had.
  assert.deepEqual(log(plainRefunds(await sk.refundOrder([cable, charger], 'order-54'))), [
    refunded(1), notRefunded(RefundOutcome.LAPSED),
  ]);
  // A retry of an order given back takes nothing again.
  assert.deepEqual(log(plainOrder(await sk.order([[cable, 1], [charger, 2]], 'pia', 'order-54', { hold: 600 }))), {
    taken: false, lines: [rejected(Outcome.CANCELLED), rejected(Outcome.CANCELLED)], deadline: null,
  });

  // A paid order refunded, then again; a confirmation after it is refused.
  assert.deepEqual(log(plainRefunds(await sk.refundOrder([phone, kase], 'order-50'))), [refunded(1), refunded(1)]);
  assert.deepEqual(log(plainRefunds(await sk.refundOrder([phone, kase], 'order-50'))), [
    notRefunded(RefundOutcome.ALREADY_REFUNDED), notRefunded(RefundOutcome.ALREADY_REFUNDED),
  ]);
  assert.deepEqual(log(plainConfirmation(await sk.confirmOrder([phone, kase], 'order-50'))), {
    confirmed: false, lines: [ConfirmOutcome.REFUNDED, ConfirmOutcome.REFUNDED],
  });
  // An id the items never saw, and an item that does not exist.
  assert.deepEqual(log(plainConfirmation(await sk.confirmOrder([phone, missing], 'never-used'))), {
    confirmed: false, lines: [ConfirmOutcome.UNKNOWN_REQUEST, ConfirmOutcome.NO_ITEM],
  });
  assert.deepEqual(log(plainRefunds(await sk.refundOrder([phone, missing], 'never-used'))), [
    notRefunded(RefundOutcome.UNKNOWN_REQUEST), notRefunded(RefundOutcome.NO_ITEM),
  ]);

  // Errors: the server's, typed; nothing changes.
  const conflict = (message) => ({ kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR', message });
  const invalid = (message) => ({ kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message });
  expectSeckillError(await rejectsWith(sk.order([[charger, 1], [phone, 1]], 'omar', 'order-53')), RequestIdConflictError,
    conflict('request id was already used for an order of other items'));
  expectSeckillError(await rejectsWith(sk.order([[phone, 1], [cable, 2]], 'omar', 'order-53')), RequestIdConflictError,
    conflict('request id was already used by another user or for another quantity'));
  expectSeckillError(await rejectsWith(sk.order([[phone, 1], [cable, 1]], 'zed', 'order-53')), RequestIdConflictError,
    conflict('request id was already used by another user or for another quantity'));
  expectSeckillError(await rejectsWith(sk.order([[charger, 1], [charger, 1]], 'zed', 'order-55')), InvalidArgumentError,
    invalid('a key appears on more than one line'));
  const tooMany = Array.from({ length: 65 }, (_, i) => [`{drop:1}:k${i}`, 1]);
  expectSeckillError(await rejectsWith(sk.order(tooMany, 'zed', 'order-55')), InvalidArgumentError, invalid('numlines must be 1 to 64'));
  expectSeckillError(await rejectsWith(sk.confirmOrder(tooMany, 'order-55')), InvalidArgumentError, invalid('numkeys must be 1 to 64'));
  expectSeckillError(await rejectsWith(sk.order([[charger, 0]], 'zed', 'order-55')), InvalidArgumentError,
    invalid('value is out of range, must be positive'));
  // Checked before anything is sent.
  await assert.rejects(sk.order([], 'zed', 'order-55'), TypeError);
  await assert.rejects(sk.order([[charger, 1]], 'zed'), TypeError);
  await assert.rejects(sk.order([[charger, 1.5]], 'zed', 'order-55'), RangeError);
  await assert.rejects(sk.order([{ item: charger }], 'zed', 'order-55'), TypeError);
  await assert.rejects(sk.order([charger], 'zed', 'order-55'), TypeError);
  await assert.rejects(sk.order([[charger, 1]], 'zed', 'order-55', { requestId: 'x' }), TypeError);
  await assert.rejects(sk.confirmOrder([], 'order-55'), TypeError);
  await assert.rejects(sk.refundOrder(charger, 'order-55'), TypeError);

  // Where the units are: 2 - omar's; 1 - lena's + her refund; 5 - omar's; 3.
  assert.deepEqual(log(await Promise.all([phone, kase, cable, charger].map((k) => sk.get(k)))), [1, 1, 4, 3]);
  assert.equal(await sk.bought(phone, 'lena'), 0);
  assert.equal(await sk.bought(cable, 'omar'), 1);
  return t;
}

// SECKILL.SCAN: `sk` is seckillOf(client), with scan and scanIterator.
async function scanScenario(sk, admin) {
  const plainRecord = (r) => {
    assert.ok(r instanceof BuyerRecord || r instanceof RequestRecord, `a record, got ${r}`);
    assert.ok(Object.isFrozen(r));
    return { ...r };
  };
  const all = async (iterator) => {
    const out = [];
    for await (const r of iterator) out.push(plainRecord(r));
    return out;
  };

  // A request id of every status, and a buyer without one.
  const key = '{scan}:every';
  const [seconds] = await admin('TIME');
  const past = Number(seconds) * 1000 - 60000;
  assert.equal(await sk.init(key, 100), true);
  assert.ok((await sk.deduct(key, 'ann', 1, { requestId: 'r-purchased' })).ok);
  assert.ok((await sk.deduct(key, 'bob', 2, { requestId: 'r-held', holdUntil: FAR })).ok);
  assert.ok((await sk.deduct(key, 'cy', 1, { requestId: 'r-confirmed', holdUntil: FAR })).ok);
  assert.equal(await sk.confirm(key, 'r-confirmed'), ConfirmOutcome.CONFIRMED);
  assert.ok((await sk.deduct(key, 'dee', 3, { requestId: 'r-refunded' })).ok);
  assert.equal((await sk.refund(key, 'r-refunded')).units, 3);
  assert.ok((await sk.deduct(key, 'eve', 1, { requestId: 'r-lapsed', holdUntil: past })).ok);
  assert.ok((await sk.deduct(key, 'fay', 2)).ok);
  const buyer = (user, units) => ({ type: 'buyer', user, units });
  const request = (requestId, user, qty, status, deadline) => ({ type: 'request', requestId, user, qty, status, deadline });
  const expected = [
    buyer('ann', 1), request('r-purchased', 'ann', 1, RequestStatus.PURCHASED, 0),
    buyer('bob', 2), request('r-held', 'bob', 2, RequestStatus.HELD, FAR),
    buyer('cy', 1), request('r-confirmed', 'cy', 1, RequestStatus.CONFIRMED, FAR),
    buyer('dee', 0), request('r-refunded', 'dee', 3, RequestStatus.REFUNDED, 0),
    buyer('eve', 0), request('r-lapsed', 'eve', 1, RequestStatus.LAPSED, past),
    buyer('fay', 2),
  ];
  assert.deepEqual(await all(sk.scanIterator(key)), expected);
  for (const count of [1, 3n, '10000']) assert.deepEqual(await all(sk.scanIterator(key, { count })), expected);

  // Page by page: the default page is 10 records; the cursor is a string.
  const first = await sk.scan(key, '0');
  assert.ok(first instanceof ScanPage && Object.isFrozen(first));
  assert.equal(typeof first.cursor, 'string');
  assert.notEqual(first.cursor, '0');
  assert.deepEqual(first.records.map(plainRecord), expected.slice(0, 10));
  const last = await sk.scan(key, first.cursor, { count: 100 });
  assert.equal(last.cursor, '0');
  assert.deepEqual(last.records.map(plainRecord), expected.slice(10));
  assert.deepEqual((await sk.scan(key)).records.length, 10); // cursor '0' by default

  // A missing item: nothing.
  const missing = await sk.scan('{scan}:missing', 0);
  assert.deepEqual({ ...missing }, { cursor: '0', records: [] });
  assert.deepEqual(await all(sk.scanIterator('{scan}:missing')), []);

  // A bad cursor: an invalid argument, from the page and from the iterator.
  const err = await rejectsWith(sk.scan(key, '12345'));
  expectSeckillError(err, InvalidArgumentError, { kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'invalid cursor' });
  assert.throws(() => sk.scanIterator(key, { cnt: 1 }), TypeError);

  // Thousands of records, with purchases between pages: every earlier record comes once.
  const busy = '{scan}:busy';
  await sk.init(busy, 1000000);
  for (let n = 0; n < 3000; n += 500) {
    const batch = [];
    for (let i = n; i < n + 500; i++) batch.push(sk.deduct(busy, `user-${i}`, 1, { requestId: `order-${i}` }));
    await Promise.all(batch);
  }
  const seen = [];
  let later = 0;
  for await (const r of sk.scanIterator(busy, { count: 100 })) {
    if (r.type === 'buyer') {
      seen.push(`buyer ${r.user}`);
    } else {
      if (r.requestId.startsWith('order-')) {
        assert.deepEqual([r.user, r.qty, r.status], [`user-${r.requestId.slice(6)}`, 1, RequestStatus.PURCHASED]);
      }
      seen.push(`request ${r.requestId}`);
    }
    if (seen.length % 100 === 0) { // a page went by
      await sk.deduct(busy, `user-${later % 3000}`, 1);
      await sk.deduct(busy, `late-${later}`, 1, { requestId: `late-order-${later}` });
      later += 1;
    }
  }
  assert.ok(later > 50, `${later} pages`);
  const unique = new Set(seen);
  assert.equal(unique.size, seen.length, 'a record came twice');
  for (let n = 0; n < 3000; n++) {
    assert.ok(unique.has(`buyer user-${n}`), `user-${n}`);
    assert.ok(unique.has(`request order-${n}`), `order-${n}`);
  }
}

// An item with variants (SECKILL.INIT ... VARIANTS), following the
// transcript of docs/commands.md: a drop of three sizes under LIMIT 1, each
// command of the whole item and of one variant, the variant STATUS and
// HOLDS name, a restock of one size, a scan of one size, and the errors of
// a call that names no variant. `sk` is seckillOf(client) (scan and
// scanIterator). Returns a transcript of every value.
async function variantsScenario(sk, admin, { typedDirectly }) {
  const t = [];
  const log = (v) => { t.push(v); return v; };
  const check = (err, Class, expected) => {
    if (typedDirectly) assert.ok(err instanceof Class, `thrown as ${Class.name}: ${err}`);
    return expectSeckillError(err, Class, expected);
  };
  const invalid = (message) => ({ kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message });
  const plainRecord = (r) => {
    assert.ok(r instanceof BuyerRecord || r instanceof RequestRecord, `a record, got ${r}`);
    return { ...r };
  };
  const all = async (iterator) => {
    const out = [];
    for await (const r of iterator) out.push(plainRecord(r));
    return out;
  };
  const drop = '{drop:7}';
  const orders = '{drop:7}:orders';

  // Sizes 42, 43 and 44 (an object: its keys are the names), one pair per person.
  assert.equal(log(await sk.init(drop, { 42: 2, 43: 1, 44: 5 }, { limit: 1, stream: orders })), true);
  assert.equal(log(await sk.init(drop, { 42: 2, 43: 1, 44: 5 }, { limit: 1, stream: orders })), false);
  assert.deepEqual(plain(log(await sk.deduct(drop, 'ana', 1, { requestId: 'order-60', variant: 43 }))), bought(0));
  // A second size for the same buyer: the limit across variants.
  assert.deepEqual(plain(log(await sk.deduct(drop, 'ana', 1, { requestId: 'order-61', variant: 42 }))), rejected(Outcome.LIMIT_REACHED));
  // A retry gets the first reply; another buyer finds size 43 sold out.
  assert.deepEqual(plain(log(await sk.deduct(drop, 'ana', 1, { requestId: 'order-60', variant: '43' }))), bought(0));
  assert.deepEqual(plain(log(await sk.deduct(drop, 'ben', 1, { requestId: 'order-62', variant: 43 }))), rejected(Outcome.SOLD_OUT));
  const held = log(await sk.deduct(drop, 'ben', { requestId: 'order-63', variant: Buffer.from('44'), holdUntil: FAR }));
  assert.deepEqual([plain(held), held.deadline], [bought(4), FAR]);

  // The whole item (the variants added up), and one variant.
  assert.equal(log(await sk.get(drop)), 6);
  // Every size with its stock, in INIT's order.
  const sizes = log(await sk.variants(drop));
  assert.ok(sizes instanceof Map);
  assert.deepEqual([...sizes], [['42', 2], ['43', 0], ['44', 4]]);
  assert.equal(log(await sk.variants('{drop:7}:none')), null);
  assert.deepEqual(log(await Promise.all([42, '43', Buffer.from('44')].map((variant) => sk.get(drop, { variant })))), [2, 0, 4]);
  assert.equal(log(await sk.bought(drop, 'ana')), 1);
  assert.equal(log(await sk.bought(drop, 'ana', { variant: 43 })), 1);
  assert.equal(log(await sk.bought(drop, 'ana', { variant: 42 })), 0);
  const whole = log(await sk.info(drop));
  assert.ok(whole instanceof ItemInfo);
  assert.deepEqual([whole.variants, whole.stock, whole.limit, whole.initial, whole.sold, whole.held, whole.holds, whole.buyers, whole.requests],
    [3, 6, 1, 8, 2, 1, 1, 2, 2]);
  assert.equal(whole.stream, orders);
  const size44 = log(await sk.info(drop, { variant: 44 }));
  assert.ok(size44 instanceof ItemInfo);
  assert.deepEqual([size44.variants, size44.stock, size44.initial, size44.sold, size44.held, size44.holds, size44.buyers],
    [0, 4, 5, 1, 1, 1, 1]);

  // STATUS and HOLDS name the variant; CONFIRM and REFUND find it by the request id.
  const state = log(await sk.status(drop, 'order-63'));
  assert.ok(state instanceof OrderState && Object.isFrozen(state));
  assert.deepEqual({ ...state }, { status: RequestStatus.HELD, user: 'ben', qty: 1, deadline: FAR, variant: '44' });
  assert.deepEqual({ ...log(await sk.status(drop, 'order-60')) },
    { status: RequestStatus.PURCHASED, user: 'ana', qty: 1, deadline: 0, variant: '43' });
  assert.deepEqual({ ...log(await sk.status(drop, 'never-used')) },
    { status: RequestStatus.UNKNOWN, user: null, qty: 0, deadline: 0, variant: null });
  const holds = log(await sk.holds(drop));
  assert.ok(holds.every((h) => h instanceof Hold && Object.isFrozen(h)));
  assert.deepEqual(holds.map((h) => ({ ...h })), [{ requestId: 'order-63', user: 'ben', qty: 1, deadline: FAR, variant: '44' }]);
  assert.deepEqual(log(await sk.holds(drop, 'ben')), holds);
  assert.deepEqual(log(await sk.holds(drop, 'ana')), []);
  assert.equal(log(await sk.confirm(drop, 'order-63')), ConfirmOutcome.CONFIRMED);
  assert.equal(log(await sk.status(drop, 'order-63')).status, RequestStatus.CONFIRMED);
  assert.deepEqual(plainRefund(log(await sk.refund(drop, 'order-60'))), refunded(1));
  // Given back: a pair of another size is within the limit again.
  assert.equal(log(await sk.add(drop, 3, { variant: 42 })), 5);
  assert.deepEqual(plain(log(await sk.deduct(drop, 'ana', 1, { requestId: 'order-64', variant: 42 }))), bought(4));
  assert.equal(log(await sk.status(drop, 'order-64')).variant, '42');
  assert.deepEqual(log(await Promise.all([42, 43, 44].map((variant) => sk.get(drop, { variant })))), [4, 1, 4]);
  assert.equal(log(await sk.get(drop)), 9);
  // Each order event names its variant.
  const events = await admin('XRANGE', orders, '-', '+');
  const variantsOf = events.map(([, fields]) => fields[fields.indexOf('variant') + 1]);
  assert.deepEqual(variantsOf.slice(0, 2), ['43', '44']);
  assert.equal(variantsOf[variantsOf.length - 1], '42');

  // A scan walks one variant: a page, and the iterator.
  const page = log(await sk.scan(drop, '0', { variant: 43, count: 10 }));
  assert.deepEqual({ cursor: page.cursor, records: page.records.map(plainRecord) }, {
    cursor: '0',
    records: [
      { type: 'buyer', user: 'ana', units: 0 },
      { type: 'request', requestId: 'order-60', user: 'ana', qty: 1, status: RequestStatus.REFUNDED, deadline: 0 },
    ],
  });
  assert.deepEqual(log(await all(sk.scanIterator(drop, { variant: 44, count: 1 }))), [
    { type: 'buyer', user: 'ben', units: 1 },
    { type: 'request', requestId: 'order-63', user: 'ben', qty: 1, status: RequestStatus.CONFIRMED, deadline: FAR },
  ]);
  assert.deepEqual(log(await all(sk.scanIterator(drop, { variant: '42' }))), [
    { type: 'buyer', user: 'ana', units: 1 },
    { type: 'request', requestId: 'order-64', user: 'ana', qty: 1, status: RequestStatus.PURCHASED, deadline: 0 },
  ]);

  // A Map (in its order), an UNLIMITED size, and a size with a cap of its own.
  const tees = '{drop:8}';
  assert.equal(log(await sk.init(tees, new Map([['s', 1], [Buffer.from('m'), UNLIMITED]]), { variantLimits: { m: 1 } })), true);
  assert.deepEqual(plain(log(await sk.deduct(tees, 'dee', 1, { variant: 'm' }))), bought(UNLIMITED_STOCK));
  assert.deepEqual(plain(log(await sk.deduct(tees, 'dee', 1, { variant: 'm' }))), rejected(Outcome.LIMIT_REACHED));
  assert.deepEqual(plain(log(await sk.deduct(tees, 'dee', 1, { variant: 's' }))), bought(0));
  assert.equal(log(await sk.get(tees)), UNLIMITED_STOCK);
  assert.equal(log(await sk.bought(tees, 'dee')), 2);
  const teesInfo = log(await sk.info(tees));
  assert.deepEqual([teesInfo.variants, teesInfo.unlimited, teesInfo.limit], [2, true, 0]);
  assert.deepEqual([(await sk.info(tees, { variant: 'm' })).limit, (await sk.info(tees, { variant: 's' })).stock], [1, 0]);

  // No such item: the reads of one variant say so as the item's do.
  const missing = '{drop:7}:missing';
  assert.equal(log(await sk.get(missing, { variant: 42 })), null);
  assert.equal(log(await sk.bought(missing, 'ana', { variant: 42 })), null);
  assert.equal(log(await sk.info(missing, { variant: 42 })), null);
  assert.deepEqual({ ...log(await sk.scan(missing, 0, { variant: 42 })) }, { cursor: '0', records: [] });
  assert.equal(log(await sk.add(missing, 1, { variant: 42 })), null);

  // An order buys a size on a line: [key, qty, variant] or { key, qty, variant }.
  const laces = '{drop:7}:laces';
  await sk.init(laces, 10);
  const sized = log(await sk.order([[drop, 1, 44], { key: laces, qty: 2 }], 'cy', 'order-66', { holdUntil: FAR }));
  assert.deepEqual(plainOrder(sized), { taken: true, lines: [bought(3), bought(8)], deadline: FAR });
  assert.equal(log(await sk.status(drop, 'order-66')).variant, '44');
  const overLimit = log(await sk.order([{ key: drop, qty: 1, variant: '42' }, [laces, 1]], 'cy', 'order-67'));
  assert.deepEqual(plainOrder(overLimit), { taken: false, lines: [rejected(Outcome.LIMIT_REACHED), null], deadline: null });
  assert.deepEqual(plainConfirmation(log(await sk.confirmOrder([drop, laces], 'order-66'))),
    { confirmed: true, lines: [ConfirmOutcome.CONFIRMED, ConfirmOutcome.CONFIRMED] });
  check(await rejectsWith(sk.order([[drop, 1], [laces, 1]], 'cy', 'order-68')), InvalidArgumentError,
    invalid('the item sells variants: name one with VARIANT'));
  await assert.rejects(sk.order([[drop, 1, 42, 'extra']], 'cy', 'order-68'), TypeError);
  assert.equal(log(await sk.get(laces)), 8);

  // The server's refusals, typed; nothing changes.
  const needed = invalid('the item sells variants: name one with VARIANT');
  check(await rejectsWith(sk.deduct(drop, 'cy', 1)), InvalidArgumentError, needed);
  check(await rejectsWith(sk.deduct(drop, 'cy', 1, { requestId: 'order-65', holdUntil: FAR })), InvalidArgumentError, needed);
  check(await rejectsWith(sk.add(drop, 1)), InvalidArgumentError, needed);
  check(await rejectsWith(sk.scan(drop, '0')), InvalidArgumentError, needed);
  await assert.rejects(all(sk.scanIterator(drop)), (err) => !!check(err, InvalidArgumentError, needed));
  check(await rejectsWith(sk.deduct(drop, 'cy', 1, { variant: 'xl' })), InvalidArgumentError, invalid('no such variant'));
  check(await rejectsWith(sk.get(drop, { variant: 'xl' })), InvalidArgumentError, invalid('no such variant'));
  await sk.init('{drop:7}:plain', 3);
  check(await rejectsWith(sk.deduct('{drop:7}:plain', 'cy', 1, { variant: 42 })), InvalidArgumentError, invalid('the item has no variants'));
  // 42 and '42' are one name.
  check(await rejectsWith(sk.init('{drop:9}', new Map([[42, 1], ['42', 1]]))), InvalidArgumentError,
    invalid('VARIANTS takes 1 to 64 name stock pairs, names of 1 to 64 bytes each named once'));
  assert.equal(log(await sk.get(drop)), 8);
  assert.equal(log(await sk.bought(drop, 'cy')), 1);

  // Checked before anything is sent.
  await assert.rejects(sk.init('{drop:9}', {}), TypeError);
  await assert.rejects(sk.init('{drop:9}', { s: 1.5 }), RangeError);
  await assert.rejects(sk.init('{drop:9}', { s: true }), TypeError);
  await assert.rejects(sk.init('{drop:9}', { s: 1 }, { variantLimits: 1 }), TypeError);
  await assert.rejects(sk.settle(drop, 't-1', { size: 42 }), TypeError);
  await assert.rejects(sk.take(drop, 1, 't-1', { variant: {} }), TypeError);
  await assert.rejects(sk.get(drop, { size: 42 }), TypeError);
  await assert.rejects(sk.deduct(drop, 'cy', 1, { variant: {} }), TypeError);
  assert.throws(() => sk.scanIterator(drop, { variant: [42] }), TypeError);
  assert.equal(await admin('EXISTS', '{drop:9}'), 0);
  return t;
}

module.exports = {
  scanScenario, variantsScenario, holdsScenario, ordersScenario, plainOrder, plainConfirmation, plainRefunds,
  FAR, commandsScenario, transfersScenario, splitScenario, errorsScenario, expectSeckillError, rejectsWith, plain, bought, rejected,
  plainRefund, refunded, notRefunded,
};
