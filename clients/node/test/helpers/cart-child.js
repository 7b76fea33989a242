'use strict';
// One CartSaga call in a process of its own, for the crash tests: it counts
// the server commands the saga sends and, right after the k-th one has been
// answered, kills itself with SIGKILL (no clean-up, no later step, nothing
// flushed), as a crash or an OOM kill would stop it. Run to the end, it
// prints {"commands": n, "result": ...} on stdout.
//
//   node cart-child.js '{"ports": [...], "client": "node-redis"|"ioredis",
//                        "crashAfter": k|null, "call": "place"|"confirm"|"cancel", "args": [...]}'

const { createCluster } = require('redis');
const { Cluster } = require('ioredis');
const { seckill, installSeckill, seckillOf, CartSaga } = require('../..');
const { COMMANDS } = require('../../lib/commands');

const spec = JSON.parse(process.argv[2]);

async function connect() {
  if (spec.client === 'node-redis') {
    const client = createCluster({
      rootNodes: spec.ports.map((port) => ({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } })),
      modules: { seckill },
    });
    client.on('error', () => {});
    await client.connect();
    return { client, close: () => client.destroy() };
  }
  const client = new Cluster(spec.ports.map((port) => ({ host: '127.0.0.1', port })), {
    redisOptions: { maxRetriesPerRequest: 1 },
    clusterRetryStrategy: () => null,
    lazyConnect: true,
  });
  client.on('error', () => {});
  await client.connect();
  return { client: installSeckill(client), close: () => client.disconnect() };
}

// The client's commands, each counted once its reply came; the saga gets
// them through an object with a `seckill` namespace, as a client has.
function counting(sk) {
  let commands = 0;
  const counted = {};
  for (const { method: name } of COMMANDS) {
    const method = sk[name].bind(sk);
    counted[name] = async (...args) => {
      const reply = await method(...args);
      commands += 1;
      if (commands === spec.crashAfter) {
        process.kill(process.pid, 'SIGKILL');
        // (SIGKILL to oneself ends the process before this is reached.)
        process.exit(137);
      }
      return reply;
    };
  }
  return { seckill: counted, commands: () => commands };
}

(async () => {
  const { client, close } = await connect();
  const commands = counting(seckillOf(client));
  const saga = new CartSaga(commands);
  const result = await saga[spec.call](...spec.args);
  process.stdout.write(JSON.stringify({ commands: commands.commands(), result }));
  await close();
})().catch((err) => {
  process.stderr.write(`${err && err.stack}\n`);
  process.exit(1);
});
