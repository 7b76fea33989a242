'use strict';
// CartSaga on a real 3-master cluster, with a cart's items on the three
// masters (three hash tags, so SECKILL.MDEDUCT could not take them in one
// call): place, confirm and cancel, a cart refused by a sold-out line that
// leaves no line held, a payment that finds a line lapsed, and the saga run
// in a child process killed (SIGKILL) right after each of its server
// commands, then resumed by the same call: every line held under the cart
// id or none, no unit taken twice, and a placed cart confirmed whole.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { createCluster } = require('redis');
const { Cluster } = require('ioredis');
const { startCluster } = require('./helpers/servers');
const {
  seckill, installSeckill, seckillOf, CartSaga, CartPlacement, CartConfirmation, Outcome, ConfirmOutcome, RefundOutcome,
  RequestStatus,
} = require('..');

let cluster;
const closers = [];
const children = new Set();

before(async () => {
  cluster = await startCluster();
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const close of closers) {
    try { await close(); } catch { /* closed */ }
  }
  if (cluster) await cluster.stop();
});

const RANGES = [[0, 5460], [5461, 10922], [10923, 16383]];
async function ownerIndex(key) {
  const slot = await cluster.nodes[0].command('CLUSTER', 'KEYSLOT', key);
  return RANGES.findIndex(([lo, hi]) => slot >= lo && slot <= hi);
}

// One hash tag on each master, in the nodes' order.
let tags;
async function tagsOnEachMaster() {
  if (tags) return tags;
  const found = new Map();
  for (let k = 0; found.size < 3; k++) {
    const tag = `{shelf:${k}}`;
    const i = await ownerIndex(tag);
    if (!found.has(i)) found.set(i, tag);
  }
  tags = [0, 1, 2].map((i) => found.get(i));
  return tags;
}

// A cart's three items, one on each master, created with these stocks.
async function items(name, stocks) {
  const keys = (await tagsOnEachMaster()).map((tag) => `${tag}:${name}`);
  for (const [i, key] of keys.entries()) {
    assert.equal(await cluster.nodes[i].command('SECKILL.INIT', key, stocks[i]), 1);
  }
  return keys;
}

const CLIENTS = {
  'node-redis': async () => {
    const client = createCluster({
      rootNodes: cluster.nodes.map((n) => ({ socket: { host: '127.0.0.1', port: n.port, reconnectStrategy: false } })),
      modules: { seckill },
    });
    client.on('error', () => {});
    await client.connect();
    closers.push(() => client.destroy());
    return client;
  },
  ioredis: async () => {
    const client = new Cluster(cluster.rootNodes, {
      redisOptions: { maxRetriesPerRequest: 1 },
      clusterRetryStrategy: () => null,
      lazyConnect: true,
      enableAutoPipelining: true,
    });
    client.on('error', () => {});
    closers.push(() => client.disconnect());
    await client.connect();
    return installSeckill(client);
  },
};

// Where each line of a cart stands, read on the item's own master.
async function statuses(keys, cartId) {
  const out = [];
  for (const [i, key] of keys.entries()) out.push((await cluster.nodes[i].command('SECKILL.STATUS', key, cartId))[1]);
  return out;
}

// No unit created or taken twice on any item: the stock and the units sold
// come to the initial stock and the units given back (refunded or lapsed).
async function checkLedger(sk, keys) {
  const infos = [];
  for (const key of keys) {
    const info = await sk.info(key);
    assert.equal(info.stock + info.sold, info.initial + info.refunded + info.expired, `${key}: ${JSON.stringify(info)}`);
    infos.push(info);
  }
  return infos;
}

const outcomes = (results) => results.map((r) => r.outcome);

for (const [clientName, connect] of Object.entries(CLIENTS)) {
  test(`${clientName}: a cart holds a size of a drop, under its limit across sizes`, async () => {
    const client = await connect();
    const sk = seckillOf(client);
    const saga = new CartSaga(client);
    const keys = await items(`sized-${clientName}`, [5, 5, 5]);
    const drop = `${keys[0]}:drop`;
    assert.equal(await cluster.nodes[0].command('SECKILL.INIT', drop, 'VARIANTS', '2', '42', '1', '43', '1', 'LIMIT', '1'), 1);
    const lines = [[drop, 1, 43], [keys[1], 1], { key: keys[2], qty: 2, variant: null }];
    const placed = await saga.place('cart-s1', 'eve', lines, 900);
    assert.equal(placed.placed, true);
    assert.equal((await sk.status(drop, 'cart-s1')).variant, '43');
    // Another size in another cart is over eve's one pair.
    const other = await saga.place('cart-s2', 'eve', [{ key: drop, qty: 1, variant: '42' }], 900);
    assert.deepEqual([other.placed, other.refusal], [false, Outcome.LIMIT_REACHED]);
    const paid = await saga.confirm('cart-s1', [drop, keys[1], keys[2]]);
    assert.equal(paid.paid, true);
    assert.deepEqual(await Promise.all([sk.get(drop, { variant: 43 }), sk.get(drop, { variant: 42 })]), [0, 1]);
  });

  test(`${clientName}: a cart over three masters is placed, paid, replayed, cancelled`, async () => {
    const client = await connect();
    const sk = seckillOf(client);
    const saga = new CartSaga(client);
    const keys = await items(`paid-${clientName}`, [5, 5, 5]);
    const lines = [[keys[0], 1], [keys[1], 2], { key: keys[2], qty: 3 }];
    assert.equal(new Set(await Promise.all(keys.map(ownerIndex))).size, 3, 'one item on each master');
    const moved = await cluster.movedCount();

    const placed = await saga.place('cart-1', 'ann', lines, 900);
    assert.ok(placed instanceof CartPlacement && Object.isFrozen(placed));
    assert.deepEqual([placed.placed, placed.refusedLine, placed.refusal, placed.refunds], [true, null, null, []]);
    assert.deepEqual(placed.lines.map((r) => [r.outcome, r.stock]), [[Outcome.BOUGHT, 4], [Outcome.BOUGHT, 3], [Outcome.BOUGHT, 2]]);
    assert.equal(placed.deadline, Math.min(...placed.lines.map((r) => r.deadline)));
    assert.deepEqual(await statuses(keys, 'cart-1'), ['held', 'held', 'held']);
    assert.deepEqual(await Promise.all(keys.map((k) => sk.bought(k, 'ann'))), [1, 2, 3]);
    // Placed again (a retry): the same holds, nothing more taken.
    const again = await saga.place('cart-1', 'ann', lines, 900);
    assert.deepEqual(again.lines.map((r) => [r.stock, r.deadline]), placed.lines.map((r) => [r.stock, r.deadline]));
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [4, 3, 2]);

    const paid = await saga.confirm('cart-1', keys);
    assert.ok(paid instanceof CartConfirmation && Object.isFrozen(paid));
    assert.deepEqual({ ...paid }, { paid: true, lines: Array(3).fill(ConfirmOutcome.CONFIRMED), failedLine: null, failure: null, refunds: [] });
    assert.deepEqual(await statuses(keys, 'cart-1'), ['confirmed', 'confirmed', 'confirmed']);
    // Confirmed again, by its lines: final already. Placed again: bought, no hold left.
    assert.deepEqual((await saga.confirm('cart-1', lines)).lines, Array(3).fill(ConfirmOutcome.ALREADY_FINAL));
    const replayed = await saga.place('cart-1', 'ann', lines, 900);
    assert.deepEqual([replayed.placed, replayed.deadline, replayed.lines.map((r) => r.deadline)], [true, null, [null, null, null]]);

    // Cancelled (the goods came back): every line refunded, once.
    const cancelled = await saga.cancel('cart-1', keys);
    assert.deepEqual(cancelled.map((r) => [r.outcome, r.units]), [[RefundOutcome.REFUNDED, 1], [RefundOutcome.REFUNDED, 2], [RefundOutcome.REFUNDED, 3]]);
    assert.deepEqual(outcomes(await saga.cancel('cart-1', keys)), Array(3).fill(RefundOutcome.ALREADY_REFUNDED));
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [5, 5, 5]);
    // A cart given back can never be placed again under its id.
    const dead = await saga.place('cart-1', 'ann', lines, 900);
    assert.deepEqual([dead.placed, dead.refusedLine, dead.refusal], [false, 0, Outcome.CANCELLED]);
    assert.deepEqual(outcomes(dead.refunds), Array(3).fill(RefundOutcome.ALREADY_REFUNDED));
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [5, 5, 5]);
    await checkLedger(sk, keys);
    assert.equal(await cluster.movedCount(), moved, 'every step went to its item\'s master');
  });

  test(`${clientName}: a cart refused by a sold-out line leaves no line held`, async () => {
    const client = await connect();
    const sk = seckillOf(client);
    const saga = new CartSaga(client);
    const keys = await items(`refused-${clientName}`, [5, 0, 5]);
    const lines = keys.map((key) => [key, 1]);
    const refused = await saga.place('cart-2', 'bob', lines, 900);
    assert.deepEqual([refused.placed, refused.deadline, refused.refusedLine, refused.refusal], [false, null, 1, Outcome.SOLD_OUT]);
    // The lines after the refusing one were not tried; every line is given back.
    assert.deepEqual(outcomes(refused.lines), [Outcome.BOUGHT, Outcome.SOLD_OUT]);
    assert.deepEqual(refused.refunds.map((r) => [r.outcome, r.units]), [
      [RefundOutcome.REFUNDED, 1], [RefundOutcome.UNKNOWN_REQUEST, null], [RefundOutcome.UNKNOWN_REQUEST, null],
    ]);
    // On every item: nothing held, the stock whole.
    assert.deepEqual(await statuses(keys, 'cart-2'), ['refunded', 'unknown', 'unknown']);
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [5, 0, 5]);
    assert.deepEqual(await Promise.all(keys.map((k) => sk.bought(k, 'bob'))), [0, 0, 0]);
    assert.deepEqual((await checkLedger(sk, keys)).map((i) => i.held), [0, 0, 0]);
    // Stock arrives for the sold-out line: the cart stays refused (its first line answers CANCELLED).
    await cluster.nodes[1].command('SECKILL.ADD', keys[1], 5);
    const retried = await saga.place('cart-2', 'bob', lines, 900);
    assert.deepEqual([retried.placed, retried.refusedLine, retried.refusal], [false, 0, Outcome.CANCELLED]);
    assert.deepEqual(await statuses(keys, 'cart-2'), ['refunded', 'unknown', 'unknown']);
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [5, 5, 5]);
    // Cancelling a refused cart changes nothing.
    assert.deepEqual(outcomes(await saga.cancel('cart-2', keys)), [
      RefundOutcome.ALREADY_REFUNDED, RefundOutcome.UNKNOWN_REQUEST, RefundOutcome.UNKNOWN_REQUEST,
    ]);
  });

  test(`${clientName}: a payment that finds a line lapsed gives every line back`, async () => {
    const client = await connect();
    const sk = seckillOf(client);
    const saga = new CartSaga(client);
    const keys = await items(`lapsed-${clientName}`, [3, 3, 3]);
    assert.equal((await saga.place('cart-3', 'cy', keys.map((key) => [key, 1]), 900)).placed, true);
    assert.equal(await cluster.nodes[1].command('SECKILL.RELEASE', keys[1], 'cart-3'), 1);
    const failed = await saga.confirm('cart-3', keys);
    assert.deepEqual([failed.paid, failed.lines, failed.failedLine, failed.failure],
      [false, [ConfirmOutcome.CONFIRMED, ConfirmOutcome.LAPSED], 1, ConfirmOutcome.LAPSED]);
    // The first line was confirmed before the lapse was found: refunded too.
    assert.deepEqual(failed.refunds.map((r) => [r.outcome, r.units]), [
      [RefundOutcome.REFUNDED, 1], [RefundOutcome.LAPSED, null], [RefundOutcome.REFUNDED, 1],
    ]);
    assert.deepEqual(await statuses(keys, 'cart-3'), ['refunded', 'lapsed', 'refunded']);
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [3, 3, 3]);
    // Sent again: the same answer (now from the first line), nothing moves.
    const again = await saga.confirm('cart-3', keys);
    assert.deepEqual([again.paid, again.failedLine, again.failure], [false, 0, ConfirmOutcome.REFUNDED]);
    assert.deepEqual(await Promise.all(keys.map((k) => sk.get(k))), [3, 3, 3]);
    await checkLedger(sk, keys);
  });
}

// ---- crashes ------------------------------------------------------------------

const CHILD = path.join(__dirname, 'helpers', 'cart-child.js');

// Runs one saga call in a child process that kills itself right after its
// crashAfter-th server command (null: runs to the end). Resolves to
// { signal, output } once it is gone.
function runChild(clientName, crashAfter, call, args) {
  const spec = { ports: cluster.nodes.map((n) => n.port), client: clientName, crashAfter, call, args };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`the child exited with ${code}: ${stderr}`));
      else resolve({ signal, output: signal ? null : JSON.parse(stdout) });
    });
  });
}

// How many server commands a full run of the call sends (a child run to the end).
async function commandsOfFullRun(clientName, call, args) {
  const { signal, output } = await runChild(clientName, null, call, args);
  assert.equal(signal, null);
  return output.commands;
}

// For each k from 1 to the commands of a full run: fresh items, `prepare`,
// the call in a child killed right after its k-th command, then `check`
// with the same call made again here (the resume).
async function everyCrashPoint(t, clientName, { name, stocks, call, prepare = async () => {}, expectedCommands, check }) {
  const sample = await items(`${name}-count-${clientName}`, stocks);
  const sampleArgs = await prepare(sample, `${name}-count`);
  const total = await commandsOfFullRun(clientName, call, sampleArgs);
  assert.equal(total, expectedCommands, `commands of a full ${name} run`);
  for (let k = 1; k <= total; k++) {
    const keys = await items(`${name}-${k}-${clientName}`, stocks);
    const args = await prepare(keys, `${name}-${k}`);
    const { signal } = await runChild(clientName, k, call, args);
    assert.equal(signal, 'SIGKILL', `the child died after command ${k}`);
    await check(k, keys, args);
  }
  t.diagnostic(`${name}: killed after each of its ${total} commands, and resumed`);
}

for (const [clientName, connect] of Object.entries(CLIENTS)) {
  test(`${clientName}: the saga killed after each of its commands, then resumed, holds every line or none`, async (t) => {
    const client = await connect();
    const sk = seckillOf(client);
    const saga = new CartSaga(client);
    const qtys = [1, 2, 3];
    const linesOf = (keys) => keys.map((key, i) => [key, qtys[i]]);

    // A cart that is placed: 3 DEDUCTs. Resumed, every line is held once,
    // then the payment confirms them all.
    await everyCrashPoint(t, clientName, {
      name: 'placed',
      stocks: [10, 10, 10],
      call: 'place',
      expectedCommands: 3,
      prepare: async (keys, cartId) => [cartId, 'dee', linesOf(keys), 900],
      check: async (k, keys, args) => {
        const [cartId, user] = args;
        const resumed = await saga.place(...args);
        assert.equal(resumed.placed, true, `k=${k}`);
        assert.deepEqual(resumed.lines.map((r) => r.stock), [9, 8, 7], `k=${k}: each line taken once`);
        assert.ok(resumed.deadline > Date.now());
        assert.deepEqual(await statuses(keys, cartId), ['held', 'held', 'held'], `k=${k}`);
        assert.deepEqual(await Promise.all(keys.map((key) => sk.bought(key, user))), qtys, `k=${k}`);
        const infos = await checkLedger(sk, keys);
        assert.deepEqual(infos.map((i) => [i.stock, i.sold, i.held]), [[9, 1, 1], [8, 2, 2], [7, 3, 3]], `k=${k}`);
        const paid = await saga.confirm(cartId, keys);
        assert.deepEqual([paid.paid, paid.lines], [true, Array(3).fill(ConfirmOutcome.CONFIRMED)], `k=${k}`);
        assert.deepEqual(await statuses(keys, cartId), ['confirmed', 'confirmed', 'confirmed'], `k=${k}`);
      },
    });

    // A cart refused by its last line (sold out): 2 DEDUCTs held, 1
    // refused, then a REFUND on each of the 3 lines. Resumed, no line is
    // held: before any line was given back the resume finds the sold-out
    // line again; after, the first line answers CANCELLED and the resume
    // gives back the lines still held.
    await everyCrashPoint(t, clientName, {
      name: 'refused',
      stocks: [10, 10, 0],
      call: 'place',
      expectedCommands: 6,
      prepare: async (keys, cartId) => [cartId, 'eve', linesOf(keys), 900],
      check: async (k, keys, args) => {
        const [cartId, user] = args;
        const resumed = await saga.place(...args);
        assert.equal(resumed.placed, false, `k=${k}`);
        const expected = k <= 3 ? [2, Outcome.SOLD_OUT] : [0, Outcome.CANCELLED];
        assert.deepEqual([resumed.refusedLine, resumed.refusal], expected, `k=${k}`);
        assert.deepEqual(await statuses(keys, cartId), ['refunded', 'refunded', 'unknown'], `k=${k}`);
        assert.deepEqual(await Promise.all(keys.map((key) => sk.bought(key, user))), [0, 0, 0], `k=${k}`);
        const infos = await checkLedger(sk, keys);
        assert.deepEqual(infos.map((i) => [i.stock, i.sold, i.refunded, i.held]), [[10, 1, 1, 0], [10, 2, 2, 0], [0, 0, 0, 0]], `k=${k}`);
      },
    });

    // A payment: 3 CONFIRMs. Resumed, every line is confirmed.
    await everyCrashPoint(t, clientName, {
      name: 'confirmed',
      stocks: [10, 10, 10],
      call: 'confirm',
      expectedCommands: 3,
      prepare: async (keys, cartId) => {
        assert.equal((await saga.place(cartId, 'fay', linesOf(keys), 900)).placed, true);
        return [cartId, keys];
      },
      check: async (k, keys, [cartId]) => {
        const resumed = await saga.confirm(cartId, keys);
        assert.equal(resumed.paid, true, `k=${k}`);
        assert.deepEqual(resumed.lines, [0, 1, 2].map((i) => (i < k ? ConfirmOutcome.ALREADY_FINAL : ConfirmOutcome.CONFIRMED)), `k=${k}`);
        assert.deepEqual(await statuses(keys, cartId), ['confirmed', 'confirmed', 'confirmed'], `k=${k}`);
        assert.deepEqual((await checkLedger(sk, keys)).map((i) => [i.stock, i.sold, i.held]), [[9, 1, 0], [8, 2, 0], [7, 3, 0]], `k=${k}`);
      },
    });

    // A payment that finds its last line lapsed: 3 CONFIRMs (the last
    // LAPSED), then a REFUND on each line. Resumed, nothing stays taken.
    await everyCrashPoint(t, clientName, {
      name: 'unpaid',
      stocks: [10, 10, 10],
      call: 'confirm',
      expectedCommands: 6,
      prepare: async (keys, cartId) => {
        assert.equal((await saga.place(cartId, 'gus', linesOf(keys), 900)).placed, true);
        assert.equal(await cluster.nodes[2].command('SECKILL.RELEASE', keys[2], cartId), 1);
        return [cartId, keys];
      },
      check: async (k, keys, [cartId]) => {
        const resumed = await saga.confirm(cartId, keys);
        assert.equal(resumed.paid, false, `k=${k}`);
        const expected = k <= 3 ? [2, ConfirmOutcome.LAPSED] : [0, ConfirmOutcome.REFUNDED];
        assert.deepEqual([resumed.failedLine, resumed.failure], expected, `k=${k}`);
        assert.deepEqual(await statuses(keys, cartId), ['refunded', 'refunded', 'lapsed'], `k=${k}`);
        const infos = await checkLedger(sk, keys);
        assert.deepEqual(infos.map((i) => [i.stock, i.held]), [[10, 0], [10, 0], [10, 0]], `k=${k}`);
      },
    });
  });
}
