'use strict';
// One table of the SECKILL.* commands shared by the node-redis module and the
// ioredis installer: how a call's arguments become the command's arguments
// (and which of them are keys), and how its reply becomes a typed value.
// deduct, confirm and refund may also ask for a wait: WAIT sent right after
// the command, on its connection (see lib/wait.js and ioredis.js).
// confirm and refund always send DETAIL, and deduct with a hold sends
// WITHDEADLINE, so that their typed values say why a hold is gone and when a
// hold ends without a second round trip; so do the commands of an order of
// several items (order, confirmOrder, refundOrder: SECKILL.MDEDUCT,
// MCONFIRM, MREFUND).

const {
  UNLIMITED,
  DeductResult,
  RefundResult,
  OrderResult,
  OrderConfirmation,
  ItemInfo,
  OrderState,
  toInteger,
  toIntegerOrNull,
  parseHolds,
  parseTransfers,
  parseVariants,
  parseConfirm,
  parseSettle,
  parseScan,
  parseRefunds,
} = require('./values');

const NO_ITEM = -3;

// ---- arguments ------------------------------------------------------------

function isBytes(v) {
  return typeof v === 'string' || Buffer.isBuffer(v) || v instanceof Uint8Array;
}

// A byte-string argument (key, user, request id): strings and Buffers as
// they are; numbers (safe integers) and BigInts as decimal strings.
function bytes(v, what) {
  if (typeof v === 'string' || Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === 'number' || typeof v === 'bigint') return integer(v, what);
  throw new TypeError(`${what} must be a string or a Buffer, got ${describe(v)}`);
}

// An integer argument: numbers must be safe integers, BigInts and strings go
// as they are (the server checks them).
function integer(v, what) {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) {
      throw new RangeError(`${what} must be an integer within ±2^53 (pass a BigInt or a string beyond), got ${v}`);
    }
    return String(v);
  }
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'string' || Buffer.isBuffer(v)) return v;
  throw new TypeError(`${what} must be an integer, got ${describe(v)}`);
}

// A Unix time in milliseconds: an integer or a Date.
function unixMs(v, what) {
  if (v instanceof Date) return integer(v.getTime(), what);
  return integer(v, what);
}

// A Unix time in seconds: an integer or a Date (rounded down to the second).
function unixSeconds(v, what) {
  if (v instanceof Date) return integer(Math.floor(v.getTime() / 1000), what);
  return integer(v, what);
}

function stockArg(v, what = 'stock') {
  if (v === UNLIMITED || v === Infinity) return UNLIMITED;
  if (typeof v === 'string' && v.toUpperCase() === UNLIMITED) return UNLIMITED;
  return integer(v, what);
}

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}

function isOptions(v) {
  return v !== null && typeof v === 'object' && !isBytes(v) && !(v instanceof Date) && !Array.isArray(v);
}

// Variant names and what goes with each (a stock, a cap): a Map (names may
// be strings, Buffers or numbers) or a plain object (its keys), read as
// [name, value] pairs in their iteration order.
const isNameTable = isOptions;

function namedEntries(table, what) {
  if (!isNameTable(table)) {
    throw new TypeError(`${what} must be an object or a Map of variant name to value, got ${describe(table)}`);
  }
  return table instanceof Map ? [...table.entries()] : Object.entries(table);
}

// A variant name (1 to 64 bytes, the server checks): a string or a Buffer;
// a number (a size such as 42) as its decimal text.
const variantArg = (v) => bytes(v, 'variant');

function checkOptions(options, allowed, command) {
  if (options === undefined || options === null) return {};
  if (!isOptions(options)) {
    throw new TypeError(`the options of ${command} must be an object, got ${describe(options)}`);
  }
  for (const k of Object.keys(options)) {
    if (!allowed.includes(k)) {
      throw new TypeError(`unknown option '${k}' for ${command} (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

const given = (v) => v !== undefined && v !== null;

// A count of the wait (replicas, milliseconds): a non-negative safe integer,
// as a number (a BigInt is taken too), since the replicas WAIT answers are
// compared with it.
function count(v, what) {
  if (typeof v === 'bigint') v = Number(v);
  if (typeof v !== 'number') throw new TypeError(`${what} must be a number, got ${describe(v)}`);
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what} must be a non-negative integer, got ${v}`);
  return v;
}

// The wait of deduct, confirm and refund: { waitReplicas, waitTimeoutMs }.
const WAIT_OPTIONS = ['waitReplicas', 'waitTimeoutMs'];
const DEFAULT_WAIT_TIMEOUT_MS = 1000;

// { replicas, timeoutMs } when the options ask for a wait, else undefined.
function waitOf(o, command) {
  if (!given(o.waitReplicas)) {
    if (given(o.waitTimeoutMs)) throw new TypeError(`${command}: waitTimeoutMs needs waitReplicas`);
    return undefined;
  }
  return {
    replicas: count(o.waitReplicas, 'waitReplicas'),
    timeoutMs: given(o.waitTimeoutMs) ? count(o.waitTimeoutMs, 'waitTimeoutMs') : DEFAULT_WAIT_TIMEOUT_MS,
  };
}

// The same call without its wait: the options object (at `at` in the call's
// arguments) copied without waitReplicas and waitTimeoutMs.
function withoutWait(callArgs, at) {
  const options = callArgs[at];
  if (!isOptions(options)) return callArgs;
  const rest = { ...options };
  for (const k of WAIT_OPTIONS) delete rest[k];
  const out = callArgs.slice();
  out[at] = rest;
  return out;
}

// Each builder returns { args, keys, names?, wait? }: the command's arguments
// after its name, the indexes in args of its keys (the command is routed by
// the first: the item key, at 0, or for an order the key of its first line,
// after the count of lines), those of other key names that get keyPrefix
// but are not keys of the command (TAKE's TO destination: a part that may
// live in another slot, so it must not take part in routing or in ioredis's
// same-slot check of cluster pipelines), and the wait asked for, if any.

const INIT_OPTIONS = ['limit', 'variantLimits', 'start', 'end', 'stream', 'maxlen', 'ex', 'px', 'exat', 'pxat', 'replace'];

// The stock of init: one stock (an integer, or UNLIMITED), or the stocks of
// an item's variants, an object or a Map of name to stock, sent as
// VARIANTS numvariants name stock [name stock ...].
function stockArgs(stock) {
  if (!isNameTable(stock)) return [stockArg(stock)];
  const entries = namedEntries(stock, 'the stocks of init');
  if (entries.length === 0) throw new TypeError('init needs at least one variant (an empty object or Map was given)');
  const args = ['VARIANTS', String(entries.length)];
  for (const [name, s] of entries) args.push(variantArg(name), stockArg(s, `the stock of variant ${String(name)}`));
  return args;
}

function buildInit(key, stock, options) {
  const o = checkOptions(options, INIT_OPTIONS, 'init');
  const args = [bytes(key, 'key'), ...stockArgs(stock)];
  const keys = [0];
  if (given(o.limit)) args.push('LIMIT', integer(o.limit, 'limit'));
  if (given(o.variantLimits)) {
    for (const [name, cap] of namedEntries(o.variantLimits, 'variantLimits')) {
      args.push('VARIANTLIMIT', variantArg(name), integer(cap, `the limit of variant ${String(name)}`));
    }
  }
  if (given(o.start)) args.push('START', unixMs(o.start, 'start'));
  if (given(o.end)) args.push('END', unixMs(o.end, 'end'));
  if (given(o.stream)) {
    args.push('STREAM', bytes(o.stream, 'stream'));
    keys.push(args.length - 1);
  }
  if (given(o.maxlen)) args.push('MAXLEN', integer(o.maxlen, 'maxlen'));
  if (given(o.ex)) args.push('EX', integer(o.ex, 'ex'));
  if (given(o.px)) args.push('PX', integer(o.px, 'px'));
  if (given(o.exat)) args.push('EXAT', unixSeconds(o.exat, 'exat'));
  if (given(o.pxat)) args.push('PXAT', unixMs(o.pxat, 'pxat'));
  if (o.replace) args.push('REPLACE');
  return { args, keys };
}

const DEDUCT_OPTIONS = ['qty', 'requestId', 'hold', 'holdUntil', 'variant', ...WAIT_OPTIONS];

function buildDeduct(key, user, qty, options) {
  if (isOptions(qty) && options === undefined) {
    options = qty;
    qty = options.qty;
  }
  const o = checkOptions(options, DEDUCT_OPTIONS, 'deduct');
  if (!given(qty)) qty = given(o.qty) ? o.qty : 1;
  const args = [bytes(key, 'key'), bytes(user, 'user'), integer(qty, 'qty')];
  if (given(o.requestId)) args.push('ID', bytes(o.requestId, 'requestId'));
  if (given(o.hold)) args.push('HOLD', integer(o.hold, 'hold'));
  if (given(o.holdUntil)) args.push('HOLDUNTIL', unixMs(o.holdUntil, 'holdUntil'));
  if (given(o.variant)) args.push('VARIANT', variantArg(o.variant));
  // Only a hold has a deadline: a purchase without one keeps its integer reply.
  if (given(o.hold) || given(o.holdUntil)) args.push('WITHDEADLINE');
  return { args, keys: [0], wait: waitOf(o, 'deduct') };
}

// Where deduct's options are: deduct(key, user, { ... }) or deduct(key, user, qty, { ... }).
const deductOptionsAt = (callArgs) => (isOptions(callArgs[2]) && callArgs[3] === undefined ? 2 : 3);

function buildConfirm(key, requestId, options) {
  const o = checkOptions(options, WAIT_OPTIONS, 'confirm');
  return { args: [bytes(key, 'key'), bytes(requestId, 'requestId'), 'DETAIL'], keys: [0], wait: waitOf(o, 'confirm') };
}

function buildRelease(key, ...requestIds) {
  const ids = requestIds.length === 1 && Array.isArray(requestIds[0]) ? requestIds[0] : requestIds;
  return { args: [bytes(key, 'key'), ...ids.map((id) => bytes(id, 'requestId'))], keys: [0] };
}

function buildRefund(key, requestId, options) {
  const o = checkOptions(options, WAIT_OPTIONS, 'refund');
  return { args: [bytes(key, 'key'), bytes(requestId, 'requestId'), 'DETAIL'], keys: [0], wait: waitOf(o, 'refund') };
}

// ---- an order of several items (MDEDUCT, MCONFIRM, MREFUND) -----------------
// The server finds these commands' keys after a count (numlines, numkeys),
// and so must every client: a cluster client that routed by the first
// argument would send them by the slot of "2". Each key is pushed as a key,
// the first one first, so node-redis routes by it and ioredis's Command
// names it first in getKeys() (its slot is the command's); keyPrefix goes
// on every key.

// One line of an order: [key, qty, variant] or { key, qty, variant } (qty 1
// when left out; a variant only for an item with variants), as
// [key, qty, variant or null].
function orderLine(line, i) {
  let key;
  let qty;
  let variant;
  if (Array.isArray(line)) {
    if (line.length < 1 || line.length > 3) throw new TypeError(`line ${i} of an order must be [key, qty] or [key, qty, variant], got ${line.length} entries`);
    [key, qty, variant] = line;
  } else if (isOptions(line)) {
    ({ key, qty, variant } = checkOptions(line, ['key', 'qty', 'variant'], `line ${i} of an order`));
  } else {
    throw new TypeError(`line ${i} of an order must be [key, qty, variant?] or { key, qty, variant? }, got ${describe(line)}`);
  }
  if (!given(key)) throw new TypeError(`line ${i} of an order has no key`);
  return [
    bytes(key, `the key of line ${i}`),
    integer(given(qty) ? qty : 1, `the qty of line ${i}`),
    given(variant) ? bytes(variant, `the variant of line ${i}`) : null,
  ];
}

function orderLines(lines, command) {
  if (!Array.isArray(lines) || lines.length === 0) {
    throw new TypeError(`${command} needs a non-empty array of lines ([key, qty] or { key, qty }), got ${describe(lines)}`);
  }
  return lines.map(orderLine);
}

/**
 * The keys of an order: an array of keys, or the order's lines themselves
 * ([key, qty] or { key, qty }: their keys), so that the lines given to
 * `order` may be passed as they are.
 */
function orderKeys(keys, command) {
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new TypeError(`${command} needs a non-empty array of keys (or of the order's lines), got ${describe(keys)}`);
  }
  return keys.map((k, i) => (Array.isArray(k) || isOptions(k) ? orderLine(k, i)[0] : bytes(k, `key ${i}`)));
}

const ORDER_OPTIONS = ['hold', 'holdUntil', ...WAIT_OPTIONS];

// order(lines, user, requestId, { hold, holdUntil })
function buildOrder(lines, user, requestId, options) {
  const o = checkOptions(options, ORDER_OPTIONS, 'order');
  const parsed = orderLines(lines, 'order');
  // An order is recorded on each item under its request id: it is required.
  if (!given(requestId)) throw new TypeError('order needs a request id');
  const args = [String(parsed.length)];
  const keys = [];
  for (const [key, qty] of parsed) {
    keys.push(args.length);
    args.push(key, qty);
  }
  args.push(bytes(user, 'user'), bytes(requestId, 'requestId'));
  if (given(o.hold)) args.push('HOLD', integer(o.hold, 'hold'));
  if (given(o.holdUntil)) args.push('HOLDUNTIL', unixMs(o.holdUntil, 'holdUntil'));
  // VARIANT line name: the variant a line buys, lines numbered from 1.
  parsed.forEach(([, , variant], i) => {
    if (variant !== null) args.push('VARIANT', String(i + 1), variant);
  });
  if (given(o.hold) || given(o.holdUntil)) args.push('WITHDEADLINE');
  return { args, keys, wait: waitOf(o, 'order') };
}

// confirmOrder(keys, requestId) and refundOrder(keys, requestId): numkeys
// key [key ...] request_id DETAIL.
function orderKeysBuilder(command) {
  return function buildOrderKeys(keys, requestId, options) {
    const o = checkOptions(options, WAIT_OPTIONS, command);
    const list = orderKeys(keys, command);
    if (!given(requestId)) throw new TypeError(`${command} needs a request id`);
    const args = [String(list.length), ...list, bytes(requestId, 'requestId'), 'DETAIL'];
    return { args, keys: list.map((_, i) => i + 1), wait: waitOf(o, command) };
  };
}

// add(key, qty), add(key, qty, { transferId }) or add(key, qty, transferId);
// add(key, qty, { variant }) restocks one variant, add(key, qty, { transferId, variant })
// receives a variant's units moved from another part.
function buildAdd(key, qty, options) {
  const o = isOptions(options) ? checkOptions(options, ['transferId', 'variant'], 'add') : { transferId: options };
  const args = [bytes(key, 'key'), integer(qty, 'qty')];
  if (given(o.transferId)) args.push('ID', bytes(o.transferId, 'transferId'));
  if (given(o.variant)) args.push('VARIANT', variantArg(o.variant));
  return { args, keys: [0] };
}

// take(key, qty, transferId, to?) or take(key, qty, transferId, { to, variant })
function buildTake(key, qty, transferId, to) {
  let variant;
  if (isOptions(to)) ({ to, variant } = checkOptions(to, ['to', 'variant'], 'take'));
  if (!given(transferId)) throw new TypeError('take needs a transfer id');
  const args = [bytes(key, 'key'), integer(qty, 'qty'), 'ID', bytes(transferId, 'transferId')];
  const names = [];
  if (given(to)) {
    args.push('TO', bytes(to, 'to'));
    names.push(args.length - 1);
  }
  if (given(variant)) args.push('VARIANT', variantArg(variant));
  return { args, keys: [0], names };
}

// settle(key, transferId) or settle(key, transferId, { variant })
function buildSettle(key, transferId, options) {
  const args = [bytes(key, 'key'), bytes(transferId, 'transferId')];
  if (options !== undefined) {
    const { variant } = checkOptions(options, ['variant'], 'settle');
    if (given(variant)) args.push('VARIANT', variantArg(variant));
  }
  return { args, keys: [0] };
}

function buildWindow(key, start, end) {
  return {
    args: [bytes(key, 'key'), given(start) ? unixMs(start, 'start') : '0', given(end) ? unixMs(end, 'end') : '0'],
    keys: [0],
  };
}

function buildStream(key, streamKey, maxlen) {
  if (isOptions(maxlen)) maxlen = checkOptions(maxlen, ['maxlen'], 'stream').maxlen;
  const args = [bytes(key, 'key')];
  const keys = [0];
  if (given(streamKey)) {
    args.push(bytes(streamKey, 'streamKey'));
    keys.push(1);
    if (given(maxlen)) args.push('MAXLEN', integer(maxlen, 'maxlen'));
  } else if (given(maxlen)) {
    throw new TypeError('stream: maxlen needs a stream key');
  }
  return { args, keys };
}

function buildKeyOnly(key) {
  return { args: [bytes(key, 'key')], keys: [0] };
}

// The reads of the whole item or of one variant: get(key, { variant }),
// info(key, { variant }), bought(key, user, { variant }).
function variantReadBuilder(command) {
  return function buildVariantRead(key, options) {
    const o = checkOptions(options, ['variant'], command);
    const args = [bytes(key, 'key')];
    if (given(o.variant)) args.push('VARIANT', variantArg(o.variant));
    return { args, keys: [0] };
  };
}

function buildBought(key, user, options) {
  const o = checkOptions(options, ['variant'], 'bought');
  const args = [bytes(key, 'key'), bytes(user, 'user')];
  if (given(o.variant)) args.push('VARIANT', variantArg(o.variant));
  return { args, keys: [0] };
}

function buildHolds(key, user) {
  const args = [bytes(key, 'key')];
  if (given(user)) args.push(bytes(user, 'user'));
  return { args, keys: [0] };
}

function buildStatus(key, requestId) {
  return { args: [bytes(key, 'key'), bytes(requestId, 'requestId')], keys: [0] };
}

const SCAN_OPTIONS = ['count', 'variant'];

// scan(key, cursor = '0', { count, variant }) (an item with variants is
// scanned one variant at a time)
function buildScan(key, cursor, options) {
  const o = checkOptions(options, SCAN_OPTIONS, 'scan');
  const args = [bytes(key, 'key'), given(cursor) ? integer(cursor, 'cursor') : '0'];
  if (given(o.count)) args.push('COUNT', integer(o.count, 'count'));
  if (given(o.variant)) args.push('VARIANT', variantArg(o.variant));
  return { args, keys: [0] };
}

// ---- replies --------------------------------------------------------------

const countOrNull = (reply) => {
  const n = toInteger(reply);
  return n === NO_ITEM ? null : n;
};
const trueOrNull = (reply) => (toInteger(reply) === NO_ITEM ? null : true);

// ---- the table --------------------------------------------------------------

/**
 * @typedef {object} CommandSpec
 * @property {string} method   the method name (deduct, ...)
 * @property {string} name     the server command (SECKILL.DEDUCT, ...)
 * @property {boolean} readonly
 * @property {(...args: any[]) => {args: Array<string|Buffer>, keys: number[], names?: number[]}} build
 * @property {(reply: any, keyPrefix?: string|Buffer) => any} parse
 * @property {boolean} [unprefixes] its reply names keys, reported without keyPrefix
 * @property {(callArgs: any[]) => number} [waitsAt] it takes a wait: where its options are in a call
 */

/** @type {CommandSpec[]} */
const COMMANDS = [
  { method: 'init', name: 'SECKILL.INIT', readonly: false, build: buildInit, parse: (r) => toInteger(r) === 1 },
  {
    method: 'deduct', name: 'SECKILL.DEDUCT', readonly: false, build: buildDeduct, parse: DeductResult.fromReply,
    waitsAt: deductOptionsAt,
  },
  {
    method: 'confirm', name: 'SECKILL.CONFIRM', readonly: false, build: buildConfirm, parse: parseConfirm,
    waitsAt: () => 2,
  },
  { method: 'release', name: 'SECKILL.RELEASE', readonly: false, build: buildRelease, parse: countOrNull },
  {
    method: 'refund', name: 'SECKILL.REFUND', readonly: false, build: buildRefund, parse: RefundResult.fromReply,
    waitsAt: () => 2,
  },
  {
    method: 'order', name: 'SECKILL.MDEDUCT', readonly: false, build: buildOrder, parse: OrderResult.fromReply,
    waitsAt: () => 3,
  },
  {
    method: 'confirmOrder', name: 'SECKILL.MCONFIRM', readonly: false, build: orderKeysBuilder('confirmOrder'),
    parse: OrderConfirmation.fromReply, waitsAt: () => 2,
  },
  {
    method: 'refundOrder', name: 'SECKILL.MREFUND', readonly: false, build: orderKeysBuilder('refundOrder'),
    parse: parseRefunds, waitsAt: () => 2,
  },
  { method: 'add', name: 'SECKILL.ADD', readonly: false, build: buildAdd, parse: countOrNull },
  { method: 'window', name: 'SECKILL.WINDOW', readonly: false, build: buildWindow, parse: trueOrNull },
  { method: 'stream', name: 'SECKILL.STREAM', readonly: false, build: buildStream, parse: trueOrNull },
  { method: 'get', name: 'SECKILL.GET', readonly: true, build: variantReadBuilder('get'), parse: toIntegerOrNull },
  { method: 'bought', name: 'SECKILL.BOUGHT', readonly: true, build: buildBought, parse: toIntegerOrNull },
  { method: 'holds', name: 'SECKILL.HOLDS', readonly: true, build: buildHolds, parse: parseHolds },
  { method: 'status', name: 'SECKILL.STATUS', readonly: true, build: buildStatus, parse: OrderState.fromReply },
  {
    method: 'info',
    name: 'SECKILL.INFO',
    readonly: true,
    unprefixes: true,
    build: variantReadBuilder('info'),
    parse: (r, keyPrefix) => (r === null || r === undefined ? null : ItemInfo.fromReply(r, keyPrefix)),
  },
  { method: 'scan', name: 'SECKILL.SCAN', readonly: true, build: buildScan, parse: parseScan },
  { method: 'take', name: 'SECKILL.TAKE', readonly: false, build: buildTake, parse: countOrNull },
  { method: 'settle', name: 'SECKILL.SETTLE', readonly: false, build: buildSettle, parse: parseSettle },
  {
    method: 'transfers',
    name: 'SECKILL.TRANSFERS',
    readonly: true,
    unprefixes: true,
    build: buildKeyOnly,
    parse: parseTransfers,
  },
  { method: 'variants', name: 'SECKILL.VARIANTS', readonly: true, build: buildKeyOnly, parse: parseVariants },
];

module.exports = {
  COMMANDS, bytes, integer, isOptions, checkOptions, buildScan, SCAN_OPTIONS, withoutWait, orderLines, orderKeys,
};
