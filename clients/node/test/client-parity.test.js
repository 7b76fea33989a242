'use strict';
// The same library over each client it takes: node-redis, ioredis and Valkey
// GLIDE (@valkey/valkey-glide). Each test runs once per client, against real
// servers: every command gives the same typed values (the shared scenarios'
// transcripts compared with node-redis's); the module's errors come typed,
// of the same kind with the same message; pipelines, transactions and GLIDE
// batches are typed; a real 3-master cluster takes 1,000 calls (orders
// included) with no MOVED; a wait is answered by the item key's master.
// The rest of the suite runs node-redis and ioredis in more configurations.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient, createCluster } = require('redis');
const Redis = require('ioredis');
const { Cluster } = require('ioredis');
const { GlideClient, GlideClusterClient, Batch, ClusterBatch, Logger, ProtocolVersion } = require('@valkey/valkey-glide');
const { startServer, startReplica, startCluster } = require('./helpers/servers');
const {
  commandsScenario, transfersScenario, holdsScenario, ordersScenario, scanScenario, variantsScenario, errorsScenario,
  expectSeckillError, plain, bought, FAR,
} = require('./helpers/suite');
const {
  seckill, installSeckill, seckillOf, Outcome, ConfirmOutcome, RequestStatus, Durable, RefundResult,
  ItemInfo, SeckillError, RequestIdConflictError, InvalidArgumentError, UnavailableError, ErrorKind,
} = require('..');

// GLIDE logs a warning line for each error reply by default: errors only, here.
Logger.setLoggerConfig('error');

// A GLIDE request times out after 250 ms by default: longer, for the waits.
const GLIDE_REQUEST_TIMEOUT_MS = 5000;

let server;
let master;
let replica;
let cluster;
const closers = [];

before(async () => {
  [server, cluster] = await Promise.all([startServer(), startCluster()]);
  master = await startServer();
  replica = await startReplica(master);
});

after(async () => {
  for (const close of closers) {
    try { await close(); } catch { /* closed */ }
  }
  for (const s of [server, replica, master]) if (s) await s.stop();
  if (cluster) await cluster.stop();
});

const closing = (client, close) => {
  closers.push(close);
  return client;
};

// Each client the same way: standalone and cluster clients whose
// `seckillOf(client)` has the commands, a pipeline or transaction filled
// through `.seckill`, and its results with the errors as the client gives
// them (raw: SeckillError.from types them).
const KINDS = {
  'node-redis': {
    typedDirectly: false,
    // execAsPipeline rejects with the first error reply, and the other replies are lost.
    pipelineRejectsAtError: true,
    async standalone(port, { username, password } = {}) {
      const client = createClient({
        socket: { host: '127.0.0.1', port, reconnectStrategy: false }, RESP: 3, username, password, modules: { seckill },
      });
      client.on('error', () => {});
      await client.connect();
      return closing(client, () => client.destroy());
    },
    async cluster() {
      const client = createCluster({
        rootNodes: cluster.nodes.map((n) => ({ socket: { host: '127.0.0.1', port: n.port, reconnectStrategy: false } })),
        RESP: 3,
        modules: { seckill },
      });
      client.on('error', () => {});
      await client.connect();
      return closing(client, () => client.destroy());
    },
    queue: (client) => client.multi(),
    async run(client, queue, transaction) {
      try {
        return await (transaction ? queue.exec() : queue.execAsPipeline());
      } catch (err) {
        if (Array.isArray(err.replies)) return err.replies; // MultiErrorReply: the replies, errors among them
        throw err;
      }
    },
  },
  ioredis: {
    typedDirectly: true,
    async standalone(port, { username, password } = {}) {
      const client = installSeckill(new Redis({
        host: '127.0.0.1', port, protocol: 3, username, password, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null,
      }));
      client.on('error', () => {});
      await client.connect();
      return closing(client, () => client.disconnect());
    },
    async cluster() {
      const client = installSeckill(new Cluster(cluster.rootNodes, {
        redisOptions: { maxRetriesPerRequest: 1, protocol: 3 }, clusterRetryStrategy: () => null, lazyConnect: true,
      }));
      client.on('error', () => {});
      await client.connect();
      return closing(client, () => client.disconnect());
    },
    queue: (client, transaction) => (transaction ? client.multi() : client.pipeline()),
    async run(client, queue) {
      return (await queue.exec()).map(([err, value]) => err ?? value);
    },
  },
  glide: {
    typedDirectly: true,
    async standalone(port, { username, password } = {}, protocol = ProtocolVersion.RESP3) {
      const client = installSeckill(await GlideClient.createClient({
        addresses: [{ host: '127.0.0.1', port }],
        protocol,
        requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
        // The errors scenario fires 10,000 calls at once; GLIDE allows 1,000 in flight by default.
        inflightRequestsLimit: 20000,
        ...(username ? { credentials: { username, password } } : {}),
      }));
      return closing(client, () => client.close());
    },
    async cluster() {
      const client = installSeckill(await GlideClusterClient.createClient({
        addresses: cluster.rootNodes, requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
      }));
      return closing(client, () => client.close());
    },
    queue: (client, transaction) => installSeckill(client instanceof GlideClusterClient
      ? new ClusterBatch(transaction) : new Batch(transaction)),
    run: (client, queue) => client.seckill.exec(queue, false),
  },
};

const admin = (...args) => server.command(...args);

// ---- every command ----------------------------------------------------------

test('every command gives the same typed values through each client', async (t) => {
  const transcripts = {};
  const configs = {
    ...Object.fromEntries(Object.entries(KINDS).map(([name, kind]) => [name, (port, user) => kind.standalone(port, user)])),
    'glide RESP2': (port, user) => KINDS.glide.standalone(port, user, ProtocolVersion.RESP2),
  };
  for (const [name, connect] of Object.entries(configs)) {
    await t.test(name, async () => {
      await admin('FLUSHALL');
      const client = await connect(server.port);
      const sk = seckillOf(client);
      const typedDirectly = (KINDS[name] ?? KINDS.glide).typedDirectly;
      transcripts[name] = [
        await commandsScenario(sk, admin),
        await transfersScenario(sk),
        await holdsScenario(sk, admin),
        await ordersScenario(sk, admin),
        await variantsScenario(sk, admin, { typedDirectly }),
      ];
      await scanScenario(sk, admin);
      await admin('FLUSHALL');
      await errorsScenario(sk, admin, async (username, password) => {
        const c = await connect(server.port, { username, password });
        return { sk: seckillOf(c), close: async () => {} };
      }, { typedDirectly });
    });
  }
  for (const name of Object.keys(configs)) assert.deepStrictEqual(transcripts[name], transcripts['node-redis'], name);
});

// ---- pipelines, transactions and batches -------------------------------------

for (const [name, kind] of Object.entries(KINDS)) {
  test(`${name}: pipelines, transactions and batches give typed values and typed errors`, async () => {
    const client = await kind.standalone(server.port);
    for (const transaction of [false, true]) {
      const key = `{queue}:${name}:${transaction}`;
      await seckillOf(client).init(key, 3, { limit: 1 });
      const queue = kind.queue(client, transaction);
      queue.seckill.deduct(key, 'ann', 1, { requestId: 'r1' })
        .seckill.deduct(key, 'bob', 1, { requestId: 'r1' })
        .get(`${key}:plain`) // a command of the client's own, between
        .seckill.info(key)
        .seckill.deduct(key, 'cy', 0);
      assert.throws(() => queue.seckill.confirm(key, 'r1', { waitReplicas: 1 }), TypeError);
      if (!transaction && kind.pipelineRejectsAtError) {
        const err = await kind.run(client, queue, transaction).then(() => null, (e) => e);
        expectSeckillError(err, RequestIdConflictError, {
          kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR', message: 'request id was already used by another user or for another quantity',
        });
        continue;
      }
      const results = await kind.run(client, queue, transaction);
      assert.equal(results.length, 5);
      assert.deepEqual(plain(results[0]), bought(2));
      expectSeckillError(results[1], RequestIdConflictError, {
        kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR', message: 'request id was already used by another user or for another quantity',
      });
      assert.equal(results[2], null);
      assert.ok(results[3] instanceof ItemInfo);
      assert.deepEqual([results[3].sold, results[3].buyers], [1, 1]);
      expectSeckillError(results[4], InvalidArgumentError, {
        kind: ErrorKind.INVALID_ARGUMENT, code: 'ERR', message: 'value is out of range, must be positive',
      });
    }
  });
}

test('glide: a batch raises its first error, typed, and runs again typed (GLIDE keeps a batch\'s commands)', async () => {
  const client = await KINDS.glide.standalone(server.port);
  await client.seckill.init('{again}', 2);
  const batch = installSeckill(new Batch(false));
  batch.seckill.deduct('{again}', 'ann', 1, { requestId: 'r1' }).seckill.deduct('{again}', 'ann', 0);
  await assert.rejects(client.seckill.exec(batch), InvalidArgumentError);
  const again = await client.seckill.exec(batch, false);
  assert.deepEqual(plain(again[0]), bought(1)); // a replay of r1
  assert.ok(again[1] instanceof InvalidArgumentError);
  assert.equal(installSeckill(batch), batch);
});

// ---- a cluster ---------------------------------------------------------------

// The master of a key's slot, asked without touching the key (no MOVED counted).
const RANGES = [[0, 5460], [5461, 10922], [10923, 16383]];
async function ownerOf(key) {
  const slot = await cluster.nodes[0].command('CLUSTER', 'KEYSLOT', key);
  return cluster.nodes[RANGES.findIndex(([lo, hi]) => slot >= lo && slot <= hi)];
}

async function calls(node, command) {
  const m = /calls=(\d+)/.exec((await node.info('commandstats'))[`cmdstat_${command}`] || '');
  return m ? Number(m[1]) : 0;
}

// Call `i` of 1,000 on 100 keys: every command that takes one item, orders
// (whose first argument is a count) among them.
async function oneCall(sk, i, key) {
  switch (Math.floor(i / 100)) {
    case 0: return assert.equal(await sk.init(key, 1000, { limit: 50 }), true);
    case 1: case 2: return assert.equal((await sk.deduct(key, `user-${i % 7}`, 1, { requestId: `order-${i}` })).outcome, Outcome.BOUGHT);
    case 3: return assert.equal((await sk.order([[key, 1]], 'orderer', `bundle-${i}`, { holdUntil: FAR })).taken, true);
    case 4: return assert.equal((await sk.confirmOrder([key], `bundle-${i - 100}`)).confirmed, true);
    case 5: return assert.equal((await sk.refund(key, `order-${i - 400}`)).units, 1);
    case 6: return assert.equal((await sk.refundOrder([key], `bundle-${i - 300}`))[0].units, 1);
    case 7: return assert.deepEqual([await sk.get(key), await sk.bought(key, 'orderer')], [999, 0]);
    case 8: return assert.deepEqual([(await sk.info(key)).sold, await sk.holds(key)], [3, []]);
    default:
      assert.equal(await sk.add(key, 1), 1000);
      return assert.equal((await sk.status(key, `order-${i - 700}`)).status, RequestStatus.PURCHASED);
  }
}

for (const [name, kind] of Object.entries(KINDS)) {
  test(`${name} cluster: 1,000 calls (orders included) reach their item's master, no MOVED; a wait goes there too`, async () => {
    const client = await kind.cluster();
    const sk = seckillOf(client);
    const keys = Array.from({ length: 100 }, (_, i) => `parity:${name}:${i}`);
    assert.equal(new Set(await Promise.all(keys.map(ownerOf))).size, 3, 'the keys are spread over all masters');
    await sk.get(keys[0]); // the client learns the slots
    const moved = await cluster.movedCount();
    for (let i = 0; i < 1000; i++) await oneCall(sk, i, keys[i % 100]);
    assert.equal(await cluster.movedCount(), moved, 'no MOVED across 1,000 calls');

    // A pipeline or batch on the cluster, then a transaction that starts with
    // an order (a count first: it must still go to its keys' master). One
    // hash tag: node-redis and ioredis send a cluster pipeline to one node.
    const tagged = [`{${name}:batch}:a`, `{${name}:batch}:b`];
    await Promise.all(tagged.map((key) => sk.init(key, 5)));
    const queue = kind.queue(client, false);
    for (const key of tagged) queue.seckill.deduct(key, 'ann', 1, { requestId: 'b-1' }).seckill.get(key);
    const results = await kind.run(client, queue, false);
    assert.deepEqual([plain(results[0]), results[1], plain(results[2]), results[3]], [bought(4), 4, bought(4), 4]);
    const tx = kind.queue(client, true);
    tx.seckill.order(tagged.map((key) => [key, 1]), 'cy', 'tx-1')
      .seckill.deduct(tagged[0], 'bob', 1, { requestId: 'b-1' })
      .seckill.get(tagged[1]);
    const txResults = await kind.run(client, tx, true);
    assert.deepEqual([txResults[0].taken, txResults[2]], [true, 3]);
    assert.ok(SeckillError.from(txResults[1]) instanceof RequestIdConflictError);
    assert.equal(await cluster.movedCount(), moved, 'no MOVED for the batches either');

    // A wait: the write and WAIT on the item key's master only.
    const waits = await Promise.all(cluster.nodes.map((n) => calls(n, 'wait')));
    const durable = await sk.deduct(keys[0], 'waiter', 1, { requestId: 'w-1', waitReplicas: 0 });
    assert.ok(durable instanceof Durable);
    assert.deepEqual([plain(durable.result), durable.replicas, durable.durable], [bought(999), 0, true]);
    const owner = await ownerOf(keys[0]);
    const after = await Promise.all(cluster.nodes.map((n) => calls(n, 'wait')));
    assert.deepEqual(after.map((n, i) => n - waits[i]), cluster.nodes.map((n) => (n === owner ? 1 : 0)));
    assert.equal(await cluster.movedCount(), moved);
  });
}

test('node-redis cluster, raw: sendCommand with the key handed to it reaches the item\'s master (docs/clients.md)', async () => {
  const client = await KINDS['node-redis'].cluster();
  const keys = Array.from({ length: 30 }, (_, i) => `raw:${i}`);
  for (const key of keys) await client.sendCommand(key, false, ['SECKILL.INIT', key, '5']);
  const moved = await cluster.movedCount();
  for (const key of keys) {
    assert.equal(await client.sendCommand(key, false, ['SECKILL.DEDUCT', key, 'ann', '1', 'ID', 'r1']), 4);
    assert.equal(await client.sendCommand(key, true, ['SECKILL.GET', key]), 4);
  }
  assert.equal(await cluster.movedCount(), moved);
});

test('GLIDE\'s wording of each error code is read back to the server\'s code and message', () => {
  const { RequestError, TimeoutError, ConnectionError } = require('@valkey/valkey-glide');
  const said = 'An error was signalled by the server:';
  const cases = [
    [`${said} - ResponseError: request id was already used by another user`, 'ERR', 'request id was already used by another user', ErrorKind.REQUEST_ID_CONFLICT],
    [`${said} - PermissionDenied: this user has no permissions to access one of the keys`, 'NOPERM', 'this user has no permissions to access one of the keys', ErrorKind.NO_PERMISSION],
    [`${said} - CrossSlot: the item's order stream does not hash to the item's slot`, 'CROSSSLOT', "the item's order stream does not hash to the item's slot", ErrorKind.ORDER_STREAM],
    [`${said} - TryAgain: the item's order stream is missing`, 'TRYAGAIN', "the item's order stream is missing", ErrorKind.ORDER_STREAM],
    [`${said} - ReadOnly: You can't write against a read only replica.`, 'READONLY', "You can't write against a read only replica.", ErrorKind.UNAVAILABLE],
    [`${said} - MasterDown: Link with MASTER is down`, 'MASTERDOWN', 'Link with MASTER is down', ErrorKind.UNAVAILABLE],
    [`${said} - BusyLoadingError: Redis is loading the dataset in memory`, 'LOADING', 'Redis is loading the dataset in memory', ErrorKind.UNAVAILABLE],
    ['WRONGTYPE: Operation against a key holding the wrong kind of value', 'WRONGTYPE', 'Operation against a key holding the wrong kind of value', ErrorKind.WRONG_TYPE],
    ['NOREPLICAS: Not enough good replicas to write.', 'NOREPLICAS', 'Not enough good replicas to write.', ErrorKind.UNAVAILABLE],
  ];
  for (const [text, code, message, kind] of cases) {
    const typed = SeckillError.from(new RequestError(text));
    assert.ok(typed instanceof SeckillError, text);
    assert.deepEqual([typed.code, typed.message, typed.kind], [code, message, kind], text);
  }
  // Not the server's: left as GLIDE's own.
  for (const text of [`${said} - Moved: 3999 127.0.0.1:6381`, 'OOM: command not allowed', 'Connection closed']) {
    const raw = new RequestError(text);
    assert.equal(SeckillError.from(raw), raw, text);
  }
  const timeout = new TimeoutError('Operation timed out');
  assert.equal(SeckillError.from(timeout), timeout);
  // A connection lost during a call: UNAVAILABLE, with no code (the write may have happened).
  const lost = SeckillError.from(new ConnectionError('Received error - Connection refused'));
  assert.ok(lost instanceof UnavailableError);
  assert.deepEqual([lost.code, lost.kind, lost.retryable], ['', ErrorKind.UNAVAILABLE, true]);
});

// ---- durable writes ------------------------------------------------------------

for (const [name, kind] of Object.entries(KINDS)) {
  test(`${name}: a wait is answered by the master, with what its replica acknowledged`, async () => {
    const client = await kind.standalone(master.port);
    const sk = seckillOf(client);
    const key = `{durable}:${name}`;
    await sk.init(key, 5);
    const held = await sk.deduct(key, 'ann', 1, { requestId: 'r1', holdUntil: FAR, waitReplicas: 1, waitTimeoutMs: 5000 });
    assert.deepEqual([plain(held.result), held.result.deadline, held.replicas, held.durable], [bought(4), FAR, 1, true]);
    const confirmed = await sk.confirm(key, 'r1', { waitReplicas: 1, waitTimeoutMs: 5000 });
    assert.deepEqual([confirmed.result, confirmed.replicas, confirmed.durable], [ConfirmOutcome.CONFIRMED, 1, true]);
    const [, status] = await replica.command('SECKILL.STATUS', key, 'r1');
    assert.equal(status, 'confirmed');
    // Two replicas asked for, one there: WAIT times out with the one it had.
    const refunded = await sk.refund(key, 'r1', { waitReplicas: 2, waitTimeoutMs: 50 });
    assert.ok(refunded.result instanceof RefundResult);
    assert.deepEqual([refunded.result.units, refunded.replicas, refunded.durable], [1, 1, false]);
    // The write's error, not WAIT's answer.
    const err = await sk.deduct(key, 'bob', 1, { requestId: 'r1', waitReplicas: 1 }).then(() => null, (e) => e);
    expectSeckillError(err, RequestIdConflictError, {
      kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR', message: 'request id was already used by another user or for another quantity',
    });
  });
}
