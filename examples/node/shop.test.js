'use strict';
// examples/node/shop.js driven over HTTP through a whole small sale, against
// a real redis-server with the module (run by `make test`, scripts/test-node.sh).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../../clients/node/test/helpers/servers');
const { buildShop } = require('./shop');

const ITEM = '{sku:shop}';
let server;
let app;
let base;

before(async () => {
  server = await startServer();
  app = await buildShop(`redis://127.0.0.1:${server.port}`);
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${app.server.address().port}`;
});

after(async () => {
  await app?.close();
  await server?.stop();
});

async function call(method, path, query = {}) {
  const url = new URL(path, base);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, String(value));
  const response = await fetch(url, { method });
  return { status: response.status, body: await response.json() };
}

const buy = (n, user = `u${n}`) => call('POST', `/orders/o-${n}`, { item: ITEM, user });
const order = (id, action) => call('POST', `/orders/${id}/${action}`, { item: ITEM });

test('a small sale sells out exactly, keeps the limit and never sells a retry twice', async () => {
  assert.equal((await call('POST', `/items/${encodeURIComponent(ITEM)}`, { stock: 5, limit: 1 })).status, 201);
  assert.equal((await call('POST', `/items/${encodeURIComponent(ITEM)}`, { stock: 5, limit: 1 })).status, 200);

  // 20 buyers race for 5 units, and each sends its click twice (a retry after a timeout).
  const buyers = [...Array(20).keys()];
  const first = await Promise.all(buyers.map((n) => buy(n)));
  const again = await Promise.all(buyers.map((n) => buy(n)));
  const held = buyers.filter((n) => first[n].status === 201);
  assert.equal(held.length, 5);
  assert.deepEqual(first.filter((r) => r.status === 409).map((r) => r.body.error), Array(15).fill('sold out'));
  // A retry gets the first answer: the held orders are held still, nobody else got a unit.
  assert.deepEqual(again.map((r) => r.status), first.map((r) => r.status));
  assert.equal((await call('GET', `/items/${encodeURIComponent(ITEM)}`)).body.stock, 0);

  // An order id is one purchase: used again for someone else, it is refused.
  const reused = await buy(held[0], 'someone-else');
  assert.deepEqual([reused.status, reused.body.error], [409, 'order id already used for another purchase']);

  // A held order tells when it must be paid by.
  const state = await call('GET', `/orders/o-${held[0]}`, { item: ITEM });
  assert.deepEqual([state.status, state.body.status, state.body.user, state.body.qty], [200, 'held', `u${held[0]}`, 1]);
  assert.ok(state.body.pay_by_ms > Date.now());
  assert.equal((await call('GET', '/orders/nope', { item: ITEM })).body.error, 'no such order');

  // Three pay (one twice), one cancels (twice), one lets it be.
  for (const n of held.slice(0, 3)) {
    const paid = await order(`o-${n}`, 'pay');
    assert.deepEqual([paid.status, paid.body.status], [200, 'paid']);
  }
  assert.equal((await order(`o-${held[0]}`, 'pay')).status, 200);
  assert.equal((await call('GET', `/orders/o-${held[0]}`, { item: ITEM })).body.status, 'confirmed');
  const unknown = await order('nope', 'pay');
  assert.deepEqual([unknown.status, unknown.body.error], [404, 'no such order']);
  assert.equal((await order(`o-${held[3]}`, 'cancel')).body.units_returned, 1);
  assert.equal((await order(`o-${held[3]}`, 'cancel')).body.units_returned, 0);
  const latePayment = await order(`o-${held[3]}`, 'pay');
  assert.deepEqual([latePayment.status, latePayment.body.error], [410, 'order cancelled']);
  assert.equal((await buy(held[3])).status, 410);
  assert.equal((await call('GET', `/items/${encodeURIComponent(ITEM)}`)).body.stock, 1);

  // One buyer, one unit: a buyer who paid cannot take the unit given back.
  const second = await call('POST', '/orders/second-try', { item: ITEM, user: `u${held[0]}` });
  assert.deepEqual([second.status, second.body.error], [409, 'limit reached']);

  // The unit given back is sold once more, to one of the buyers who missed out, and no more.
  const late = buyers.filter((n) => !held.includes(n));
  const replies = await Promise.all(late.map((n) => call('POST', `/orders/late-${n}`, { item: ITEM, user: `u${n}` })));
  assert.deepEqual(replies.map((r) => r.status).sort(), [201, ...Array(late.length - 1).fill(409)]);
  assert.equal((await call('GET', `/items/${encodeURIComponent(ITEM)}`)).body.stock, 0);
  assert.equal((await call('GET', '/items/none')).status, 404);
});

// How many SECKILL.STATUS calls the server has run.
async function statusCalls() {
  const stats = await server.command('INFO', 'commandstats');
  const line = stats.split('\r\n').find((l) => l.startsWith('cmdstat_seckill.status:'));
  return line ? Number(/calls=(\d+)/.exec(line)[1]) : 0;
}

test('a payment tells an expired order from a cancelled or unknown one in one call; a cancel tells an unknown order', async () => {
  const item = '{sku:fates}';
  const on = (id, action) => call('POST', `/orders/${id}/${action}`, { item });
  assert.equal((await call('POST', `/items/${encodeURIComponent(item)}`, { stock: 3, limit: 1 })).status, 201);
  for (const id of ['paid', 'expired', 'cancelled']) {
    assert.equal((await call('POST', `/orders/${id}`, { item, user: `buyer-${id}` })).status, 201);
  }
  // The buyer of 'expired' never pays: its hold lapses (RELEASE lets it lapse now).
  assert.equal(await server.command('SECKILL.RELEASE', item, 'expired'), 1);
  assert.equal((await on('cancelled', 'cancel')).body.units_returned, 1);

  const before = await statusCalls();
  assert.deepEqual((await on('paid', 'pay')).body, { order: 'paid', status: 'paid' });
  const answers = {};
  for (const id of ['expired', 'cancelled', 'never-placed']) {
    const { status, body } = await on(id, 'pay');
    answers[id] = [status, body.error];
  }
  assert.deepEqual(answers, {
    expired: [410, 'order expired'],
    cancelled: [410, 'order cancelled'],
    'never-placed': [404, 'no such order'],
  });
  const noSale = await call('POST', '/orders/paid/pay', { item: '{sku:none}' });
  assert.deepEqual([noSale.status, noSale.body.error], [404, 'no such sale']);
  assert.equal(await statusCalls(), before, 'confirm alone told them apart');

  // Cancelling: an order that expired unpaid, or was cancelled before, gave
  // its unit back already; one never placed is no order at all.
  assert.deepEqual((await on('expired', 'cancel')).body, { order: 'expired', status: 'cancelled', units_returned: 0 });
  assert.deepEqual((await on('cancelled', 'cancel')).body, { order: 'cancelled', status: 'cancelled', units_returned: 0 });
  const unknown = await on('never-placed', 'cancel');
  assert.deepEqual([unknown.status, unknown.body.error], [404, 'no such order']);
  const noItem = await call('POST', '/orders/paid/cancel', { item: '{sku:none}' });
  assert.deepEqual([noItem.status, noItem.body.error], [404, 'no such sale']);
  // 3 units: one paid, two back on sale.
  assert.equal((await call('GET', `/items/${encodeURIComponent(item)}`)).body.stock, 2);
});
