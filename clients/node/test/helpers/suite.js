'use strict';
// Scenarios shared by the node-redis and ioredis tests. Each takes `sk`, the
// client's seckill namespace (client.seckill), and `admin`, a raw connection
// to the same server, asserts the typed values, and returns a transcript of
// every value so that runs under different protocols can be compared.

const assert = require('node:assert/strict');
const {
  Outcome, ConfirmOutcome, DeductResult, Hold, ItemInfo, UNLIMITED, UNLIMITED_STOCK,
  SeckillError, RequestIdConflictError, OrderStreamError, WrongTypeError, NoPermissionError,
  InvalidArgumentError, ErrorKind,
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

// Every command, with every kind of reply, following the README's transcripts.
async function commandsScenario(sk, admin) {
  const t = [];
  const log = (v) => { t.push(v); return v; };

  // Creation and the purchase rules.
  assert.equal(log(await sk.init('sku:1001', 5, { limit: 2, ex: 3600 })), true);
  assert.equal(log(await sk.init('sku:1001', 5, { limit: 2, ex: 3600 })), false);
  const ttl = await admin('TTL', 'sku:1001');
  assert.ok(ttl > 3500 && ttl <= 3600, `TTL ${ttl}`);
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'alice', 2, { requestId: 'order-1' }))), bought(3));
  // A replayed request id gets the very same reply (there is no "replayed" outcome).
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'alice', 2, { requestId: 'order-1' }))), bought(3));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'alice', 1, { requestId: 'order-2' }))), rejected(Outcome.LIMIT_REACHED));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'bob', { qty: 2, requestId: 'order-3' }))), bought(1));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'carol', 1n, { requestId: 'order-4' }))), bought(0));
  assert.deepEqual(plain(log(await sk.deduct('sku:1001', 'dave', '1', { requestId: 'order-5' }))), rejected(Outcome.SOLD_OUT));
  assert.equal(log(await sk.refund('sku:1001', 'order-3')), 2);
  assert.equal(log(await sk.refund('sku:1001', 'order-3')), 0);
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
  });
  assert.equal(log(await sk.add('sku:1001', 3)), 3);
  assert.equal(log(await sk.add('sku:1001', 2n)), 5);

  // No such item: every command says so.
  assert.deepEqual(plain(log(await sk.deduct('sku:2002', 'erin', 1))), rejected(Outcome.NO_ITEM));
  assert.equal(log(await sk.get('sku:2002')), null);
  assert.equal(log(await sk.bought('sku:2002', 'erin')), null);
  assert.equal(log(await sk.info('sku:2002')), null);
  assert.equal(log(await sk.holds('sku:2002')), null);
  assert.equal(log(await sk.refund('sku:2002', 'x')), null);
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
  assert.deepEqual(plain(log(await sk.deduct('{sku:4004}', 'frank', 1, { requestId: 'order-7', holdUntil: FAR }))), bought(2));
  const holds = log(await sk.holds('{sku:4004}'));
  assert.equal(holds.length, 1);
  assert.ok(holds[0] instanceof Hold);
  assert.deepEqual({ ...holds[0] }, { requestId: 'order-7', user: 'frank', qty: 1, deadline: FAR });
  assert.deepEqual(log(await sk.holds('{sku:4004}', 'frank')), holds);
  assert.deepEqual(log(await sk.holds('{sku:4004}', 'nobody')), []);
  assert.equal(log(await sk.confirm('{sku:4004}', 'order-7')), ConfirmOutcome.CONFIRMED);
  assert.equal(log(await sk.confirm('{sku:4004}', 'order-7')), ConfirmOutcome.ALREADY_FINAL);
  assert.deepEqual(plain(log(await sk.deduct('{sku:4004}', 'grace', 1, { requestId: 'order-8', hold: 900 }))), bought(1));
  const graceHold = (await sk.holds('{sku:4004}', 'grace'))[0];
  assert.ok(graceHold.deadline > Date.now() + 800000 && graceHold.deadline < Date.now() + 1000000);
  assert.equal(log(await sk.release('{sku:4004}', 'order-8', 'unknown')), 1);
  assert.equal(log(await sk.release('{sku:4004}', ['order-8'])), 0);
  assert.deepEqual(plain(log(await sk.deduct('{sku:4004}', 'heidi', 1, { requestId: 'order-9', holdUntil: 1 }))), bought(1));
  assert.equal(log(await sk.confirm('{sku:4004}', 'order-9')), ConfirmOutcome.CANCELLED);
  assert.equal(log(await sk.confirm('{sku:4004}', 'never-used')), ConfirmOutcome.CANCELLED);
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
  assert.equal(log(await sk.refund('sku:5005', '7001')), 2);
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
    check(await rejectsWith(limited.sk.init('{e}:acl', 10, { stream: '{e}:acl:orders' })), NoPermissionError, {
      kind: ErrorKind.NO_PERMISSION, code: 'NOPERM',
      message: 'this user has no permissions to access one of the keys used as arguments',
    });
    assert.equal(await limited.sk.init('{e}:acl', 10), true);
    check(await rejectsWith(limited.sk.stream('{e}:acl', '{e}:acl:orders')), NoPermissionError, {
      kind: ErrorKind.NO_PERMISSION, code: 'NOPERM',
      message: 'this user has no permissions to access one of the keys used as arguments',
    });
    assert.equal((await limited.sk.deduct('{e}:acl', 'alice', 1)).stock, 9);
  } finally {
    await limited.close();
    await admin('ACL', 'DELUSER', 'seckill-limited');
  }

  // Client-side checks: types the library refuses before sending.
  await assert.rejects(sk.deduct('{e}:item', 'alice', 1.5), RangeError);
  await assert.rejects(sk.deduct('{e}:item', 'alice', 1, { requestID: 'typo' }), TypeError);
  await assert.rejects(sk.init('{e}:item', { stock: 1 }), TypeError);
  await assert.rejects(sk.deduct('{e}:item', null), TypeError);
}

module.exports = {
  FAR, commandsScenario, errorsScenario, expectSeckillError, rejectsWith, plain, bought, rejected,
};
