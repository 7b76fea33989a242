'use strict';
// One sale item split into parts (each a seckill item of its own, usually on
// different cluster shards), with each user always sent to the same part: the
// part is chosen by FNV-1a over the user id's bytes, so the per-user limit of
// every part stays exact. The same helper, with the same hash, is in the
// Python and Rust clients. Stock moves between parts with take / add with a
// transferId / settle (the seckill-rebalancer binary does that).

const { bytes, integer, isOptions } = require('./commands');
const { UNLIMITED, UNLIMITED_STOCK } = require('./values');
const { seckillOf } = require('./wait');

const FNV_OFFSET_BASIS = 2166136261;
const FNV_PRIME = 16777619;

/**
 * FNV-1a, 32 bits, over bytes (a string is hashed as its UTF-8 bytes).
 * @param {string|Buffer|Uint8Array} data
 * @returns {number} an unsigned 32-bit integer
 */
function fnv1a32(data) {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let h = FNV_OFFSET_BASIS;
  for (let i = 0; i < buf.length; i++) {
    h ^= buf[i];
    h = Math.imul(h, FNV_PRIME) >>> 0; // multiplication modulo 2^32
  }
  return h >>> 0;
}

// A user id as the bytes sent to the server (numbers and BigInts as decimal).
function idBytes(user) {
  const v = bytes(user, 'user');
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
}

// The client's seckill commands (with waits on node-redis too): those of a
// node-redis client or cluster created with { modules: { seckill } }, or of
// an ioredis client or cluster after installSeckill().
function commandsOf(client) {
  try {
    return seckillOf(client);
  } catch {
    throw new TypeError('SplitItem needs a client with the seckill commands: a node-redis client or cluster '
      + 'created with { modules: { seckill } }, or an ioredis Redis or Cluster or a GLIDE client passed to installSeckill()');
  }
}

// The total stock as a BigInt (non-negative). An unlimited item needs no
// split (and the other clients refuse it too).
function totalOf(totalStock) {
  if (totalStock === UNLIMITED || totalStock === Infinity
    || (typeof totalStock === 'string' && totalStock.toUpperCase() === UNLIMITED)) {
    throw new TypeError('SplitItem.init shares out a number of units: an UNLIMITED item needs no split');
  }
  const s = integer(totalStock, 'totalStock');
  let total;
  try {
    total = BigInt(Buffer.isBuffer(s) ? s.toString('latin1') : s);
  } catch {
    throw new TypeError(`totalStock must be an integer, got ${JSON.stringify(String(s))}`);
  }
  if (total < 0n) throw new RangeError(`totalStock must not be negative, got ${total}`);
  return total;
}

class SplitItem {
  #sk;

  /**
   * @param client a node-redis client/cluster with the seckill module, or an
   *   ioredis Redis/Cluster after installSeckill()
   * @param parts the parts' key names, in order (pick names on different
   *   shards; SplitItem.named(item, n) gives the default names)
   */
  constructor(client, parts) {
    const list = Array.isArray(parts) ? parts : null;
    if (!list || list.length === 0) {
      throw new TypeError('SplitItem needs a non-empty array of part key names');
    }
    for (const p of list) bytes(p, 'part key');
    /** The parts' key names, in order. */
    this.parts = Object.freeze(list.slice());
    this.#sk = commandsOf(client);
    /** The client given. */
    this.client = client;
  }

  /**
   * The default part names of an item: `${item}:part:0` ... `${item}:part:${n - 1}`.
   * @param {string|Buffer} item
   * @param {number} n
   */
  static named(item, n) {
    if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`the number of parts must be a positive integer, got ${n}`);
    const base = bytes(item, 'item');
    return Array.from({ length: n }, (_, i) => (typeof base === 'string'
      ? `${base}:part:${i}`
      : Buffer.concat([base, Buffer.from(`:part:${i}`)])));
  }

  /**
   * The index of the part that serves `user`: FNV-1a 32 over the user id's
   * bytes, modulo the number of parts.
   */
  partFor(user) {
    return fnv1a32(idBytes(user)) % this.parts.length;
  }

  #partOf(user) {
    return this.parts[this.partFor(user)];
  }

  /**
   * Creates every part: part i gets floor(total / n), plus one for the first
   * total % n parts. The options are
   * those of init (limit, start, end, ex, ..., replace), given to every part.
   * @returns {Promise<boolean[]>} per part, true if created (or replaced)
   */
  async init(totalStock, options) {
    if (options !== undefined && options !== null && !isOptions(options)) {
      throw new TypeError('the options of SplitItem.init must be an object');
    }
    const shares = isOptions(totalStock) || totalStock instanceof Map
      ? splitVariants(totalStock, this.parts.length)
      : shareOut(totalOf(totalStock), this.parts.length);
    return Promise.all(this.parts.map((part, i) => this.#sk.init(part, shares[i], options)));
  }

  /**
   * SECKILL.DEDUCT on the user's part (arguments as the client's deduct; with
   * waitReplicas, a Durable).
   */
  deduct(user, qty, options) {
    return this.#sk.deduct(this.#partOf(user), user, qty, options);
  }

  /** SECKILL.CONFIRM on the user's part (options: { waitReplicas, waitTimeoutMs }, then a Durable). */
  confirm(user, requestId, options) {
    return this.#sk.confirm(this.#partOf(user), requestId, options);
  }

  /**
   * SECKILL.REFUND on the user's part: a RefundResult (options:
   * { waitReplicas, waitTimeoutMs }, then a Durable of it).
   */
  refund(user, requestId, options) {
    return this.#sk.refund(this.#partOf(user), requestId, options);
  }

  /** SECKILL.BOUGHT on the user's part: the units the user holds now, or null (no item). */
  bought(user) {
    return this.#sk.bought(this.#partOf(user), user);
  }

  /**
   * The remaining stock over all parts (a missing part counts 0; null when
   * no part exists; UNLIMITED_STOCK when a part is unlimited).
   * @returns {Promise<number|null>}
   */
  async stock() {
    const stocks = await Promise.all(this.parts.map((part) => this.#sk.get(part)));
    let sum = null;
    for (const s of stocks) {
      if (s === null) continue;
      if (s === UNLIMITED_STOCK) return UNLIMITED_STOCK;
      sum = (sum ?? 0) + s;
    }
    return sum;
  }

  /** SECKILL.INFO of every part, in order (null for a missing part). */
  info() {
    return Promise.all(this.parts.map((part) => this.#sk.info(part)));
  }

  /**
   * Each size of a split drop with its stock over all parts (missing parts
   * count 0; UNLIMITED_STOCK for a size unlimited in a part): a Map in the
   * order the parts name the sizes, empty for an item without sizes, null if
   * no part exists.
   * @returns {Promise<Map<string|Buffer, number>|null>}
   */
  async variants() {
    const listed = await Promise.all(this.parts.map((part) => this.#sk.variants(part)));
    let total = null;
    for (const sizes of listed) {
      if (sizes === null) continue;
      total ??= new Map();
      for (const [name, stock] of sizes) {
        const sum = total.get(name);
        total.set(name, stock === UNLIMITED_STOCK || sum === UNLIMITED_STOCK ? UNLIMITED_STOCK : (sum ?? 0) + stock);
      }
    }
    return total;
  }
}

// total shared over n parts: floor(total / n) each, one more for the first
// total % n, as decimal strings.
function shareOut(total, n) {
  const count = BigInt(n);
  return Array.from({ length: n }, (_, i) => (total / count + (BigInt(i) < total % count ? 1n : 0n)).toString());
}

// A drop's sizes (an object or a Map of name to stock) shared over n parts
// size by size; an UNLIMITED size is unlimited in every part. One Map per
// part, in the sizes' order.
function splitVariants(sizes, n) {
  const entries = sizes instanceof Map ? [...sizes.entries()] : Object.entries(sizes);
  const parts = Array.from({ length: n }, () => new Map());
  for (const [name, stock] of entries) {
    const unlimited = stock === UNLIMITED || (typeof stock === 'string' && stock.toUpperCase() === UNLIMITED);
    const shares = unlimited ? Array(n).fill(UNLIMITED) : shareOut(totalOf(stock), n);
    parts.forEach((part, i) => part.set(name, shares[i]));
  }
  return parts;
}

module.exports = { SplitItem, fnv1a32, splitVariants };
