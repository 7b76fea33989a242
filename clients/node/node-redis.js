'use strict';
// The node-redis module: createClient({ modules: { seckill } }), then
// client.seckill.deduct(...). The same object works with createCluster (each
// command is routed by its item key), in client.multi() and in pipelines.
// node-redis 5 and 6 declare a module as an object of commands, each with
// parseCommand (arguments, with keys pushed as keys) and transformReply.
// Such a call sends exactly one command, so a wait (WAIT right after the
// write, on its connection) is refused here: seckillOf(client) sends it.

const { COMMANDS } = require('./lib/commands');

// The prefix node-redis put before the key (node-redis 6's keyPrefix), so
// that INFO can report the stream key, and TRANSFERS the destinations, as the
// caller named them.
function keyPrefixOf(prefixed, key) {
  if (prefixed === undefined) return undefined;
  const a = typeof prefixed === 'string' ? Buffer.from(prefixed) : prefixed;
  const b = typeof key === 'string' ? Buffer.from(key) : key;
  if (a.length <= b.length) return undefined;
  const prefix = a.subarray(0, a.length - b.length);
  return typeof prefixed === 'string' ? prefix.toString() : prefix;
}

function toNodeRedisCommand(spec) {
  return {
    IS_READ_ONLY: spec.readonly,
    parseCommand(parser, ...callArgs) {
      const { args, keys, names = [], wait } = spec.build(...callArgs);
      if (wait) throw waitRefused(spec.method);
      parser.push(spec.name);
      for (let i = 0; i < args.length; i++) {
        // A key name that is not a key of the command (TAKE's TO) is pushed
        // as a key too, for node-redis 6's keyPrefix: routing uses the first
        // key only (the item key), and node-redis checks no slots itself.
        if (keys.includes(i) || names.includes(i)) parser.pushKey(args[i]);
        else parser.push(args[i]);
      }
      if (spec.unprefixes) {
        const prefix = keyPrefixOf(parser.firstKey ?? (parser.keys && parser.keys[0]), args[0]);
        if (prefix !== undefined) parser.preserve = prefix;
      }
    },
    transformReply(reply, preserve) {
      return spec.parse(reply, preserve);
    },
  };
}

function waitRefused(method) {
  return new TypeError(`${method}: a node-redis module call sends one command, so it cannot send WAIT after it: `
    + `call seckillOf(client).${method}(...) for waitReplicas (on the client or cluster, not in multi() or a pipeline)`);
}

const seckill = {};
for (const spec of COMMANDS) {
  const command = toNodeRedisCommand(spec);
  seckill[spec.method] = command;
  seckill[spec.method.toUpperCase()] = command;
}
Object.freeze(seckill);

module.exports = { seckill };
