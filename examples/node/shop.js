'use strict';
// A flash-sale HTTP service over seckill's Node.js client (fastify, node-redis).
//
//   cd examples/node && npm ci
//   SHOP_REDIS_URL=redis://127.0.0.1:6379 node shop.js        (listens on SHOP_PORT, 3000)
//
// POST /items/:item?stock=N&limit=L    open a sale (again: left as it is)
// POST /orders/:order?item=I&user=U    buy one unit, held until paid (the client picks the order id)
// POST /orders/:order/pay?item=I       the payment arrived: the hold becomes a sale
// POST /orders/:order/cancel?item=I    give the unit back (held or paid)
// GET  /orders/:order?item=I           where the order stands (held: pay by when)
// GET  /items/:item                    the stock left
//
// Every outcome has its HTTP status; a retried request (same order id) gets
// the first answer and never sells twice. With SHOP_WAIT_REPLICAS=N a payment
// is "paid" only once N replicas have it (else 503: the payment provider
// sends the webhook again, and confirming again is safe).

const Fastify = require('fastify');
const { createClient } = require('redis');
const {
  seckill, seckillOf, Outcome, ConfirmOutcome, RefundOutcome, RequestStatus, SeckillError, RequestIdConflictError,
} = require('seckill-client');

// How long a buyer has to pay before the unit goes back on sale.
const HOLD_SECONDS = Number(process.env.SHOP_HOLD_SECONDS ?? 900);
// Replicas that must have a payment before it is "paid" (0: the master's word is enough).
const WAIT_REPLICAS = Number(process.env.SHOP_WAIT_REPLICAS ?? 0);

// What a refused purchase tells the buyer.
const REFUSED = {
  [Outcome.SOLD_OUT]: [409, 'sold out'],
  [Outcome.LIMIT_REACHED]: [409, 'limit reached'],
  [Outcome.NO_ITEM]: [404, 'no such sale'],
  [Outcome.CANCELLED]: [410, 'order cancelled or expired'],
  [Outcome.NOT_STARTED]: [403, 'the sale has not started'],
  [Outcome.ENDED]: [410, 'the sale has ended'],
};

// Why a payment was not taken (take no money, or give it back): confirm
// tells an expired order from a cancelled or unknown one by itself.
const UNPAID = {
  [ConfirmOutcome.NO_ITEM]: [404, 'no such sale'],
  [ConfirmOutcome.UNKNOWN_REQUEST]: [404, 'no such order'],
  [ConfirmOutcome.LAPSED]: [410, 'order expired'],
  [ConfirmOutcome.REFUNDED]: [410, 'order cancelled'],
};

async function buildShop(redisUrl) {
  const client = createClient({ url: redisUrl, modules: { seckill } });
  await client.connect();
  const sk = client.seckill;
  const waiting = seckillOf(client); // the calls that can wait for replicas
  const app = Fastify();
  app.addHook('onClose', async () => client.close());

  app.post('/items/:item', async ({ params, query }, reply) => {
    const created = await sk.init(params.item, String(query.stock), { limit: String(query.limit ?? 1) });
    return reply.code(created ? 201 : 200).send({ item: params.item, created });
  });

  app.get('/items/:item', async ({ params }, reply) => {
    const stock = await sk.get(params.item);
    if (stock === null) return reply.code(404).send({ error: 'no such sale' });
    return { item: params.item, stock };
  });

  app.post('/orders/:order', async ({ params: { order }, query: { item, user } }, reply) => {
    let result;
    try {
      result = await sk.deduct(item, user, { requestId: order, hold: String(HOLD_SECONDS) });
    } catch (err) {
      // node-redis gives modules no hook on error replies: typed here.
      if (!(SeckillError.from(err) instanceof RequestIdConflictError)) throw err;
      return reply.code(409).send({ order, error: 'order id already used for another purchase' });
    }
    if (result.outcome === Outcome.BOUGHT) {
      return reply.code(201).send({ order, status: 'held', pay_within_s: HOLD_SECONDS, stock: result.stock });
    }
    const [code, error] = REFUSED[result.outcome];
    return reply.code(code).send({ order, error });
  });

  app.get('/orders/:order', async ({ params: { order }, query: { item } }, reply) => {
    const state = await sk.status(item, order);
    if (state === null) return reply.code(404).send({ order, error: 'no such sale' });
    if (state.status === RequestStatus.UNKNOWN) return reply.code(404).send({ order, error: 'no such order' });
    const payBy = state.status === RequestStatus.HELD ? { pay_by_ms: state.deadline } : {};
    return { order, status: state.status, user: state.user, qty: state.qty, ...payBy };
  });

  app.post('/orders/:order/pay', async ({ params: { order }, query: { item } }, reply) => {
    const { result, durable } = await waiting.confirm(item, order, { waitReplicas: WAIT_REPLICAS });
    if (result === ConfirmOutcome.CONFIRMED || result === ConfirmOutcome.ALREADY_FINAL) {
      // On the master alone: a failover could lose it.
      if (!durable) return reply.code(503).send({ order, error: 'payment not on enough replicas yet, send it again' });
      return { order, status: 'paid' };
    }
    const [code, error] = UNPAID[result];
    return reply.code(code).send({ order, error });
  });

  app.post('/orders/:order/cancel', async ({ params: { order }, query: { item } }, reply) => {
    const { outcome, units } = await sk.refund(item, order);
    if (outcome === RefundOutcome.NO_ITEM) return reply.code(404).send({ order, error: 'no such sale' });
    if (outcome === RefundOutcome.UNKNOWN_REQUEST) return reply.code(404).send({ order, error: 'no such order' });
    // Cancelled before, or expired unpaid: the unit went back once either way.
    return { order, status: 'cancelled', units_returned: units ?? 0 };
  });

  return app;
}

module.exports = { buildShop };

if (require.main === module) {
  buildShop(process.env.SHOP_REDIS_URL ?? 'redis://127.0.0.1:6379')
    .then((app) => app.listen({ host: '127.0.0.1', port: Number(process.env.SHOP_PORT ?? 3000) }))
    .catch((err) => { console.error(err); process.exit(1); });
}
