'use strict';
// The typed values every seckill client returns (same names as the Python and
// Rust clients), and the conversion of raw replies into them. Replies may come
// from node-redis or ioredis, under RESP2 or RESP3, with strings or Buffers,
// and with integers as numbers, strings or BigInts: all of them end up as the
// same values.

/**
 * The sentinel the server reports as the stock of an UNLIMITED item:
 * 9223372036854775807 (the largest signed 64-bit integer), exactly.
 */
const UNLIMITED_STOCK_BIGINT = 9223372036854775807n;

/**
 * The same sentinel as a JavaScript number. 9223372036854775807 has no exact
 * double: this is the nearest one (2 ** 63), which is also what node-redis and
 * ioredis produce when they parse that reply. Every stock of an unlimited item
 * is reported as this value whatever the client's number mapping, so
 * `stock === UNLIMITED_STOCK` is the test (or `info.unlimited`).
 */
const UNLIMITED_STOCK = Number(UNLIMITED_STOCK_BIGINT);

/** Pass as the stock of `init` for an item that never runs out. */
const UNLIMITED = 'UNLIMITED';

/** The outcome of `deduct`. */
const Outcome = Object.freeze({
  BOUGHT: 'BOUGHT',
  SOLD_OUT: 'SOLD_OUT',
  LIMIT_REACHED: 'LIMIT_REACHED',
  NO_ITEM: 'NO_ITEM',
  CANCELLED: 'CANCELLED',
  NOT_STARTED: 'NOT_STARTED',
  ENDED: 'ENDED',
});

const OUTCOME_BY_CODE = new Map([
  [-1, Outcome.SOLD_OUT],
  [-2, Outcome.LIMIT_REACHED],
  [-3, Outcome.NO_ITEM],
  [-4, Outcome.CANCELLED],
  [-5, Outcome.NOT_STARTED],
  [-6, Outcome.ENDED],
]);

/**
 * The outcome of `confirm`. `confirm` sends DETAIL, so a hold that is gone
 * comes back as REFUNDED, LAPSED or UNKNOWN_REQUEST; CANCELLED is what a
 * CONFIRM sent without DETAIL (a raw call) answers for all three.
 */
const ConfirmOutcome = Object.freeze({
  /** The pending hold is a final purchase now. */
  CONFIRMED: 'CONFIRMED',
  /** It was final already: confirmed before, or bought without a hold. */
  ALREADY_FINAL: 'ALREADY_FINAL',
  /** Without DETAIL: refunded, lapsed, or an unknown request id. */
  CANCELLED: 'CANCELLED',
  /** No such item. */
  NO_ITEM: 'NO_ITEM',
  /** The purchase was refunded. */
  REFUNDED: 'REFUNDED',
  /** The hold lapsed unconfirmed: its units went back on sale. */
  LAPSED: 'LAPSED',
  /** The item never saw this request id. */
  UNKNOWN_REQUEST: 'UNKNOWN_REQUEST',
});

const CONFIRM_BY_CODE = new Map([
  [1, ConfirmOutcome.CONFIRMED],
  [0, ConfirmOutcome.ALREADY_FINAL],
  [-4, ConfirmOutcome.CANCELLED],
  [-3, ConfirmOutcome.NO_ITEM],
  [-7, ConfirmOutcome.REFUNDED],
  [-8, ConfirmOutcome.LAPSED],
  [-9, ConfirmOutcome.UNKNOWN_REQUEST],
]);

/**
 * The outcome of `refund`. `refund` sends DETAIL, so a refund that gives
 * nothing back says why (ALREADY_REFUNDED, LAPSED, UNKNOWN_REQUEST);
 * NOTHING is what a REFUND sent without DETAIL (a raw call) answers for all three.
 */
const RefundOutcome = Object.freeze({
  /** The units were given back (how many: `units`). */
  REFUNDED: 'REFUNDED',
  /** Without DETAIL: an unknown request id, one refunded already, or a hold that lapsed. */
  NOTHING: 'NOTHING',
  /** No such item. */
  NO_ITEM: 'NO_ITEM',
  /** Refunded before: its units went back then. */
  ALREADY_REFUNDED: 'ALREADY_REFUNDED',
  /** The hold lapsed unconfirmed, and its units went back then. */
  LAPSED: 'LAPSED',
  /** The item never saw this request id. */
  UNKNOWN_REQUEST: 'UNKNOWN_REQUEST',
});

// Codes from 1 up are REFUNDED (the reply is the units given back).
const REFUND_BY_CODE = new Map([
  [0, RefundOutcome.NOTHING],
  [-3, RefundOutcome.NO_ITEM],
  [-7, RefundOutcome.ALREADY_REFUNDED],
  [-8, RefundOutcome.LAPSED],
  [-9, RefundOutcome.UNKNOWN_REQUEST],
]);

/** The outcome of `settle`. */
const SettleOutcome = Object.freeze({
  /** The transfer was open and is closed now. */
  SETTLED: 'SETTLED',
  /** It was closed before. */
  ALREADY_SETTLED: 'ALREADY_SETTLED',
  /** No such transfer was given out by this part. */
  UNKNOWN: 'UNKNOWN',
  /** No such item. */
  NO_ITEM: 'NO_ITEM',
});

const SETTLE_BY_CODE = new Map([
  [1, SettleOutcome.SETTLED],
  [0, SettleOutcome.ALREADY_SETTLED],
  [-4, SettleOutcome.UNKNOWN],
  [-3, SettleOutcome.NO_ITEM],
]);

/**
 * What `deduct` returns: an outcome, the remaining stock when bought, and the
 * hold's deadline when the call made a hold.
 */
class DeductResult {
  constructor(outcome, stock, deadline = null) {
    /** One of `Outcome`. */
    this.outcome = outcome;
    /** The remaining stock after the purchase when BOUGHT, else null. */
    this.stock = stock;
    /**
     * The hold's deadline, Unix milliseconds, when the call made a hold (or
     * replayed one still pending), else null: a purchase without a hold, a
     * refusal, a hold confirmed or gone since.
     */
    this.deadline = deadline;
    Object.freeze(this);
  }

  /** True when the units were bought (or held). */
  get ok() {
    return this.outcome === Outcome.BOUGHT;
  }

  /** Same as `ok`. */
  get bought() {
    return this.outcome === Outcome.BOUGHT;
  }

  // The integer reply, or [code, deadline] when the call sent WITHDEADLINE
  // (deduct does with a hold; a raw call or pipeline may either way).
  static fromReply(reply) {
    const withDeadline = Array.isArray(reply);
    if (withDeadline && reply.length !== 2) throw unexpected('SECKILL.DEDUCT', reply);
    const code = toInteger(withDeadline ? reply[0] : reply);
    const deadline = withDeadline ? toIntegerOrNull(reply[1]) : null;
    if (code >= 0) return new DeductResult(Outcome.BOUGHT, code, deadline);
    const outcome = OUTCOME_BY_CODE.get(code);
    if (outcome === undefined) throw unexpected('SECKILL.DEDUCT', reply);
    return new DeductResult(outcome, null, deadline);
  }
}

/** What `refund` returns: an outcome, and the units given back when REFUNDED. */
class RefundResult {
  constructor(outcome, units) {
    /** One of `RefundOutcome`. */
    this.outcome = outcome;
    /** The units given back (1 or more) when REFUNDED, else null. */
    this.units = units;
    Object.freeze(this);
  }

  /** True when units were given back by this call. */
  get ok() {
    return this.outcome === RefundOutcome.REFUNDED;
  }

  /** Same as `ok`. */
  get refunded() {
    return this.outcome === RefundOutcome.REFUNDED;
  }

  static fromReply(reply) {
    const code = toInteger(reply);
    if (code >= 1) return new RefundResult(RefundOutcome.REFUNDED, code);
    const outcome = REFUND_BY_CODE.get(code);
    if (outcome === undefined) throw unexpected('SECKILL.REFUND', reply);
    return new RefundResult(outcome, null);
  }
}

/**
 * What `order` returns (SECKILL.MDEDUCT): every line taken, or none.
 */
class OrderResult {
  constructor(taken, lines, deadline) {
    /** True when every line was taken (bought, or held until `deadline`). */
    this.taken = taken;
    /**
     * One entry per line, in the order's order: a DeductResult (BOUGHT with
     * the item's remaining stock when taken; the line's refusal, SOLD_OUT,
     * LIMIT_REACHED, ..., when refused), or null for a line that would have
     * been taken but was not, because another line refused the order.
     */
    this.lines = Object.freeze(lines);
    /**
     * The one deadline of every line's hold, Unix milliseconds, when the call
     * made a hold (or replayed one still pending), else null.
     */
    this.deadline = deadline;
    Object.freeze(this);
  }

  /** Same as `taken`. */
  get ok() {
    return this.taken;
  }

  // The lines array, or [lines, deadline] when the call sent WITHDEADLINE
  // (order does with a hold; a raw call or pipeline may either way). A line
  // is never an array, so a first entry that is one is the lines.
  static fromReply(reply) {
    if (!Array.isArray(reply)) throw unexpected('SECKILL.MDEDUCT', reply);
    const withDeadline = Array.isArray(reply[0]);
    if (withDeadline && reply.length !== 2) throw unexpected('SECKILL.MDEDUCT', reply);
    const entries = withDeadline ? reply[0] : reply;
    const deadline = withDeadline ? toIntegerOrNull(reply[1]) : null;
    const lines = entries.map((entry) => {
      if (entry === null || entry === undefined) return null;
      const code = toInteger(entry);
      if (code >= 0) return new DeductResult(Outcome.BOUGHT, code, deadline);
      const outcome = OUTCOME_BY_CODE.get(code);
      if (outcome === undefined) throw unexpected('SECKILL.MDEDUCT', reply);
      return new DeductResult(outcome, null, null);
    });
    const taken = lines.length > 0 && lines.every((line) => line !== null && line.bought);
    return new OrderResult(taken, lines, deadline);
  }
}

/** What `confirmOrder` returns (SECKILL.MCONFIRM): every line confirmed, or none. */
class OrderConfirmation {
  constructor(confirmed, lines) {
    /** True when every line is final now: CONFIRMED by this call, or ALREADY_FINAL. */
    this.confirmed = confirmed;
    /**
     * One entry per key, in order: its ConfirmOutcome, or null for a line that
     * could have been confirmed but was not, because another line refused
     * (REFUNDED, LAPSED, UNKNOWN_REQUEST or NO_ITEM).
     */
    this.lines = Object.freeze(lines);
    Object.freeze(this);
  }

  /** Same as `confirmed`. */
  get ok() {
    return this.confirmed;
  }

  static fromReply(reply) {
    if (!Array.isArray(reply)) throw unexpected('SECKILL.MCONFIRM', reply);
    const lines = reply.map((entry) => {
      if (entry === null || entry === undefined) return null;
      const outcome = CONFIRM_BY_CODE.get(toInteger(entry));
      if (outcome === undefined) throw unexpected('SECKILL.MCONFIRM', reply);
      return outcome;
    });
    const confirmed = lines.length > 0
      && lines.every((o) => o === ConfirmOutcome.CONFIRMED || o === ConfirmOutcome.ALREADY_FINAL);
    return new OrderConfirmation(confirmed, lines);
  }
}

// SECKILL.MREFUND: one REFUND reply per key, in order.
function parseRefunds(reply) {
  if (!Array.isArray(reply)) throw unexpected('SECKILL.MREFUND', reply);
  return Object.freeze(reply.map((entry) => RefundResult.fromReply(entry)));
}

/**
 * What `deduct`, `confirm` and `refund` return when asked to wait for
 * replicas (`waitReplicas`): the command's usual value, and how many replicas
 * acknowledged the write before WAIT answered.
 */
class Durable {
  constructor(result, replicas, durable) {
    /** The command's usual value (DeductResult, ConfirmOutcome, RefundResult). */
    this.result = result;
    /** What WAIT answered: the replicas that acknowledged the write. */
    this.replicas = replicas;
    /** True when at least the replicas asked for acknowledged it. */
    this.durable = durable;
    Object.freeze(this);
  }

  // result: the command's typed value; reply: WAIT's; wanted: the replicas asked for.
  static fromReplies(result, reply, wanted) {
    let replicas;
    try {
      replicas = toInteger(reply);
    } catch {
      throw unexpected('WAIT', reply);
    }
    return new Durable(result, replicas, replicas >= wanted);
  }
}

/** A pending hold, as `holds` lists it. */
class Hold {
  constructor(requestId, user, qty, deadline, variant = null) {
    this.requestId = requestId;
    this.user = user;
    this.qty = qty;
    /** Unix milliseconds. */
    this.deadline = deadline;
    /** The variant held, on an item with variants; null on an item without. */
    this.variant = variant;
    Object.freeze(this);
  }
}

/** A transfer given out by `take` and not settled yet, as `transfers` lists it. */
class Transfer {
  constructor(transferId, units, destination, variant = null) {
    this.transferId = transferId;
    this.units = units;
    /** The part the units go to, as TAKE ... TO named it (keyPrefix removed), or null. */
    this.destination = destination;
    /** The variant the units came out of, on an item with variants; else null. */
    this.variant = variant;
    Object.freeze(this);
  }
}

/** The status of a request id, as `scan` and `status` report it: the server's word. */
const RequestStatus = Object.freeze({
  /** Bought without a hold. */
  PURCHASED: 'purchased',
  /** A pending hold. */
  HELD: 'held',
  /** A hold that was confirmed. */
  CONFIRMED: 'confirmed',
  REFUNDED: 'refunded',
  /** A hold whose deadline passed unconfirmed (released or not yet). */
  LAPSED: 'lapsed',
  /** The item never saw this request id (`status` only). */
  UNKNOWN: 'unknown',
});

const STATUSES = new Set(Object.values(RequestStatus));

/** Where one purchase stands, as `status` reports it. */
class OrderState {
  constructor(status, user, qty, deadline, variant = null) {
    /** One of `RequestStatus`. */
    this.status = status;
    /** The buyer; null when the status is UNKNOWN. */
    this.user = user;
    /** The units; 0 when UNKNOWN. */
    this.qty = qty;
    /** A hold's deadline, Unix milliseconds; 0 for a purchase made without a hold. */
    this.deadline = deadline;
    /**
     * The variant bought, on an item with variants (null there when UNKNOWN);
     * null on an item without (its reply has no such field).
     */
    this.variant = variant;
    Object.freeze(this);
  }

  static fromReply(reply) {
    if (reply === null || reply === undefined) return null;
    const raw = fieldsOf(reply, 'SECKILL.STATUS');
    const status = toText(raw.get('status'));
    if (!STATUSES.has(status)) throw unexpected('SECKILL.STATUS', reply);
    const user = raw.get('user');
    const variant = raw.get('variant');
    return new OrderState(
      status,
      user === null || user === undefined ? null : toId(user),
      toInteger(raw.get('qty')),
      toInteger(raw.get('deadline')),
      variant === null || variant === undefined ? null : toId(variant),
    );
  }
}

/** A buyer, as `scan` lists it: the units it holds now, as `bought` reports them. */
class BuyerRecord {
  constructor(user, units) {
    /** 'buyer' */
    this.type = 'buyer';
    this.user = user;
    this.units = units;
    Object.freeze(this);
  }
}

/** A purchase made with a request id, as `scan` lists it. */
class RequestRecord {
  constructor(requestId, user, qty, status, deadline) {
    /** 'request' */
    this.type = 'request';
    this.requestId = requestId;
    this.user = user;
    this.qty = qty;
    /** One of `RequestStatus`. */
    this.status = status;
    /** The hold's deadline, Unix milliseconds; 0 for a purchase made without a hold. */
    this.deadline = deadline;
    Object.freeze(this);
  }
}

/** One page of `scan`: the cursor of the next page ('0' when the scan is over) and its records. */
class ScanPage {
  constructor(cursor, records) {
    /** A decimal string (cursors are 64-bit, beyond a number's exact range). */
    this.cursor = cursor;
    this.records = records;
    Object.freeze(this);
  }
}

// INFO's fields, in the server's order, with how to read each. The fields
// marked optional came with a later module version: a reply without them
// (an older module, which moves no units) reads as 0.
const INFO_FIELDS = [
  ['stock', 'stock', 'int'],
  ['unlimited', 'unlimited', 'bool'],
  ['limit', 'limit', 'int'],
  ['initial', 'initial', 'int'],
  ['added', 'added', 'int'],
  ['sold', 'sold', 'int'],
  ['refunded', 'refunded', 'int'],
  ['held', 'held', 'int'],
  ['holds', 'holds', 'int'],
  ['expired', 'expired', 'int'],
  ['buyers', 'buyers', 'int'],
  ['requests', 'requests', 'int'],
  ['start', 'start', 'int'],
  ['end', 'end', 'int'],
  ['stream', 'stream', 'key'],
  ['stream_maxlen', 'streamMaxlen', 'int'],
  ['moved_out', 'movedOut', 'int', 0],
  ['moved_in', 'movedIn', 'int', 0],
  // 0 when the order stream came with a RESTORE and is not confirmed yet,
  // or there is none; a module older than that check trusted every stream.
  ['stream_confirmed', 'streamConfirmed', 'bool', true],
  // How many variants the item sells; 0 for an item without, or from a
  // module older than variants.
  ['variants', 'variants', 'int', 0],
];

/** The counters of an item, as `info` reports them. */
class ItemInfo {
  constructor(fields) {
    for (const [, prop] of INFO_FIELDS) this[prop] = fields[prop];
    Object.freeze(this);
  }

  static fromReply(reply, keyPrefix) {
    const raw = fieldsOf(reply, 'SECKILL.INFO');
    const fields = {};
    for (const [name, prop, kind, absent] of INFO_FIELDS) {
      const v = raw.get(name);
      if (v === undefined && absent !== undefined) {
        fields[prop] = absent;
      } else if (kind === 'key') {
        fields[prop] = v === null || v === undefined ? null : stripPrefix(toId(v), keyPrefix);
      } else if (v === undefined) {
        throw unexpected('SECKILL.INFO', reply);
      } else if (kind === 'bool') {
        fields[prop] = typeof v === 'boolean' ? v : toInteger(v) !== 0;
      } else {
        fields[prop] = toInteger(v);
      }
    }
    return new ItemInfo(fields);
  }
}

function unexpected(command, reply) {
  let shown;
  try { shown = JSON.stringify(reply, (_, v) => (typeof v === 'bigint' ? String(v) : v)); } catch { shown = String(reply); }
  return new TypeError(`unexpected reply to ${command}: ${shown}`);
}

// The fields of INFO's or STATUS's reply by name: a flat [field, value, ...]
// array (RESP2, or ioredis's legacy mapping of RESP3), a plain object or a
// Map (RESP3), or GLIDE's array of { key, value } (its RESP3 map).
function fieldsOf(reply, command) {
  const raw = new Map();
  if (Array.isArray(reply) && reply.length > 0 && isGlideRecordEntry(reply[0])) {
    for (const { key, value } of reply) raw.set(toText(key), value);
  } else if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) raw.set(toText(reply[i]), reply[i + 1]);
  } else if (reply instanceof Map) {
    for (const [k, v] of reply) raw.set(toText(k), v);
  } else if (reply !== null && typeof reply === 'object') {
    for (const k of Object.keys(reply)) raw.set(k, reply[k]);
  } else {
    throw unexpected(command, reply);
  }
  return raw;
}

function isGlideRecordEntry(entry) {
  return entry !== null && typeof entry === 'object' && !Array.isArray(entry) && !Buffer.isBuffer(entry)
    && 'key' in entry && 'value' in entry;
}

// An integer reply as a number, whatever the client's number mapping (number,
// string, BigInt, Buffer). The unlimited sentinel becomes UNLIMITED_STOCK.
// Parsers that give numbers round 9223372036854775807 to a nearby double:
// 2 ** 63 (node-redis, ioredis 6) or a few units of 2048 off (ioredis 5's
// parser accumulates digits). No real count comes near it.
const NEAR_UNLIMITED = 2 ** 63 - 2 ** 32;

function toInteger(v) {
  if (typeof v === 'number') return v >= NEAR_UNLIMITED ? UNLIMITED_STOCK : v;
  let big;
  if (typeof v === 'bigint') big = v;
  else if (typeof v === 'string') big = BigInt(v);
  else if (Buffer.isBuffer(v)) big = BigInt(v.toString('latin1'));
  else throw new TypeError(`expected an integer reply, got ${typeof v}`);
  if (big >= UNLIMITED_STOCK_BIGINT) return UNLIMITED_STOCK;
  return Number(big);
}

function toIntegerOrNull(v) {
  return v === null || v === undefined ? null : toInteger(v);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

// A user or request id (or a key name): a string when it is valid UTF-8,
// else the Buffer as is. (A client that already decoded it gives a string.)
function toId(v) {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) {
    try { return utf8.decode(v); } catch { return Buffer.from(v); }
  }
  return String(v);
}

function toText(v) {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  return String(v);
}

function stripPrefix(name, prefix) {
  if (!prefix || prefix.length === 0) return name;
  if (typeof name === 'string') {
    const p = typeof prefix === 'string' ? prefix : toId(prefix);
    return typeof p === 'string' && name.startsWith(p) ? name.slice(p.length) : name;
  }
  const p = Buffer.isBuffer(prefix) ? prefix : Buffer.from(prefix);
  return name.subarray(0, p.length).equals(p) ? toId(name.subarray(p.length)) : name;
}

function parseHolds(reply) {
  if (reply === null || reply === undefined) return null;
  if (!Array.isArray(reply)) throw unexpected('SECKILL.HOLDS', reply);
  return reply.map((h) => {
    if (!Array.isArray(h) || h.length < 4) throw unexpected('SECKILL.HOLDS', reply);
    // [request_id, user, qty, deadline], and the variant on an item with variants.
    const variant = h.length >= 5 && h[4] !== null && h[4] !== undefined ? toId(h[4]) : null;
    return new Hold(toId(h[0]), toId(h[1]), toInteger(h[2]), toInteger(h[3]), variant);
  });
}

function parseScanRecord(r, reply) {
  if (!Array.isArray(r) || r.length < 1) throw unexpected('SECKILL.SCAN', reply);
  const kind = toText(r[0]);
  if (kind === 'buyer' && r.length >= 3) return new BuyerRecord(toId(r[1]), toInteger(r[2]));
  if (kind === 'request' && r.length >= 6) {
    const status = toText(r[4]);
    if (!STATUSES.has(status)) throw unexpected('SECKILL.SCAN', reply);
    return new RequestRecord(toId(r[1]), toId(r[2]), toInteger(r[3]), status, toInteger(r[5]));
  }
  throw unexpected('SECKILL.SCAN', reply);
}

// [next_cursor, [record, ...]]; a missing item answers ['0', []].
function parseScan(reply) {
  if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[1])) throw unexpected('SECKILL.SCAN', reply);
  return new ScanPage(toText(reply[0]), reply[1].map((r) => parseScanRecord(r, reply)));
}

function parseTransfers(reply, keyPrefix) {
  if (reply === null || reply === undefined) return null;
  if (!Array.isArray(reply)) throw unexpected('SECKILL.TRANSFERS', reply);
  return reply.map((t) => {
    if (!Array.isArray(t) || t.length < 3) throw unexpected('SECKILL.TRANSFERS', reply);
    const destination = t[2] === null || t[2] === undefined ? null : stripPrefix(toId(t[2]), keyPrefix);
    const variant = t.length > 3 && t[3] !== null && t[3] !== undefined ? toId(t[3]) : null;
    return new Transfer(toId(t[0]), toInteger(t[1]), destination, variant);
  });
}

// VARIANTS' reply as a Map of variant name to stock, in the order INIT named
// them: from a flat [name, stock, ...] array (RESP2), a Map, GLIDE's array of
// { key, value }, or a plain object (a RESP3 map some clients make one of;
// integer-like names then come in the object's own order).
function parseVariants(reply) {
  if (reply === null || reply === undefined) return null;
  const variants = new Map();
  if (Array.isArray(reply) && reply.length > 0 && isGlideRecordEntry(reply[0])) {
    for (const { key, value } of reply) variants.set(toId(key), toInteger(value));
  } else if (Array.isArray(reply)) {
    if (reply.length % 2 !== 0) throw unexpected('SECKILL.VARIANTS', reply);
    for (let i = 0; i < reply.length; i += 2) variants.set(toId(reply[i]), toInteger(reply[i + 1]));
  } else if (reply instanceof Map) {
    for (const [name, stock] of reply) variants.set(toId(name), toInteger(stock));
  } else if (typeof reply === 'object' && !Buffer.isBuffer(reply)) {
    for (const name of Object.keys(reply)) variants.set(name, toInteger(reply[name]));
  } else {
    throw unexpected('SECKILL.VARIANTS', reply);
  }
  return variants;
}

function parseSettle(reply) {
  const outcome = SETTLE_BY_CODE.get(toInteger(reply));
  if (outcome === undefined) throw unexpected('SECKILL.SETTLE', reply);
  return outcome;
}

function parseConfirm(reply) {
  const outcome = CONFIRM_BY_CODE.get(toInteger(reply));
  if (outcome === undefined) throw unexpected('SECKILL.CONFIRM', reply);
  return outcome;
}

module.exports = {
  parseVariants,
  UNLIMITED,
  UNLIMITED_STOCK,
  UNLIMITED_STOCK_BIGINT,
  Outcome,
  ConfirmOutcome,
  RefundOutcome,
  SettleOutcome,
  DeductResult,
  RefundResult,
  OrderResult,
  OrderConfirmation,
  Durable,
  Hold,
  Transfer,
  ItemInfo,
  RequestStatus,
  OrderState,
  BuyerRecord,
  RequestRecord,
  ScanPage,
  parseScan,
  toInteger,
  toIntegerOrNull,
  parseHolds,
  parseTransfers,
  parseConfirm,
  parseSettle,
  parseRefunds,
  unexpected,
};
