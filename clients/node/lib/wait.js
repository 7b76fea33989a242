'use strict';
// A wait after a write: WAIT numreplicas timeout sent right after the
// command, on the same connection, in one round trip. WAIT cannot block
// inside MULTI, so the two go as a plain pipeline (node-redis:
// multi().execAsPipeline(), which sends them to the item key's master in a
// cluster; ioredis: pipeline(), see ioredis.js).
//
// seckillOf(client) gives the commands where deduct, confirm and refund take
// { waitReplicas, waitTimeoutMs }: an ioredis or GLIDE client's own
// client.seckill (its methods send the wait themselves; GLIDE: glide.js),
// or, for node-redis, whose module
// calls each send one command, the module's commands with those three
// sending the wait.

const { COMMANDS, withoutWait } = require('./commands');
const { Durable } = require('./values');
const { scanIterator } = require('./scan');

const IOREDIS_INSTALLED = Symbol.for('seckill-client.ioredis.installed');

// node-redis: the call and WAIT in one pipeline on the connection of the
// item's master. Errors are node-redis's own, as its module calls give them
// (the command's error first: WAIT's answer is then discarded).
async function sendWithWait(client, method, callArgs, wait) {
  const replies = await client.multi()
    .seckill[method](...callArgs)
    .WAIT(wait.replicas, wait.timeoutMs)
    .execAsPipeline();
  return Durable.fromReplies(replies[0], replies[1], wait.replicas);
}

function nodeRedisCommands(client) {
  const sk = client.seckill;
  const commands = {};
  for (const spec of COMMANDS) {
    const { method } = spec;
    commands[method] = spec.waitsAt
      ? function (...callArgs) {
        let wait;
        try {
          ({ wait } = spec.build(...callArgs));
        } catch (err) {
          return Promise.reject(err);
        }
        if (!wait) return sk[method](...callArgs);
        return sendWithWait(client, method, withoutWait(callArgs, spec.waitsAt(callArgs)), wait);
      }
      : (...callArgs) => sk[method](...callArgs);
  }
  commands.scanIterator = (key, options) => scanIterator((...args) => sk.scan(...args), key, options);
  return Object.freeze(commands);
}

const wrapped = new WeakMap();

/**
 * The client's seckill commands, where deduct, confirm and refund also take
 * a wait ({ waitReplicas, waitTimeoutMs }) and then resolve to a Durable,
 * and scanIterator(key, { count }) walks an item's records.
 * @param client a node-redis client, cluster or pool created with
 *   { modules: { seckill } }, or an ioredis Redis or Cluster or a GLIDE
 *   client after installSeckill() (its client.seckill is returned)
 */
function seckillOf(client) {
  const sk = client && client.seckill;
  if (!sk || typeof sk.deduct !== 'function' || typeof sk.get !== 'function') {
    throw new TypeError('seckillOf needs a client with the seckill commands: a node-redis client or cluster '
      + 'created with { modules: { seckill } }, or an ioredis Redis or Cluster or a GLIDE client passed to installSeckill()');
  }
  // ioredis and GLIDE (their methods send waits), and anything that is not a
  // node-redis client: its multi() or pipelines (where a wait is refused), other objects.
  if (client[IOREDIS_INSTALLED] || client.isPipeline
    || typeof client.multi !== 'function' || typeof client.execAsPipeline === 'function') {
    return sk;
  }
  let commands = wrapped.get(client);
  if (!commands) {
    commands = nodeRedisCommands(client);
    wrapped.set(client, commands);
  }
  return commands;
}

module.exports = { seckillOf };
