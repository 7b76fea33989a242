'use strict';
// The parts that need no server: error classification, reply conversion and
// argument checks (the same rules as the Python and Rust clients).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const {
  SeckillError, RequestIdConflictError, OrderStreamError, ItemFullError, WrongTypeError,
  NoPermissionError, InvalidArgumentError, UnavailableError, ErrorKind, DeductResult, Durable, Outcome, ItemInfo,
  UNLIMITED_STOCK, UNLIMITED_STOCK_BIGINT, UNLIMITED, ConfirmOutcome, RefundOutcome, RefundResult, SettleOutcome, Transfer,
  SplitItem, fnv1a32, seckill, RequestStatus, BuyerRecord, RequestRecord, ScanPage, OrderResult, OrderConfirmation, CartSaga,
  OrderState, Hold,
} = require('..');
const { createClient } = require('redis');
const { COMMANDS } = require('../lib/commands');

const CASES = [
  ['ERR request id was already used by another user or for another quantity', RequestIdConflictError, 'ERR', false],
  ["WRONGTYPE the item's order stream key holds the wrong kind of value", OrderStreamError, 'WRONGTYPE', false],
  ["ERR the item's order stream has exhausted the last possible ID, unable to add more items; nothing was changed", OrderStreamError, 'ERR', false],
  ["TRYAGAIN the item's order stream is missing while its slot is being migrated; nothing was changed", OrderStreamError, 'TRYAGAIN', true],
  ["CROSSSLOT the item's order stream does not hash to the item's slot (was the item renamed?): set it again with SECKILL.STREAM; nothing was changed", OrderStreamError, 'CROSSSLOT', false],
  ['ERR sale item is full: it cannot record more purchases', ItemFullError, 'ERR', false],
  ['ERR sale item is full: it cannot record more transfers (10000 at most)', ItemFullError, 'ERR', false],
  ['ERR transfer id was already used for another quantity or the other direction', RequestIdConflictError, 'ERR', false],
  ['ERR transfer id must be 1 to 128 bytes', InvalidArgumentError, 'ERR', false],
  ['ERR destination must be 1 to 255 bytes', InvalidArgumentError, 'ERR', false],
  ['ERR an unlimited item moves no units', InvalidArgumentError, 'ERR', false],
  ['WRONGTYPE Operation against a key holding the wrong kind of value', WrongTypeError, 'WRONGTYPE', false],
  ['NOPERM this user has no permissions to access one of the keys used as arguments', NoPermissionError, 'NOPERM', false],
  ["ERR the order stream must hash to the item's slot: name it after the item in braces (sku:1 and {sku:1}:orders), or give both keys one hash tag ({sku:1} and {sku:1}:orders)", InvalidArgumentError, 'ERR', false],
  ['ERR value is not an integer or out of range', InvalidArgumentError, 'ERR', false],
  ["ERR wrong number of arguments for 'seckill.deduct' command", InvalidArgumentError, 'ERR', false],
  ['ERR SECKILL.LOADCHUNK is only accepted while loading the AOF or from the master', InvalidArgumentError, 'ERR', false],
  // A server that cannot take the write now: the same call, sent again to the current master.
  ['NOREPLICAS Not enough good replicas to write.', UnavailableError, 'NOREPLICAS', true],
  ["READONLY You can't write against a read only replica.", UnavailableError, 'READONLY', true],
  ['MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.', UnavailableError, 'MASTERDOWN', true],
  ['LOADING Redis is loading the dataset in memory', UnavailableError, 'LOADING', true],
];

test('errors are classified from the reply text', () => {
  for (const [text, Class, code, retryable] of CASES) {
    const err = SeckillError.fromReplyText(text);
    assert.ok(err instanceof Class, text);
    assert.ok(err instanceof SeckillError && err instanceof Error);
    assert.equal(err.kind, Class.KIND);
    assert.equal(err.code, code);
    assert.equal(err.message, text.slice(code.length + 1));
    assert.equal(err.retryable, retryable);
    assert.equal(err.name, Class.name);
  }
  assert.equal(SeckillError.fromReplyText('no code here').code, 'ERR');
  assert.equal(SeckillError.fromReplyText('no code here').message, 'no code here');
  // Other errors of the server's state, not the module's: left to the client.
  for (const text of [
    "OOM command not allowed when used memory > 'maxmemory'.",
    'MOVED 3999 127.0.0.1:6381',
    'ASK 3999 127.0.0.1:6381',
  ]) {
    assert.equal(SeckillError.fromReplyText(text), null, text);
  }
});

test('from() leaves anything but a reply error or a lost connection alone (the real ones are in the server tests)', () => {
  const plainError = new Error('The client is closed');
  assert.equal(SeckillError.from(plainError), plainError);
  const typeError = new TypeError('x');
  assert.equal(SeckillError.from(typeError), typeError);
  const typed = SeckillError.fromReplyText('ERR syntax error');
  assert.equal(SeckillError.from(typed), typed);
  assert.equal(SeckillError.from(undefined), undefined);
  assert.equal(SeckillError.from('ERR text'), 'ERR text');
  const oom = Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), { name: 'ReplyError' });
  assert.equal(SeckillError.from(oom), oom);
  const constructed = new RequestIdConflictError('custom');
  assert.equal(constructed.kind, ErrorKind.REQUEST_ID_CONFLICT);
  assert.equal(constructed.code, 'ERR');
  assert.equal(constructed.message, 'custom');
});

test('from() types a connection lost during a call as UNAVAILABLE, retryable, with no code', () => {
  class SocketClosedUnexpectedlyError extends Error {} // node-redis's, by its name
  class MaxRetriesPerRequestError extends Error {} // ioredis's, by its name
  const lost = [
    new SocketClosedUnexpectedlyError('Socket closed unexpectedly'),
    new MaxRetriesPerRequestError('Reached the max retries per request limit (which is 1).'),
    new Error('Connection is closed.'), // ioredis, without reconnection
    Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }),
  ];
  for (const err of lost) {
    const typed = SeckillError.from(err);
    assert.ok(typed instanceof UnavailableError, err.message);
    assert.equal(typed.kind, ErrorKind.UNAVAILABLE);
    assert.equal(typed.code, '');
    assert.equal(typed.retryable, true);
    assert.equal(typed.message, err.message);
    assert.equal(typed.cause, err);
    assert.equal(SeckillError.from(typed), typed);
  }
  const timeout = Object.assign(new Error('Connection timeout'), { name: 'ConnectionTimeoutError' });
  assert.equal(SeckillError.from(timeout), timeout);
  const constructed = new UnavailableError('custom');
  assert.deepEqual([constructed.kind, constructed.retryable], [ErrorKind.UNAVAILABLE, true]);
});

test('a wait is read from the options of deduct, confirm and refund, 1000 ms by default', () => {
  const build = (method, ...args) => COMMANDS.find((c) => c.method === method).build(...args);
  assert.deepEqual(build('confirm', 'k', 'h1', { waitReplicas: 1 }).wait, { replicas: 1, timeoutMs: 1000 });
  assert.deepEqual(build('refund', 'k', 'h1', { waitReplicas: 2n, waitTimeoutMs: 50 }).wait, { replicas: 2, timeoutMs: 50 });
  assert.deepEqual(build('deduct', 'k', 'u', { qty: 2, waitReplicas: 0 }), { args: ['k', 'u', '2'], keys: [0], wait: { replicas: 0, timeoutMs: 1000 } });
  assert.deepEqual(build('deduct', 'k', 'u', 1, { requestId: 'r', waitReplicas: 1, waitTimeoutMs: 0 }).args, ['k', 'u', '1', 'ID', 'r']);
  assert.equal(build('deduct', 'k', 'u', 1, { requestId: 'r' }).wait, undefined);
  assert.equal(build('confirm', 'k', 'h1').wait, undefined);
  assert.equal(build('confirm', 'k', 'h1', { waitReplicas: null }).wait, undefined);
  assert.throws(() => build('confirm', 'k', 'h1', { waitTimeoutMs: 100 }), /waitTimeoutMs needs waitReplicas/);
  assert.throws(() => build('confirm', 'k', 'h1', { waitReplicas: -1 }), RangeError);
  assert.throws(() => build('confirm', 'k', 'h1', { waitReplicas: 1.5 }), RangeError);
  assert.throws(() => build('refund', 'k', 'h1', { waitReplicas: '1' }), TypeError);
  assert.throws(() => build('refund', 'k', 'h1', { waitReplica: 1 }), /unknown option 'waitReplica'/);
  assert.throws(() => build('deduct', 'k', 'u', 1, { waitReplicas: 1, waitTimeoutMs: -5 }), RangeError);
  // The order commands take one too; the other commands take none.
  assert.equal(COMMANDS.filter((c) => c.waitsAt).map((c) => c.method).join(), 'deduct,confirm,refund,order,confirmOrder,refundOrder');
  assert.deepEqual(build('order', [['k', 1]], 'u', 'r', { hold: 5, waitReplicas: 1 }).wait, { replicas: 1, timeoutMs: 1000 });
  assert.deepEqual(build('confirmOrder', ['k'], 'r', { waitReplicas: 1, waitTimeoutMs: 5 }).wait, { replicas: 1, timeoutMs: 5 });
  assert.deepEqual(build('refundOrder', ['k'], 'r', { waitReplicas: 0 }).wait, { replicas: 0, timeoutMs: 1000 });

  const durable = Durable.fromReplies(ConfirmOutcome.CONFIRMED, '1', 1);
  assert.ok(Object.isFrozen(durable));
  assert.deepEqual({ ...durable }, { result: ConfirmOutcome.CONFIRMED, replicas: 1, durable: true });
  assert.deepEqual({ ...Durable.fromReplies(2, 0n, 1) }, { result: 2, replicas: 0, durable: false });
  assert.deepEqual({ ...Durable.fromReplies(null, 3, 2) }, { result: null, replicas: 3, durable: true });
  assert.throws(() => Durable.fromReplies(1, 'QUEUED', 1), /unexpected reply to WAIT/);
});

test('replies of every integer mapping give the same values', () => {
  for (const reply of [3, '3', 3n, Buffer.from('3')]) {
    const r = DeductResult.fromReply(reply);
    assert.deepEqual([r.outcome, r.stock, r.ok, r.bought], [Outcome.BOUGHT, 3, true, true]);
  }
  for (const reply of [9223372036854775807, '9223372036854775807', 9223372036854775807n]) {
    assert.equal(DeductResult.fromReply(reply).stock, UNLIMITED_STOCK);
  }
  assert.equal(UNLIMITED_STOCK, 2 ** 63);
  assert.equal(BigInt(UNLIMITED_STOCK) - 1n, UNLIMITED_STOCK_BIGINT);
  assert.equal(UNLIMITED, 'UNLIMITED');
  const codes = { '-1': Outcome.SOLD_OUT, '-2': Outcome.LIMIT_REACHED, '-3': Outcome.NO_ITEM, '-4': Outcome.CANCELLED, '-5': Outcome.NOT_STARTED, '-6': Outcome.ENDED };
  for (const [code, outcome] of Object.entries(codes)) {
    const r = DeductResult.fromReply(Number(code));
    assert.deepEqual([r.outcome, r.stock, r.ok], [outcome, null, false]);
  }
  assert.throws(() => DeductResult.fromReply(-7), TypeError);
  assert.ok(Object.isFrozen(Outcome) && Object.isFrozen(ConfirmOutcome));
  assert.throws(() => { 'use strict'; Outcome.BOUGHT = 'x'; }, TypeError);
});

test('confirm and refund send DETAIL; deduct sends WITHDEADLINE with a hold, and only then', () => {
  const build = (method, ...args) => COMMANDS.find((c) => c.method === method).build(...args);
  assert.deepEqual(build('confirm', 'k', 'h1').args, ['k', 'h1', 'DETAIL']);
  assert.deepEqual(build('confirm', 'k', 'h1', { waitReplicas: 1 }).args, ['k', 'h1', 'DETAIL']);
  assert.deepEqual(build('refund', 'k', 'h1').args, ['k', 'h1', 'DETAIL']);
  assert.deepEqual(build('deduct', 'k', 'u', 1, { requestId: 'r', hold: 60 }).args,
    ['k', 'u', '1', 'ID', 'r', 'HOLD', '60', 'WITHDEADLINE']);
  assert.deepEqual(build('deduct', 'k', 'u', { requestId: 'r', holdUntil: new Date(5000) }).args,
    ['k', 'u', '1', 'ID', 'r', 'HOLDUNTIL', '5000', 'WITHDEADLINE']);
  assert.deepEqual(build('deduct', 'k', 'u', 1, { requestId: 'r' }).args, ['k', 'u', '1', 'ID', 'r']);
  assert.deepEqual(build('deduct', 'k', 'u', 1, { requestId: 'r', hold: null }).args, ['k', 'u', '1', 'ID', 'r']);
  assert.deepEqual(build('deduct', 'k', 'u').args, ['k', 'u', '1']);
});

test('deduct replies with or without a deadline, in every integer mapping', () => {
  const FAR = 4102444800000;
  const fields = (r) => [r.outcome, r.stock, r.deadline, r.ok];
  for (const reply of [9, '9', 9n, Buffer.from('9')]) {
    assert.deepEqual(fields(DeductResult.fromReply(reply)), [Outcome.BOUGHT, 9, null, true]);
  }
  // [code, deadline]: what DEDUCT ... WITHDEADLINE answers, under RESP2 and RESP3 alike.
  for (const reply of [[9, FAR], ['9', String(FAR)], [9n, BigInt(FAR)], [Buffer.from('9'), Buffer.from(String(FAR))]]) {
    assert.deepEqual(fields(DeductResult.fromReply(reply)), [Outcome.BOUGHT, 9, FAR, true]);
  }
  for (const nil of [null, undefined]) {
    assert.deepEqual(fields(DeductResult.fromReply([8, nil])), [Outcome.BOUGHT, 8, null, true]);
    assert.deepEqual(fields(DeductResult.fromReply([-1, nil])), [Outcome.SOLD_OUT, null, null, false]);
    assert.deepEqual(fields(DeductResult.fromReply(['-3', nil])), [Outcome.NO_ITEM, null, null, false]);
  }
  assert.ok(Object.isFrozen(DeductResult.fromReply([1, 2])));
  assert.deepEqual(Object.keys(DeductResult.fromReply([1, 2])), ['outcome', 'stock', 'deadline']);
  assert.throws(() => DeductResult.fromReply([1]), /unexpected reply to SECKILL.DEDUCT/);
  assert.throws(() => DeductResult.fromReply([1, 2, 3]), /unexpected reply to SECKILL.DEDUCT/);
  assert.throws(() => DeductResult.fromReply([-7, null]), /unexpected reply to SECKILL.DEDUCT/);
});

test('confirm and refund replies, with DETAIL and without', () => {
  const confirm = COMMANDS.find((c) => c.method === 'confirm').parse;
  assert.deepEqual([1, 0, -3, -4, -7, -8, -9].map(confirm), [
    ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY_FINAL, ConfirmOutcome.NO_ITEM, ConfirmOutcome.CANCELLED,
    ConfirmOutcome.REFUNDED, ConfirmOutcome.LAPSED, ConfirmOutcome.UNKNOWN_REQUEST,
  ]);
  assert.equal(confirm('-8'), ConfirmOutcome.LAPSED);
  assert.equal(confirm(-9n), ConfirmOutcome.UNKNOWN_REQUEST);
  assert.throws(() => confirm(-5), TypeError);

  const refund = COMMANDS.find((c) => c.method === 'refund').parse;
  const fields = (r) => [r.outcome, r.units, r.ok, r.refunded];
  for (const reply of [3, '3', 3n, Buffer.from('3')]) {
    const r = refund(reply);
    assert.ok(r instanceof RefundResult && Object.isFrozen(r));
    assert.deepEqual(fields(r), [RefundOutcome.REFUNDED, 3, true, true]);
  }
  assert.deepEqual(fields(refund(1)), [RefundOutcome.REFUNDED, 1, true, true]);
  const nothing = { 0: RefundOutcome.NOTHING, '-3': RefundOutcome.NO_ITEM, '-7': RefundOutcome.ALREADY_REFUNDED,
    '-8': RefundOutcome.LAPSED, '-9': RefundOutcome.UNKNOWN_REQUEST };
  for (const [code, outcome] of Object.entries(nothing)) {
    assert.deepEqual(fields(refund(Number(code))), [outcome, null, false, false], code);
    assert.deepEqual(fields(refund(code)), [outcome, null, false, false], code);
  }
  assert.deepEqual(Object.keys(refund(2)), ['outcome', 'units']);
  assert.throws(() => refund(-4), /unexpected reply to SECKILL.REFUND/);
  assert.ok(Object.isFrozen(RefundOutcome));
});

test('INFO is read from a flat array, an object or a Map alike', () => {
  const flat = ['stock', 1, 'unlimited', 0, 'limit', 2, 'initial', 5, 'added', 0, 'sold', 6, 'refunded', 2,
    'held', 0, 'holds', 0, 'expired', 0, 'buyers', 3, 'requests', 4, 'start', 0, 'end', 0,
    'stream', Buffer.from('app:{x}:orders'), 'stream_maxlen', 0];
  const obj = {};
  for (let i = 0; i < flat.length; i += 2) obj[flat[i]] = flat[i + 1];
  const map = new Map(Object.entries(obj).map(([k, v]) => [Buffer.from(k), v]));
  const a = ItemInfo.fromReply(flat);
  assert.deepEqual(ItemInfo.fromReply(obj), a);
  assert.deepEqual(ItemInfo.fromReply(map), a);
  assert.equal(a.stream, 'app:{x}:orders');
  assert.equal(ItemInfo.fromReply(flat, 'app:').stream, '{x}:orders');
  assert.equal(ItemInfo.fromReply(flat, Buffer.from('app:')).stream, '{x}:orders');
  assert.equal(ItemInfo.fromReply(flat, 'other:').stream, 'app:{x}:orders');
  assert.throws(() => ItemInfo.fromReply(['stock', 1]), TypeError);
  // A module without transfers sends no moved_out / moved_in: 0.
  assert.deepEqual([a.movedOut, a.movedIn], [0, 0]);
  const moved = ItemInfo.fromReply([...flat, 'moved_out', '7', 'moved_in', 5n]);
  assert.deepEqual([moved.movedOut, moved.movedIn], [7, 5]);
  assert.deepEqual(Object.keys(moved).slice(-4), ['movedOut', 'movedIn', 'streamConfirmed', 'variants']);
  assert.equal(moved.variants, 0);
  // A module older than confirmed streams trusted every stream.
  assert.equal(moved.streamConfirmed, true);
  assert.equal(ItemInfo.fromReply([...flat, 'stream_confirmed', 0]).streamConfirmed, false);
});

test('FNV-1a 32 test vectors (the same in every seckill client), and the part of a user', () => {
  assert.equal(fnv1a32(''), 2166136261);
  assert.equal(fnv1a32(Buffer.alloc(0)), 2166136261);
  assert.equal(fnv1a32('a'), 3826002220);
  assert.equal(fnv1a32('a'), 0xe40c292c);
  assert.equal(fnv1a32('foobar'), 3214735720);
  assert.equal(fnv1a32(Buffer.from('foobar')), 0xbf9cf968);
  assert.equal(fnv1a32(new Uint8Array(Buffer.from('foobar'))), 0xbf9cf968);
  // Strings are hashed as UTF-8: 'é' is c3 a9.
  assert.equal(fnv1a32('é'), fnv1a32(Buffer.from([0xc3, 0xa9])));
  const fake = { seckill: { deduct() {}, get() {} } };
  const split = new SplitItem(fake, SplitItem.named('sku', 7));
  assert.equal(split.partFor('foobar'), 3214735720 % 7);
  assert.equal(split.partFor('a'), 3826002220 % 7);
  assert.equal(split.partFor(''), 2166136261 % 7);
  assert.equal(split.partFor(12), fnv1a32('12') % 7);
  assert.deepEqual(SplitItem.named('sku:1', 2), ['sku:1:part:0', 'sku:1:part:1']);
});

test('transfers and settle replies', () => {
  const reply = [[Buffer.from('m-1'), 4, Buffer.from('app:p1')], ['m-2', '2', null], ['m-3', 1, null, Buffer.from('43')]];
  const parse = COMMANDS.find((c) => c.method === 'transfers').parse;
  const list = parse(reply, 'app:');
  assert.ok(list.every((t) => t instanceof Transfer && Object.isFrozen(t)));
  assert.deepEqual(list.map((t) => ({ ...t })), [
    { transferId: 'm-1', units: 4, destination: 'p1', variant: null },
    { transferId: 'm-2', units: 2, destination: null, variant: null },
    { transferId: 'm-3', units: 1, destination: null, variant: '43' },
  ]);
  assert.equal(parse(null), null);
  const settle = COMMANDS.find((c) => c.method === 'settle').parse;
  assert.deepEqual([1, 0, -4, -3].map(settle), [
    SettleOutcome.SETTLED, SettleOutcome.ALREADY_SETTLED, SettleOutcome.UNKNOWN, SettleOutcome.NO_ITEM,
  ]);
  assert.throws(() => settle(2), TypeError);
  assert.ok(Object.isFrozen(SettleOutcome));
  // TAKE: the destination gets keyPrefix, but is not a key of the command.
  const take = COMMANDS.find((c) => c.method === 'take').build;
  assert.deepEqual(take('p0', 3, 't', 'p1'), { args: ['p0', '3', 'ID', 't', 'TO', 'p1'], keys: [0], names: [5] });
  assert.deepEqual(take('p0', 3n, 9, { to: 'p1' }).args, ['p0', '3', 'ID', '9', 'TO', 'p1']);
  assert.deepEqual(take('p0', 3, 't'), { args: ['p0', '3', 'ID', 't'], keys: [0], names: [] });
  const add = COMMANDS.find((c) => c.method === 'add').build;
  assert.deepEqual(add('p1', 3).args, ['p1', '3']);
  assert.deepEqual(add('p1', 3, { transferId: 't' }).args, ['p1', '3', 'ID', 't']);
  assert.deepEqual(add('p1', 3, 't').args, ['p1', '3', 'ID', 't']);
  assert.equal(seckill.transfers.IS_READ_ONLY, true);
  assert.equal(seckill.take.IS_READ_ONLY, false);
});

test('scan replies of every string and integer mapping give the same records', () => {
  const parse = COMMANDS.find((c) => c.method === 'scan').parse;
  const expected = [
    { type: 'buyer', user: 'ann', units: 1 },
    { type: 'request', requestId: 'r-1', user: 'ann', qty: 1, status: RequestStatus.HELD, deadline: 4102444800000 },
  ];
  for (const reply of [
    ['7124645162541645885', [['buyer', 'ann', 1], ['request', 'r-1', 'ann', 1, 'held', 4102444800000]]],
    [Buffer.from('7124645162541645885'), [[Buffer.from('buyer'), Buffer.from('ann'), 1n],
      [Buffer.from('request'), Buffer.from('r-1'), Buffer.from('ann'), '1', Buffer.from('held'), 4102444800000n]]],
  ]) {
    const page = parse(reply);
    assert.ok(page instanceof ScanPage && Object.isFrozen(page));
    assert.equal(page.cursor, '7124645162541645885'); // beyond 2^53: kept exact, as a string
    assert.ok(page.records[0] instanceof BuyerRecord && page.records[1] instanceof RequestRecord);
    assert.deepEqual(page.records.map((r) => ({ ...r })), expected);
  }
  const user = Buffer.from([0xff, 0xfe]);
  assert.deepEqual(parse(['0', [['buyer', user, 0]]]).records[0].user, user); // not UTF-8: the Buffer
  assert.deepEqual({ ...parse(['0', []]) }, { cursor: '0', records: [] });
  assert.throws(() => parse(['0', [['request', 'r', 'u', 1, 'pending', 0]]]), TypeError);
  assert.throws(() => parse(['0', [['seller', 'u', 1]]]), TypeError);
  assert.throws(() => parse(null), TypeError);
  const build = COMMANDS.find((c) => c.method === 'scan').build;
  assert.deepEqual(build('k').args, ['k', '0']);
  assert.deepEqual(build('k', 18446744073709551615n, { count: 5 }).args, ['k', '18446744073709551615', 'COUNT', '5']);
  assert.throws(() => build('k', '0', { cnt: 5 }), TypeError);
  assert.throws(() => build('k', 2 ** 64), RangeError);
});

test('order, confirmOrder and refundOrder: the count, then each key (keys for routing and keyPrefix), DETAIL, WITHDEADLINE with a hold', () => {
  const build = (method, ...args) => COMMANDS.find((c) => c.method === method).build(...args);
  assert.deepEqual(build('order', [['{c}:a', 2], { key: '{c}:b', qty: 1n }, { key: '{c}:c' }, ['{c}:d']], 'ann', 'o-1'), {
    args: ['4', '{c}:a', '2', '{c}:b', '1', '{c}:c', '1', '{c}:d', '1', 'ann', 'o-1'], keys: [1, 3, 5, 7], wait: undefined,
  });
  assert.deepEqual(build('order', [['a', 1]], 7, 8n, { hold: 60 }).args, ['1', 'a', '1', '7', '8', 'HOLD', '60', 'WITHDEADLINE']);
  assert.deepEqual(build('order', [['a', '3']], 'u', 'r', { holdUntil: new Date(5000) }).args,
    ['1', 'a', '3', 'u', 'r', 'HOLDUNTIL', '5000', 'WITHDEADLINE']);
  assert.deepEqual(build('order', [[Buffer.from([0xff]), 1]], 'u', 'r').args[1], Buffer.from([0xff]));
  assert.deepEqual(build('confirmOrder', ['{c}:a', '{c}:b'], 'o-1'), { args: ['2', '{c}:a', '{c}:b', 'o-1', 'DETAIL'], keys: [1, 2], wait: undefined });
  // The lines given to order stand for their keys.
  assert.deepEqual(build('refundOrder', [['{c}:a', 2], { key: '{c}:b' }], 'o-1').args, ['2', '{c}:a', '{c}:b', 'o-1', 'DETAIL']);
  // A line's variant: VARIANT line name, lines numbered from 1, after the hold.
  assert.deepEqual(build('order', [['a', 1, 43], ['b', 2], { key: 'c', variant: 's' }], 'u', 'r', { hold: 60 }).args,
    ['3', 'a', '1', 'b', '2', 'c', '1', 'u', 'r', 'HOLD', '60', 'VARIANT', '1', '43', 'VARIANT', '3', 's', 'WITHDEADLINE']);
  for (const bad of [[], 'a', [null], [5], [['a', 1, 2, 3]], [['a', 1, {}]], [{ key: 'a', qtty: 1 }], [{ qty: 1 }], [[]]]) {
    assert.throws(() => build('order', bad, 'u', 'r'), TypeError, JSON.stringify(bad));
  }
  assert.throws(() => build('order', [['a', 1.5]], 'u', 'r'), RangeError);
  assert.throws(() => build('order', [['a', 1]], 'u'), /order needs a request id/);
  assert.throws(() => build('order', [['a', 1]], null, 'r'), TypeError);
  assert.throws(() => build('order', [['a', 1]], 'u', 'r', { requestId: 'r' }), /unknown option 'requestId'/);
  assert.throws(() => build('confirmOrder', [], 'r'), TypeError);
  assert.throws(() => build('refundOrder', ['a'], undefined), /refundOrder needs a request id/);
  assert.throws(() => build('refundOrder', ['a'], 'r', { hold: 1 }), /unknown option 'hold'/);
});

test('order replies: the lines, with or without a deadline; nil lines; every integer mapping', () => {
  const FAR = 4102444800000;
  const parse = COMMANDS.find((c) => c.method === 'order').parse;
  const view = (r) => [r.taken, r.ok, r.lines.map((l) => (l === null ? null : [l.outcome, l.stock, l.deadline])), r.deadline];
  for (const [reply, deadline] of [[[4, 0], null], [[[4, 0], FAR], FAR], [[['4', '0'], String(FAR)], FAR], [[[4n, 0n], BigInt(FAR)], FAR],
    [[[Buffer.from('4'), Buffer.from('0')], null], null], [[[4, 0], undefined], null]]) {
    const r = parse(reply);
    assert.ok(r instanceof OrderResult && Object.isFrozen(r) && Object.isFrozen(r.lines));
    assert.deepEqual(view(r), [true, true, [[Outcome.BOUGHT, 4, deadline], [Outcome.BOUGHT, 0, deadline]], deadline]);
  }
  // Refused: each refusing line's outcome, null for the lines that would have been taken.
  assert.deepEqual(view(parse([null, -1, null])), [false, false, [null, [Outcome.SOLD_OUT, null, null], null], null]);
  assert.deepEqual(view(parse([[-2, -3, -5, -6, null], null])), [false, false, [
    [Outcome.LIMIT_REACHED, null, null], [Outcome.NO_ITEM, null, null], [Outcome.NOT_STARTED, null, null], [Outcome.ENDED, null, null], null,
  ], null]);
  // A replay after a line was given back: that line CANCELLED, the order not taken.
  assert.deepEqual(view(parse([[1, -4], FAR])), [false, false, [[Outcome.BOUGHT, 1, FAR], [Outcome.CANCELLED, null, null]], FAR]);
  assert.deepEqual(view(parse([null])), [false, false, [null], null]);
  assert.throws(() => parse(3), /unexpected reply to SECKILL.MDEDUCT/);
  assert.throws(() => parse([[1], 2, 3]), /unexpected reply to SECKILL.MDEDUCT/);
  assert.throws(() => parse([-7]), /unexpected reply to SECKILL.MDEDUCT/);
});

test('confirmOrder and refundOrder replies', () => {
  const confirm = COMMANDS.find((c) => c.method === 'confirmOrder').parse;
  const view = (c) => [c.confirmed, c.ok, c.lines];
  const paid = confirm([1, '0', 1n]);
  assert.ok(paid instanceof OrderConfirmation && Object.isFrozen(paid) && Object.isFrozen(paid.lines));
  assert.deepEqual(view(paid), [true, true, [ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY_FINAL, ConfirmOutcome.CONFIRMED]]);
  assert.deepEqual(view(confirm([null, -8, null])), [false, false, [null, ConfirmOutcome.LAPSED, null]]);
  assert.deepEqual(view(confirm([-7, -9, -3, -4])), [false, false, [
    ConfirmOutcome.REFUNDED, ConfirmOutcome.UNKNOWN_REQUEST, ConfirmOutcome.NO_ITEM, ConfirmOutcome.CANCELLED,
  ]]);
  assert.throws(() => confirm(1), /unexpected reply to SECKILL.MCONFIRM/);
  assert.throws(() => confirm([2]), /unexpected reply to SECKILL.MCONFIRM/);

  const refund = COMMANDS.find((c) => c.method === 'refundOrder').parse;
  const refunds = refund([2, '0', -7n, -8, -9, -3]);
  assert.ok(Object.isFrozen(refunds) && refunds.every((r) => r instanceof RefundResult));
  assert.deepEqual(refunds.map((r) => [r.outcome, r.units]), [
    [RefundOutcome.REFUNDED, 2], [RefundOutcome.NOTHING, null], [RefundOutcome.ALREADY_REFUNDED, null],
    [RefundOutcome.LAPSED, null], [RefundOutcome.UNKNOWN_REQUEST, null], [RefundOutcome.NO_ITEM, null],
  ]);
  assert.throws(() => refund(1), /unexpected reply to SECKILL.MREFUND/);
  assert.throws(() => refund([-4]), /unexpected reply to SECKILL.REFUND/);
});

test('CartSaga checks its client and arguments before sending anything', async () => {
  assert.throws(() => new CartSaga({}), /CartSaga needs a client with the seckill commands/);
  // A client never connected: a call that got as far as sending would fail with the client's own error.
  const client = createClient({ modules: { seckill } });
  const saga = new CartSaga(client);
  assert.equal(saga.client, client);
  await assert.rejects(saga.place('c', 'u', [], 60), TypeError);
  await assert.rejects(saga.place('c', 'u', [['a', 1]]), /holdSeconds must be an integer/);
  await assert.rejects(saga.place(null, 'u', [['a', 1]], 60), /cartId must be a string/);
  await assert.rejects(saga.place('c', 'u', [['a', 0.5]], 60), RangeError);
  await assert.rejects(saga.confirm('c', []), TypeError);
  await assert.rejects(saga.cancel(undefined, ['a']), /cartId must be a string/);
  await assert.rejects(saga.place('c', 'u', [['a', 1]], 60), (err) => !(err instanceof TypeError) && !(err instanceof RangeError));
});

test('variants: init sends VARIANTS n name stock ... and VARIANTLIMIT name n; deduct, add, get, bought, info and scan send VARIANT name', () => {
  const build = (method, ...args) => COMMANDS.find((c) => c.method === method).build(...args);
  // An object (its keys, in their order: integer names ascending) or a Map (in its order, any names).
  assert.deepEqual(build('init', '{d}', { 44: 5, 42: 2, 43: 1 }, { limit: 1, stream: '{d}:orders' }), {
    args: ['{d}', 'VARIANTS', '3', '42', '2', '43', '1', '44', '5', 'LIMIT', '1', 'STREAM', '{d}:orders'], keys: [0, 12],
  });
  const name = Buffer.from([0xff, 0x01]);
  assert.deepEqual(build('init', '{d}', new Map([['xl', UNLIMITED], [name, 3n], [42, 'unlimited'], ['s', Infinity]]), {
    variantLimits: new Map([['xl', 2], [42, 1n]]), limit: 3, replace: true,
  }).args, ['{d}', 'VARIANTS', '4', 'xl', 'UNLIMITED', name, '3', '42', 'UNLIMITED', 's', 'UNLIMITED',
    'LIMIT', '3', 'VARIANTLIMIT', 'xl', '2', 'VARIANTLIMIT', '42', '1', 'REPLACE']);
  assert.deepEqual(build('init', '{d}', { s: 1 }, { variantLimits: { s: '1' } }).args, ['{d}', 'VARIANTS', '1', 's', '1', 'VARIANTLIMIT', 's', '1']);
  // One stock as before.
  assert.deepEqual(build('init', 'k', 5, { limit: 2 }).args, ['k', '5', 'LIMIT', '2']);
  assert.deepEqual(build('init', 'k', UNLIMITED).args, ['k', 'UNLIMITED']);
  assert.throws(() => build('init', '{d}', {}), /at least one variant/);
  assert.throws(() => build('init', '{d}', new Map()), TypeError);
  assert.throws(() => build('init', '{d}', { s: 1.5 }), /the stock of variant s/);
  assert.throws(() => build('init', '{d}', { s: null }), TypeError);
  assert.throws(() => build('init', '{d}', new Map([[{}, 1]])), TypeError);
  assert.throws(() => build('init', '{d}', { s: 1 }, { variantLimits: [['s', 1]] }), /variantLimits must be an object or a Map/);
  assert.throws(() => build('init', '{d}', { s: 1 }, { variantLimits: { s: 1.5 } }), /the limit of variant s/);
  assert.throws(() => build('init', '{d}', { s: 1 }, { variantLimit: { s: 1 } }), /unknown option 'variantLimit'/);

  // deduct: VARIANT before WITHDEADLINE; a number is its decimal text.
  assert.deepEqual(build('deduct', '{d}', 'ana', 1, { requestId: 'o-1', holdUntil: 5000, variant: 43 }).args,
    ['{d}', 'ana', '1', 'ID', 'o-1', 'HOLDUNTIL', '5000', 'VARIANT', '43', 'WITHDEADLINE']);
  assert.deepEqual(build('deduct', '{d}', 'ana', { variant: name, waitReplicas: 1 }),
    { args: ['{d}', 'ana', '1', 'VARIANT', name], keys: [0], wait: { replicas: 1, timeoutMs: 1000 } });
  assert.deepEqual(build('deduct', '{d}', 'ana', 1, { variant: null }).args, ['{d}', 'ana', '1']);
  assert.throws(() => build('deduct', '{d}', 'ana', 1, { variant: {} }), TypeError);

  // add: a transferId, a variant, or both (a variant's units moved from another part).
  assert.deepEqual(build('add', '{d}', 3, { variant: 42 }), { args: ['{d}', '3', 'VARIANT', '42'], keys: [0] });
  assert.deepEqual(build('add', '{d}', 3, { transferId: 't' }).args, ['{d}', '3', 'ID', 't']);
  assert.deepEqual(build('add', '{d}', 3, 't').args, ['{d}', '3', 'ID', 't']);
  assert.deepEqual(build('add', '{d}', 3, { transferId: 't', variant: 42 }).args, ['{d}', '3', 'ID', 't', 'VARIANT', '42']);
  // take and settle of one variant.
  assert.deepEqual(build('take', '{d}', 3, 't', { to: '{d}:1', variant: 42 }).args, ['{d}', '3', 'ID', 't', 'TO', '{d}:1', 'VARIANT', '42']);
  assert.deepEqual(build('settle', '{d}', 't', { variant: 42 }).args, ['{d}', 't', 'VARIANT', '42']);
  assert.deepEqual(build('settle', '{d}', 't').args, ['{d}', 't']);
  assert.throws(() => build('settle', '{d}', 't', { to: 'x' }), TypeError);

  // The reads: the whole item, or one variant.
  for (const method of ['get', 'info']) {
    assert.deepEqual(build(method, '{d}'), { args: ['{d}'], keys: [0] });
    assert.deepEqual(build(method, '{d}', { variant: 'xl' }), { args: ['{d}', 'VARIANT', 'xl'], keys: [0] });
    assert.deepEqual(build(method, '{d}', { variant: undefined }).args, ['{d}']);
    assert.throws(() => build(method, '{d}', { size: 'xl' }), new RegExp(`unknown option 'size' for ${method}`));
    assert.throws(() => build(method, '{d}', 'xl'), TypeError);
  }
  assert.deepEqual(build('bought', '{d}', 'ana').args, ['{d}', 'ana']);
  assert.deepEqual(build('bought', '{d}', 'ana', { variant: 42n }).args, ['{d}', 'ana', 'VARIANT', '42']);
  assert.deepEqual(build('scan', '{d}', '0', { count: 5, variant: 'm' }).args, ['{d}', '0', 'COUNT', '5', 'VARIANT', 'm']);
  assert.deepEqual(build('scan', '{d}', null, { variant: 'm' }).args, ['{d}', '0', 'VARIANT', 'm']);
  // CONFIRM, REFUND, RELEASE and STATUS find the variant by the request id: they take none.
  assert.throws(() => build('confirm', '{d}', 'o-1', { variant: 42 }), /unknown option 'variant'/);
  assert.throws(() => build('refund', '{d}', 'o-1', { variant: 42 }), /unknown option 'variant'/);
  // Reads stay read-only.
  for (const method of ['get', 'bought', 'info', 'scan']) assert.equal(seckill[method].IS_READ_ONLY, true, method);
});

test('variants: STATUS and HOLDS name the variant (null on an item without), in every mapping', () => {
  const status = COMMANDS.find((c) => c.method === 'status').parse;
  const FAR = 4102444800000;
  const flat = ['status', 'held', 'user', 'ben', 'qty', 1, 'deadline', FAR, 'variant', '44'];
  const obj = { status: 'held', user: 'ben', qty: 1n, deadline: String(FAR), variant: Buffer.from('44') };
  const map = new Map([[Buffer.from('status'), Buffer.from('held')], ['user', Buffer.from('ben')], ['qty', '1'],
    ['deadline', BigInt(FAR)], ['variant', '44']]);
  for (const reply of [flat, obj, map]) {
    const s = status(reply);
    assert.ok(s instanceof OrderState && Object.isFrozen(s));
    assert.deepEqual({ ...s }, { status: RequestStatus.HELD, user: 'ben', qty: 1, deadline: FAR, variant: '44' });
  }
  // An id the item never saw: nil variant; an item without variants: no such field.
  assert.equal(status(['status', 'unknown', 'user', null, 'qty', 0, 'deadline', 0, 'variant', null]).variant, null);
  assert.deepEqual({ ...status(flat.slice(0, 8)) }, { status: RequestStatus.HELD, user: 'ben', qty: 1, deadline: FAR, variant: null });
  const binary = Buffer.from([0xff, 0xfe]);
  assert.deepEqual(status([...flat.slice(0, 8), 'variant', binary]).variant, binary);
  assert.deepEqual(Object.keys(status(flat)), ['status', 'user', 'qty', 'deadline', 'variant']);

  const holds = COMMANDS.find((c) => c.method === 'holds').parse;
  const list = holds([
    ['o-1', 'ben', 1, FAR, '44'],
    [Buffer.from('o-2'), Buffer.from('cy'), '2', BigInt(FAR), Buffer.from('42')],
    ['o-3', 'dee', 1, FAR, binary],
    ['o-4', 'eve', 1, FAR],
  ]);
  assert.ok(list.every((h) => h instanceof Hold && Object.isFrozen(h)));
  assert.deepEqual(list.map((h) => h.variant), ['44', '42', binary, null]);
  assert.deepEqual({ ...list[1] }, { requestId: 'o-2', user: 'cy', qty: 2, deadline: FAR, variant: '42' });
  assert.deepEqual(Object.keys(list[3]), ['requestId', 'user', 'qty', 'deadline', 'variant']);
  assert.throws(() => holds([['o-1', 'ben', 1]]), TypeError);
  assert.equal(holds(null), null);

  // INFO's variants: how many the item sells (0 for one variant's own counters).
  const info = ItemInfo.fromReply(['stock', 6, 'unlimited', 0, 'limit', 1, 'initial', 8, 'added', 0, 'sold', 2, 'refunded', 0,
    'held', 1, 'holds', 1, 'expired', 0, 'buyers', 2, 'requests', 2, 'start', 0, 'end', 0, 'stream', null,
    'stream_maxlen', 0, 'moved_out', 0, 'moved_in', 0, 'stream_confirmed', 0, 'variants', 3]);
  assert.equal(info.variants, 3);
});
