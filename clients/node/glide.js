'use strict';
// The Valkey GLIDE installer (@valkey/valkey-glide 2): installSeckill(client)
// on a GlideClient or GlideClusterClient gives
//   client.seckill.deduct(...)                typed values, SeckillError rejections, waits
//   client.seckill.exec(batch, raiseOnError)  a batch's results, the SECKILL ones typed
// and installSeckill(batch) on a Batch or ClusterBatch gives
//   batch.seckill.deduct(...)                 queued; returns the batch, as GLIDE's own do
//
// GLIDE has no command table to extend and no hook on replies: each call is a
// customCommand, and its reply is decoded here (with Decoder.Bytes, so that
// ids that are not UTF-8 stay Buffers, as with ioredis). GLIDE turns every
// integer reply into a JavaScript number (napi's int64, with no BigInt or
// string option for integers: its Decoder is for strings), so an unlimited
// item's 9223372036854775807 arrives as 2 ** 63, which the decoding reports
// as UNLIMITED_STOCK, as with every client (UNLIMITED_STOCK_BIGINT is exact).
//
// Routing: GLIDE's cluster client routes a command it does not know by its
// first argument. That is the item key of every SECKILL command but the
// commands of an order (MDEDUCT, MCONFIRM, MREFUND), whose first argument
// is a count: those are given a route to the master of their first key.
// A wait (waitReplicas) sends the write and WAIT in one non-atomic batch,
// which GLIDE writes to one connection; in a cluster the batch is routed to
// the item key's master (GLIDE would send a lone WAIT to every master).

const { COMMANDS } = require('./lib/commands');
const { SeckillError } = require('./lib/errors');
const { Durable } = require('./lib/values');
const { scanIterator } = require('./lib/scan');

const INSTALLED = Symbol.for('seckill-client.glide.installed');

// GLIDE's Decoder.Bytes (a numeric enum of its public API): replies as Buffers.
const DECODER_BYTES = 0;

function classNames(obj) {
  const names = new Set();
  for (let proto = Object.getPrototypeOf(obj); proto; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor) names.add(proto.constructor.name);
  }
  return names;
}

function isGlideClient(obj) {
  if (!obj || typeof obj !== 'object' || typeof obj.customCommand !== 'function' || typeof obj.exec !== 'function') {
    return false;
  }
  const names = classNames(obj);
  return names.has('GlideClient') || names.has('GlideClusterClient');
}

function isGlideBatch(obj) {
  if (!obj || typeof obj !== 'object' || typeof obj.customCommand !== 'function' || typeof obj.isAtomic !== 'boolean') {
    return false;
  }
  const names = classNames(obj);
  return names.has('Batch') || names.has('ClusterBatch');
}

/** True for a GLIDE client or batch (found by their class names: this package does not require GLIDE). */
function isGlide(obj) {
  return isGlideClient(obj) || isGlideBatch(obj);
}

const isCluster = (obj) => {
  const names = classNames(obj);
  return names.has('GlideClusterClient') || names.has('ClusterBatch');
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

// A key as GLIDE's routes take it (a string), or null for bytes that are not UTF-8.
function textKey(key) {
  if (typeof key === 'string') return key;
  try { return utf8.decode(key); } catch { return null; }
}

// The route to the master of a built command's first key (the item key, or
// an order's first line's), or null when the key is not text.
function primaryRoute(built) {
  const key = textKey(built.args[built.keys[0]]);
  return key === null ? null : { type: 'primarySlotKey', key };
}

function commandOf(spec, built) {
  return [spec.name, ...built.args];
}

function waitRefused(method) {
  return new TypeError(`${method}: a wait (waitReplicas) cannot be queued in a batch `
    + '(WAIT would answer at once in a transaction, and other writes may come between): call it on the client');
}

// The client's GLIDE module (for Batch and ClusterBatch, which a wait needs).
function glideModule(options) {
  if (options.glide) return options.glide;
  try {
    return require('@valkey/valkey-glide');
  } catch (err) {
    throw new Error("installSeckill could not require('@valkey/valkey-glide'): pass { glide } with your GLIDE module",
      { cause: err });
  }
}

// The SECKILL commands queued in each batch: [position, spec, built].
const queuedIn = new WeakMap();

function queuedOf(batch) {
  const length = Array.isArray(batch.commands) ? batch.commands.length : 0;
  return (queuedIn.get(batch) || []).filter(([position]) => position < length);
}

class GlideSeckill {
  constructor(client, glide) {
    this.client = client;
    this.cluster = isCluster(client);
    this.glide = glide;
  }

  // Every call's options: replies as Buffers, and an order's route.
  callOptions(built) {
    const options = { decoder: DECODER_BYTES };
    if (this.cluster && built.keys[0] !== 0) {
      const route = primaryRoute(built);
      if (route !== null) options.route = route; // else GLIDE follows the server's MOVED
    }
    return options;
  }

  async call(spec, callArgs) {
    const built = spec.build(...callArgs);
    try {
      if (built.wait) return await this.sendWithWait(spec, built);
      return spec.parse(await this.client.customCommand(commandOf(spec, built), this.callOptions(built)));
    } catch (err) {
      throw SeckillError.from(err);
    }
  }

  // The command and WAIT in one non-atomic batch on one connection. The
  // command's error wins: WAIT's answer is then discarded.
  async sendWithWait(spec, built) {
    const { wait } = built;
    const batch = this.cluster ? new this.glide.ClusterBatch(false) : new this.glide.Batch(false);
    batch.customCommand(commandOf(spec, built));
    batch.customCommand(['WAIT', String(wait.replicas), String(wait.timeoutMs)]);
    const options = { decoder: DECODER_BYTES };
    if (this.cluster) {
      options.route = primaryRoute(built);
      if (options.route === null) throw new TypeError(`${spec.method}: a wait on a GLIDE cluster needs the item key as text (UTF-8)`);
    }
    const [result, replicas] = await this.client.exec(batch, false, options);
    if (result instanceof Error) throw result;
    if (replicas instanceof Error) throw replicas;
    return Durable.fromReplies(spec.parse(result), replicas, wait.replicas);
  }

  // A batch with SECKILL commands queued by batch.seckill: GLIDE's results,
  // those of the SECKILL commands typed (null when a transaction's WATCHed
  // keys changed). With raiseOnError, the first error is thrown instead.
  async exec(batch, raiseOnError = true, options = {}) {
    const queued = queuedOf(batch);
    const execOptions = { ...options };
    if (this.cluster && batch.isAtomic && execOptions.route === undefined && queued.length > 0) {
      // A transaction goes where its first key lives, and an order's first
      // argument is a count: it is sent to the master of the first SECKILL
      // command's key (every key of a transaction shares one slot).
      const route = primaryRoute(queued[0][2]);
      if (route !== null) execOptions.route = route;
    }
    let results;
    try {
      results = await this.client.exec(batch, false, execOptions);
    } catch (err) {
      throw SeckillError.from(err);
    }
    if (results === null) return null;
    const typed = results.slice();
    for (const [position, spec] of queued) {
      const result = typed[position];
      typed[position] = result instanceof Error ? SeckillError.from(result) : spec.parse(result);
    }
    if (raiseOnError) {
      const failed = typed.find((result) => result instanceof Error);
      if (failed) throw failed;
    }
    return typed;
  }
}

function clientNamespace(client, options) {
  const sk = new GlideSeckill(client, glideModule(options));
  const ns = {};
  for (const spec of COMMANDS) ns[spec.method] = (...callArgs) => sk.call(spec, callArgs);
  ns.scanIterator = (key, scanOptions) => scanIterator((...args) => ns.scan(...args), key, scanOptions);
  ns.exec = (batch, raiseOnError, execOptions) => sk.exec(batch, raiseOnError, execOptions);
  return Object.freeze(ns);
}

function batchNamespace(batch) {
  if (!Array.isArray(batch.commands)) {
    throw new TypeError('installSeckill: this GLIDE batch keeps no list of its commands (GLIDE 2 does)');
  }
  queuedIn.set(batch, []);
  const ns = {};
  for (const spec of COMMANDS) {
    ns[spec.method] = (...callArgs) => {
      const built = spec.build(...callArgs);
      if (built.wait) throw waitRefused(spec.method);
      const position = batch.commands.length;
      batch.customCommand(commandOf(spec, built));
      queuedIn.get(batch).push([position, spec, built]);
      return batch;
    };
  }
  return Object.freeze(ns);
}

/**
 * Gives a GLIDE client (GlideClient, GlideClusterClient) or batch (Batch,
 * ClusterBatch) the SECKILL.* commands as `target.seckill`. Returns the same object.
 * @param target a GLIDE 2 client or batch
 * @param {{glide?: object}} [options] glide: the @valkey/valkey-glide module,
 *   when this package cannot require it itself (a wait builds a batch)
 */
function installSeckill(target, options = {}) {
  if (!isGlide(target)) {
    throw new TypeError('installSeckill needs a Valkey GLIDE (2 or later) GlideClient, GlideClusterClient, Batch or ClusterBatch');
  }
  if (target[INSTALLED]) return target;
  const ns = isGlideClient(target) ? clientNamespace(target, options) : batchNamespace(target);
  Object.defineProperty(target, 'seckill', { value: ns, configurable: true, writable: true });
  Object.defineProperty(target, INSTALLED, { value: true });
  return target;
}

module.exports = { installSeckill, isGlide };
