'use strict';
// The ioredis installer: installSeckill(redisOrCluster) gives the client
//   redis.seckill.deduct(...)        (and the flat methods redis.seckillDeduct(...))
// returning the same typed values as the node-redis module, on Redis and
// Cluster, in pipelines and transactions, with enableAutoPipelining and
// keyPrefix.
//
// How ioredis finds a command's keys: a Command asks @ioredis/commands, a
// fixed table of the commands Redis itself has, for the key positions of its
// name (Command#_iterateKeys); Cluster routes by the slot of the first one
// (Command#getSlot -> getKeys), a Pipeline in a cluster by its commands'
// getKeys(), and keyPrefix is applied to those positions only. SECKILL.* is
// not in that table and ioredis never asks the server (COMMAND), so without
// help a Cluster sends each call to a random master (MOVED) and keyPrefix is
// not applied. The table cannot be extended: it is a module-private JSON
// whose flag index is built at load time (registering a name there makes
// hasFlag() throw), and defineCommand() is for Lua scripts (EVALSHA).
//
// What this does instead, with ioredis's public API only:
// - each call is a Command subclass (ioredis exports Command) that names its
//   keys itself (getKeys(): the item key, and the stream key of init/stream;
//   every key of an order, its first line's first, so that Cluster routes
//   it by that key and not by the count before it), has keyPrefix applied
//   to exactly those arguments, is marked readOnly for
//   the reads (scaleReads), and turns its reply into the typed value
//   (transformReply, which ioredis also calls for each reply of an EXEC);
// - it is sent with sendCommand(), on the client or on a pipeline;
// - each method is registered with addBuiltinCommand(), so that every
//   pipeline of this client gets it (Pipeline copies the client's added
//   built-ins) and enableAutoPipelining works: the built-in's auto-pipelining
//   path groups the call by the slot of keyPrefix + its first argument (the
//   item key) and calls the method on that node's pipeline, which sends the
//   keyed Command.
// A call with a wait (deduct, confirm, refund with waitReplicas) goes in a
// pipeline of its own with WAIT after it: a pipeline is written to one
// connection, in a Cluster that of the item key's master (WAIT has no key),
// and WAIT answers for the writes of its connection. In a pipeline or
// transaction of the caller a wait is refused: MULTI would make WAIT answer
// at once, and a pipeline may hold other writes between the two.

const { COMMANDS } = require('./lib/commands');
const { SeckillError } = require('./lib/errors');
const { Durable } = require('./lib/values');
const { scanIterator } = require('./lib/scan');

const INSTALLED = Symbol.for('seckill-client.ioredis.installed');

const flatName = (method) => `seckill${method[0].toUpperCase()}${method.slice(1)}`;

const utf8 = new TextDecoder('utf-8', { fatal: true });
function isUtf8(bytes) {
  try { utf8.decode(bytes); return true; } catch { return false; }
}

// The same concatenation ioredis applies to its own commands' keys.
function prefixed(prefix, key) {
  if (typeof prefix === 'string' && typeof key === 'string') return prefix + key;
  const p = typeof prefix === 'string' ? Buffer.from(prefix) : prefix;
  const k = typeof key === 'string' ? Buffer.from(key) : key;
  return Buffer.concat([p, k]);
}

function isQueued(reply) {
  return reply === 'QUEUED' || (Buffer.isBuffer(reply) && reply.length === 6 && reply.toString() === 'QUEUED');
}

const classes = new WeakMap();
function seckillCommandClass(Command) {
  let SeckillCommand = classes.get(Command);
  if (SeckillCommand) return SeckillCommand;
  SeckillCommand = class SeckillCommand extends Command {
    // keyIndexes: the command's keys (routing, same-slot checks); nameIndexes:
    // other key names that get keyPrefix too (TAKE's TO destination, a part
    // that may live in another slot).
    constructor(spec, args, keyIndexes, keyPrefix, nameIndexes = []) {
      const hasPrefix = keyPrefix !== undefined && keyPrefix !== null && keyPrefix.length > 0;
      if (hasPrefix) {
        args = args.slice();
        for (const i of keyIndexes) args[i] = prefixed(keyPrefix, args[i]);
        for (const i of nameIndexes) args[i] = prefixed(keyPrefix, args[i]);
      }
      // replyEncoding null: strings arrive as Buffers, decoded by the parser
      // (ids that are not UTF-8 stay Buffers). No keyPrefix option: applied above.
      super(spec.name, args, { replyEncoding: null, readOnly: spec.readonly });
      this.seckillSpec = spec;
      this.seckillKeyIndexes = keyIndexes;
      this.seckillKeyPrefix = hasPrefix ? keyPrefix : undefined;
    }

    getKeys() {
      return this.seckillKeyIndexes.map((i) => this.args[i]);
    }

    transformReply(reply) {
      // A command queued in MULTI first gets "QUEUED"; its reply comes with EXEC.
      if (isQueued(reply)) return 'QUEUED';
      return this.seckillSpec.parse(reply, this.seckillKeyPrefix);
    }
  };
  classes.set(Command, SeckillCommand);
  return SeckillCommand;
}

function toTyped(err) {
  throw SeckillError.from(err);
}

function usesAutoPipelining(client, flat, key) {
  const o = client.options || {};
  if (!o.enableAutoPipelining || client.isPipeline) return false;
  if ((o.autoPipeliningIgnoredCommands || []).includes(flat)) return false;
  // ioredis picks the auto-pipeline by the slot of `${keyPrefix}${key}`, the
  // call's first argument as text: only keys whose text is their bytes go
  // that way (a Buffer that is not UTF-8, or a Uint8Array, would be grouped
  // by another slot). The order commands, whose first argument is an array
  // of lines or keys, are sent directly, as a Command keyed by their first key.
  if (Buffer.isBuffer(key)) {
    if (!isUtf8(key)) return false;
  } else if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'bigint') {
    return false;
  }
  if (o.keyPrefix && typeof o.keyPrefix !== 'string' && !isUtf8(o.keyPrefix)) return false;
  return true;
}

function waitRefused(method) {
  return new TypeError(`${method}: a wait (waitReplicas) cannot be queued in a pipeline or transaction `
    + '(WAIT would answer at once inside MULTI, and other writes may come between): call it on the client');
}

// The command and WAIT in one pipeline of their own (one connection; in a
// Cluster, the item key's master). The command's error wins: WAIT's answer
// is then discarded.
async function sendWithWait(client, spec, built, SeckillCommand) {
  const { wait } = built;
  const pipeline = client.pipeline();
  pipeline.sendCommand(new SeckillCommand(spec, built.args, built.keys, client.options.keyPrefix, built.names));
  pipeline.call('WAIT', String(wait.replicas), String(wait.timeoutMs));
  const [[err, result], [waitErr, replicas]] = await pipeline.exec();
  if (err) throw err;
  if (waitErr) throw waitErr;
  return Durable.fromReplies(result, replicas, wait.replicas);
}

function makeMethod(spec, flat, SeckillCommand, builtin) {
  return function seckillCommand(...callArgs) {
    if (this.isPipeline) {
      const { args, keys, names, wait } = spec.build(...callArgs);
      if (wait) throw waitRefused(spec.method);
      this.sendCommand(new SeckillCommand(spec, args, keys, this.options.keyPrefix, names));
      return this;
    }
    let built;
    try {
      built = spec.build(...callArgs);
    } catch (err) {
      return Promise.reject(err);
    }
    if (built.wait) return sendWithWait(this, spec, built, SeckillCommand).catch(toTyped);
    if (usesAutoPipelining(this, flat, callArgs[0])) {
      // ioredis queues the call on the pipeline of the item key's node and
      // calls this method there (the branch above).
      return builtin.apply(this, callArgs).catch(toTyped);
    }
    return this.sendCommand(new SeckillCommand(spec, built.args, built.keys, this.options.keyPrefix, built.names)).catch(toTyped);
  };
}

// client.seckill / pipeline.seckill: the same methods under their short names.
const namespaceProto = {};
for (const spec of COMMANDS) {
  const flat = flatName(spec.method);
  namespaceProto[spec.method] = function (...args) {
    return this.target[flat](...args);
  };
}
// client.seckill.scanIterator(key, { count }): every record of the item, a
// SECKILL.SCAN at a time (not on a pipeline: each cursor comes from the last reply).
namespaceProto.scanIterator = function (key, options) {
  if (this.target.isPipeline) {
    throw new TypeError('scanIterator needs a client, not a pipeline or transaction: each page\'s cursor comes from the last');
  }
  return scanIterator((...args) => this.target.seckillScan(...args), key, options);
};
function attachNamespace(target) {
  if (target && typeof target === 'object' && !Object.prototype.hasOwnProperty.call(target, 'seckill')) {
    const ns = Object.create(namespaceProto, { target: { value: target } });
    Object.defineProperty(target, 'seckill', { value: ns, configurable: true, writable: true });
  }
  return target;
}

/**
 * Registers the SECKILL.* commands on an ioredis Redis or Cluster instance.
 * @param {object} client an ioredis Redis or Cluster
 * @param {{Command?: Function}} [options] Command: ioredis's Command class,
 *   when this package cannot require('ioredis') itself
 * @returns the same client
 */
function installSeckill(client, options = {}) {
  if (!client || typeof client.addBuiltinCommand !== 'function' || typeof client.sendCommand !== 'function') {
    throw new TypeError('installSeckill needs an ioredis (5 or later) Redis or Cluster instance, '
      + 'or a Valkey GLIDE client or batch (from seckill-client or seckill-client/glide)');
  }
  if (client[INSTALLED]) return client;
  let Command = options.Command;
  if (!Command) {
    try {
      Command = require('ioredis').Command;
    } catch (err) {
      throw new Error("installSeckill could not require('ioredis'): pass { Command } from your ioredis", { cause: err });
    }
  }
  const SeckillCommand = seckillCommandClass(Command);
  for (const spec of COMMANDS) {
    const flat = flatName(spec.method);
    // Registers the name, so that this client's pipelines copy the method.
    client.addBuiltinCommand(flat);
    const builtin = client[flat];
    client[flat] = makeMethod(spec, flat, SeckillCommand, builtin);
    delete client[`${flat}Buffer`];
  }
  attachNamespace(client);
  const { pipeline, multi } = client;
  Object.defineProperty(client, 'pipeline', {
    configurable: true,
    writable: true,
    value: function (...args) { return attachNamespace(pipeline.apply(this, args)); },
  });
  Object.defineProperty(client, 'multi', {
    configurable: true,
    writable: true,
    value: function (...args) {
      const result = multi.apply(this, args);
      return result && result.isPipeline ? attachNamespace(result) : result;
    },
  });
  Object.defineProperty(client, INSTALLED, { value: true });
  return client;
}

module.exports = { installSeckill };
