'use strict';
// Durable acknowledgements against a real master and replica: deduct,
// confirm and refund with a wait (WAIT right after the write, on its
// connection), with node-redis (through seckillOf) and ioredis; and the
// UNAVAILABLE error kind from real servers: NOREPLICAS, READONLY, and a
// connection lost during a call.
//
// The replica's processing is paused with CLIENT PAUSE ... WRITE, which
// holds back the master's stream on the replica as ALL does (WAIT on the
// master then answers 0), while CLIENT UNPAUSE still goes through: Redis
// 7.0 holds CLIENT UNPAUSE itself back until a pause of ALL clients ends.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient } = require('redis');
const Redis = require('ioredis');
const { startServer, startReplica, sleep } = require('./helpers/servers');
const {
  expectSeckillError, rejectsWith, plain, bought, rejected, plainRefund, refunded, notRefunded,
} = require('./helpers/suite');
const {
  seckill, installSeckill, seckillOf, Durable, DeductResult, RefundResult, Outcome, ConfirmOutcome, RefundOutcome, SplitItem,
  SeckillError, UnavailableError, RequestIdConflictError, ErrorKind,
} = require('..');

const closers = [];
let master;
let replica;
let guarded;

before(async () => {
  master = await startServer();
  replica = await startReplica(master);
  // A master that takes writes only with a replica, and has none.
  guarded = await startServer({ args: ['--min-replicas-to-write', '1'] });
});

after(async () => {
  for (const close of closers.reverse()) {
    try { await close(); } catch { /* closed */ }
  }
  for (const server of [master, replica, guarded]) if (server) await server.stop();
});

// Each client library, connected to a server: `sk` is what an application
// calls (seckillOf: for node-redis the module's commands with waits, for
// ioredis client.seckill), `id` the connection's CLIENT ID.
const FLAVOURS = {
  'node-redis': {
    // node-redis gives a module no hook on error replies: its calls reject
    // with node-redis's errors, which SeckillError.from types.
    typedDirectly: false,
    async connect(server, options = {}) {
      const client = createClient({
        socket: { host: '127.0.0.1', port: server.port, reconnectStrategy: false },
        RESP: 3,
        modules: { seckill },
        ...options,
      });
      client.on('error', () => {});
      await client.connect();
      const close = () => client.destroy();
      closers.push(close);
      return { client, sk: seckillOf(client), id: () => client.sendCommand(['CLIENT', 'ID']), close };
    },
  },
  ioredis: {
    typedDirectly: true,
    async connect(server, options = {}) {
      const redis = new Redis({
        host: '127.0.0.1',
        port: server.port,
        maxRetriesPerRequest: 1,
        retryStrategy: () => null,
        lazyConnect: true,
        enableAutoPipelining: true,
        ...options,
      });
      redis.on('error', () => {});
      const close = () => redis.disconnect();
      closers.push(close);
      await redis.connect();
      installSeckill(redis);
      return { client: redis, sk: redis.seckill, id: () => redis.call('CLIENT', 'ID'), close };
    },
  },
};

// A Durable holding `result` (compared as plain values), with `replicas`.
function assertDurable(d, result, replicas, durable) {
  assert.ok(d instanceof Durable, `a Durable, got ${d}`);
  assert.ok(Object.isFrozen(d));
  assert.deepEqual(Object.keys(d), ['result', 'replicas', 'durable']);
  if (d.result instanceof DeductResult) assert.deepEqual(plain(d.result), result);
  else if (d.result instanceof RefundResult) assert.deepEqual(plainRefund(d.result), result);
  else assert.deepEqual(d.result, result);
  assert.equal(d.replicas, replicas);
  assert.equal(d.durable, durable);
}

// The error, typed as the flavour's calls type it.
function typed(flavour, err) {
  if (flavour.typedDirectly) assert.ok(err instanceof SeckillError, `thrown typed: ${err && err.stack}`);
  return SeckillError.from(err);
}

// Until the server's clock has passed `deadline` (Unix ms).
async function until(server, deadline) {
  for (;;) {
    const [seconds, micros] = await server.command('TIME');
    if (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) > deadline) return;
    await sleep(50);
  }
}

// Until the connection `id` waits on the server with a call of `command`.
async function untilWaiting(server, id, command) {
  for (;;) {
    const line = await server.command('CLIENT', 'LIST', 'ID', String(id));
    if (line.includes(`cmd=${command} `) && /flags=\S*b/.test(line)) return;
    await sleep(20);
  }
}

// A long pause, ended by CLIENT UNPAUSE in the test.
const pause = (server) => server.command('CLIENT', 'PAUSE', '600000', 'WRITE');
const unpause = (server) => server.command('CLIENT', 'UNPAUSE');

// Generous timeouts for the waits that must succeed: WAIT answers as soon as
// the replica acknowledges, so only a stalled machine gets near them.
const ACKED = 10000;

for (const [name, flavour] of Object.entries(FLAVOURS)) {
  test(`${name}: a hold paid and confirmed with a wait, re-sent until durable, stays sold on the promoted replica`, async () => {
    const own = await startServer();
    const ownReplica = await startReplica(own);
    try {
      const { sk } = await flavour.connect(own);
      assert.equal(await sk.init('{sale}', 5, { limit: 1 }), true);
      // Two holds of a few seconds, each acknowledged by the replica.
      const alice = await sk.deduct('{sale}', 'alice', 1, { requestId: 'h1', hold: 3, waitReplicas: 1, waitTimeoutMs: ACKED });
      assertDurable(alice, bought(4), 1, true);
      const bob = await sk.deduct('{sale}', 'bob', { qty: 1, requestId: 'h2', hold: 3, waitReplicas: 1, waitTimeoutMs: ACKED });
      assertDurable(bob, bought(3), 1, true);
      // The holds' deadlines come with the results, wait or not.
      const holds = await sk.holds('{sale}');
      const heldUntil = (id) => holds.find((h) => h.requestId === id).deadline;
      assert.deepEqual([alice.result.deadline, bob.result.deadline], [heldUntil('h1'), heldUntil('h2')]);
      const deadline = Math.max(alice.result.deadline, bob.result.deadline);

      // alice pays while the replica is held back: confirmed on the master,
      // not acknowledged by the replica.
      await pause(ownReplica);
      assertDurable(await sk.confirm('{sale}', 'h1', { waitReplicas: 1, waitTimeoutMs: 200 }), ConfirmOutcome.CONFIRMED, 0, false);
      await unpause(ownReplica);
      // So CONFIRM is sent again (it is idempotent) until it is durable: the
      // hold is final already, and the replica acknowledges it now.
      assertDurable(await sk.confirm('{sale}', 'h1', { waitReplicas: 1, waitTimeoutMs: ACKED }), ConfirmOutcome.ALREADY_FINAL, 1, true);

      // The master is lost; the replica is promoted.
      await own.stop();
      assert.equal(await ownReplica.command('REPLICAOF', 'NO', 'ONE'), 'OK');
      await until(ownReplica, deadline);
      const promoted = await flavour.connect(ownReplica);
      // alice's confirmed hold outlived its deadline; bob's, never paid, lapsed.
      assert.equal(await promoted.sk.bought('{sale}', 'alice'), 1);
      assert.equal(await promoted.sk.confirm('{sale}', 'h1'), ConfirmOutcome.ALREADY_FINAL);
      assert.equal(await promoted.sk.bought('{sale}', 'bob'), 0);
      assert.equal(await promoted.sk.confirm('{sale}', 'h2'), ConfirmOutcome.LAPSED);
      assert.equal(await promoted.sk.get('{sale}'), 4);
    } finally {
      await own.stop();
      await ownReplica.stop();
    }
  });

  test(`${name}: refunds and deducts take a wait too; a command that fails with a wait raises its own typed error`, async () => {
    await master.command('FLUSHALL');
    const { client, sk } = await flavour.connect(master);
    await sk.init('{w}', 10, { limit: 2 });
    assertDurable(await sk.deduct('{w}', 'carol', 2, { requestId: 'o-1', waitReplicas: 1, waitTimeoutMs: ACKED }), bought(8), 1, true);
    // A retried request id gets the very same reply, durable as well.
    assertDurable(await sk.deduct('{w}', 'carol', 2, { requestId: 'o-1', waitReplicas: 1, waitTimeoutMs: ACKED }), bought(8), 1, true);
    assertDurable(await sk.deduct('{w}', 'carol', 1, { requestId: 'o-2', waitReplicas: 1, waitTimeoutMs: ACKED }),
      rejected(Outcome.LIMIT_REACHED), 1, true);
    assertDurable(await sk.refund('{w}', 'o-1', { waitReplicas: 1, waitTimeoutMs: ACKED }), refunded(2), 1, true);
    // Sent again until durable, a refund says it was done before.
    assertDurable(await sk.refund('{w}', 'o-1', { waitReplicas: 1, waitTimeoutMs: ACKED }),
      notRefunded(RefundOutcome.ALREADY_REFUNDED), 1, true);
    assertDurable(await sk.refund('{w}', 'never-used', { waitReplicas: 1, waitTimeoutMs: ACKED }),
      notRefunded(RefundOutcome.UNKNOWN_REQUEST), 1, true);
    assertDurable(await sk.confirm('{w}', 'o-1', { waitReplicas: 1, waitTimeoutMs: ACKED }), ConfirmOutcome.REFUNDED, 1, true);
    assertDurable(await sk.confirm('{nothing}', 'o-1', { waitReplicas: 1, waitTimeoutMs: ACKED }), ConfirmOutcome.NO_ITEM, 1, true);
    // Zero replicas asked: durable whatever WAIT answers.
    const none = await sk.refund('{nothing}', 'o-1', { waitReplicas: 0 });
    assert.deepEqual([plainRefund(none.result), none.durable], [notRefunded(RefundOutcome.NO_ITEM), true]);
    // More replicas than there are: never durable.
    const more = await sk.refund('{w}', 'o-1', { waitReplicas: 2, waitTimeoutMs: 100 });
    assert.deepEqual([more.result.outcome, more.durable], [RefundOutcome.ALREADY_REFUNDED, false]);
    assert.ok(more.replicas <= 1);
    assert.equal(await replica.command('SECKILL.GET', '{w}'), 10);

    // The command's error, typed as without a wait; WAIT's answer is discarded.
    const conflict = await rejectsWith(sk.deduct('{w}', 'dave', 1, { requestId: 'o-1', waitReplicas: 1 }));
    expectSeckillError(typed(flavour, conflict), RequestIdConflictError, {
      kind: ErrorKind.REQUEST_ID_CONFLICT, code: 'ERR',
      message: 'request id was already used by another user or for another quantity',
    });
    // Without a wait, the values are as ever.
    const plainResult = await sk.deduct('{w}', 'dave', 1, { requestId: 'o-3' });
    assert.ok(plainResult instanceof DeductResult);
    assert.equal(await sk.confirm('{w}', 'o-3'), ConfirmOutcome.ALREADY_FINAL);
    assert.deepEqual(plainRefund(await sk.refund('{w}', 'o-3', {})), refunded(1));
    // Mistakes are refused before anything is sent.
    await assert.rejects(sk.confirm('{w}', 'o-3', { waitTimeoutMs: 100 }), TypeError);
    await assert.rejects(sk.refund('{w}', 'o-3', { waitReplicas: -1 }), RangeError);
    await assert.rejects(sk.deduct('{w}', 'erin', 1, { waitReplica: 1 }), TypeError);

    // A split item passes the wait to the user's part.
    const split = new SplitItem(client, ['{w}:0', '{w}:1']);
    await split.init(4);
    assertDurable(await split.deduct('erin', 1, { requestId: 's-1', hold: 900, waitReplicas: 1, waitTimeoutMs: ACKED }),
      bought(1), 1, true);
    assertDurable(await split.confirm('erin', 's-1', { waitReplicas: 1, waitTimeoutMs: ACKED }), ConfirmOutcome.CONFIRMED, 1, true);
    assertDurable(await split.refund('erin', 's-1', { waitReplicas: 1, waitTimeoutMs: ACKED }), refunded(1), 1, true);
    assert.equal(await split.bought('erin'), 0);
  });

  test(`${name}: with keyPrefix, the wait follows the prefixed write`, async () => {
    await master.command('FLUSHALL');
    const { sk } = await flavour.connect(master, { keyPrefix: 'app:' });
    await sk.init('{p}', 3);
    assertDurable(await sk.deduct('{p}', 'frank', 1, { requestId: 'k-1', hold: 900, waitReplicas: 1, waitTimeoutMs: ACKED }),
      bought(2), 1, true);
    assertDurable(await sk.confirm('{p}', 'k-1', { waitReplicas: 1, waitTimeoutMs: ACKED }), ConfirmOutcome.CONFIRMED, 1, true);
    assert.equal(await replica.command('SECKILL.BOUGHT', 'app:{p}', 'frank'), 1);
    assert.equal(await replica.command('EXISTS', '{p}'), 0);
  });

  test(`${name}: a wait inside a pipeline or transaction is refused`, async () => {
    const { client, sk } = await flavour.connect(master);
    const wait = { waitReplicas: 1 };
    if (name === 'node-redis') {
      assert.throws(() => client.multi().seckill.confirm('{x}', 'h1', wait), /not in multi\(\) or a pipeline/);
      assert.throws(() => client.multi().seckill.deduct('{x}', 'u', 1, { requestId: 'r', ...wait }), TypeError);
      assert.throws(() => client.multi().seckill.refund('{x}', 'h1', wait), TypeError);
      // The module's own call sends one command: it refuses a wait and names seckillOf.
      await assert.rejects(client.seckill.confirm('{x}', 'h1', wait), /seckillOf\(client\)\.confirm/);
      const multi = client.multi();
      assert.equal(seckillOf(multi), multi.seckill);
    } else {
      assert.throws(() => client.pipeline().seckill.confirm('{x}', 'h1', wait), /cannot be queued in a pipeline or transaction/);
      assert.throws(() => client.multi().seckill.deduct('{x}', 'u', 1, { requestId: 'r', ...wait }), TypeError);
      assert.throws(() => client.multi().seckillRefund('{x}', 'h1', wait), TypeError);
      assert.equal(seckillOf(client), client.seckill);
    }
    // Nothing was sent: the item was never created.
    assert.equal(await sk.get('{x}'), null);
  });

  test(`${name}: NOREPLICAS is the unavailable kind, retryable, and changes nothing`, async () => {
    const key = `{g:${name}}`;
    const { sk } = await flavour.connect(guarded);
    const noReplicas = {
      kind: ErrorKind.UNAVAILABLE, code: 'NOREPLICAS', message: 'Not enough good replicas to write.', retryable: true,
    };
    expectSeckillError(typed(flavour, await rejectsWith(sk.init(key, 5))), UnavailableError, noReplicas);
    await guarded.command('CONFIG', 'SET', 'min-replicas-to-write', '0');
    assert.equal(await sk.init(key, 5), true);
    await guarded.command('CONFIG', 'SET', 'min-replicas-to-write', '1');
    const call = () => sk.deduct(key, 'alice', 1, { requestId: 'r-1' });
    expectSeckillError(typed(flavour, await rejectsWith(call())), UnavailableError, noReplicas);
    const withWait = sk.deduct(key, 'alice', 1, { requestId: 'r-1', waitReplicas: 1, waitTimeoutMs: 100 });
    expectSeckillError(typed(flavour, await rejectsWith(withWait)), UnavailableError, noReplicas);
    assert.equal(await sk.get(key), 5);
    assert.equal(await sk.bought(key, 'alice'), 0);
    assert.equal((await sk.info(key)).requests, 0);
    // Once the master may take writes, the same call goes through, once.
    await guarded.command('CONFIG', 'SET', 'min-replicas-to-write', '0');
    try {
      assert.deepEqual(plain(await call()), bought(4));
      assert.deepEqual(plain(await call()), bought(4));
      assert.equal(await sk.bought(key, 'alice'), 1);
    } finally {
      await guarded.command('CONFIG', 'SET', 'min-replicas-to-write', '1');
    }
  });

  test(`${name}: READONLY is the unavailable kind: a deduct sent to a replica`, async () => {
    await master.command('FLUSHALL');
    const { sk } = await flavour.connect(master);
    await sk.init('{r}', 5);
    assertDurable(await sk.deduct('{r}', 'alice', 1, { requestId: 'r-1', waitReplicas: 1, waitTimeoutMs: ACKED }), bought(4), 1, true);
    const onReplica = await flavour.connect(replica);
    assert.equal(await onReplica.sk.get('{r}'), 4);
    const readOnly = {
      kind: ErrorKind.UNAVAILABLE, code: 'READONLY', message: "You can't write against a read only replica.", retryable: true,
    };
    const call = { requestId: 'r-2' };
    expectSeckillError(typed(flavour, await rejectsWith(onReplica.sk.deduct('{r}', 'bob', 1, call))), UnavailableError, readOnly);
    // With a wait, the write's error (WAIT cannot run on a replica either).
    expectSeckillError(typed(flavour, await rejectsWith(onReplica.sk.confirm('{r}', 'r-1', { waitReplicas: 1 }))),
      UnavailableError, readOnly);
    assert.equal(await onReplica.sk.get('{r}'), 4);
    // Sent again to the master, the same call is taken.
    assertDurable(await sk.deduct('{r}', 'bob', 1, { ...call, waitReplicas: 1, waitTimeoutMs: ACKED }), bought(3), 1, true);
    assert.equal(await onReplica.sk.bought('{r}', 'bob'), 1);
  });

  test(`${name}: a connection lost during a call is the unavailable kind, and the same call sent again buys once`, async () => {
    await master.command('FLUSHALL');
    const { sk } = await flavour.connect(master);
    await sk.init('{lost}', 5);
    for (const [n, wait] of [{}, { waitReplicas: 1 }].entries()) {
      const doomed = await flavour.connect(master);
      const id = await doomed.id();
      const call = (on) => on.deduct('{lost}', 'alice', 1, { requestId: `r-${n}`, ...wait });
      // The call reaches the server and waits there; its connection is cut.
      await pause(master);
      let pending;
      try {
        pending = call(doomed.sk).then(() => assert.fail('the call should fail'), (err) => err);
        await untilWaiting(master, id, 'seckill.deduct');
        await master.command('CLIENT', 'KILL', 'ID', String(id));
      } finally {
        await unpause(master);
      }
      const err = await pending;
      const lost = expectSeckillError(typed(flavour, err), UnavailableError, {
        kind: ErrorKind.UNAVAILABLE, code: '', message: /\S/, retryable: true,
      });
      assert.ok(lost.cause instanceof Error && !(lost.cause instanceof SeckillError), 'the client\'s own error is the cause');
      // This time nothing was sold; sent again, the purchase happens once.
      assert.equal(await sk.bought('{lost}', 'alice'), n);
      const again = await call(sk);
      const result = again instanceof Durable ? again.result : again;
      assert.deepEqual(plain(result), bought(4 - n));
      assert.deepEqual(plain(await sk.deduct('{lost}', 'alice', 1, { requestId: `r-${n}` })), bought(4 - n));
      assert.equal(await sk.bought('{lost}', 'alice'), n + 1);
    }
  });
}
