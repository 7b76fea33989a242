'use strict';
// The Node.js client against contract/seckill.json, the file the module's
// tests and the other client libraries' tests read too: every error the
// contract can provoke, sent to a real server through node-redis, ioredis
// and Valkey GLIDE (which rewords error replies) and typed by this library into the contract's kind, code, text and
// retryability; the outcome names and codes of DEDUCT, CONFIRM, REFUND and SETTLE;
// INFO's fields.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { createClient } = require('redis');
const Redis = require('ioredis');
const { GlideClient, Logger } = require('@valkey/valkey-glide');
const { startServer } = require('./helpers/servers');
const {
  ErrorKind, SeckillError, Outcome, ConfirmOutcome, RefundOutcome, SettleOutcome, DeductResult, RefundResult, ItemInfo,
} = require('..');
const { parseConfirm, parseSettle } = require('../lib/values');

const CONTRACT = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../contract/seckill.json'), 'utf8'));

let server;
const closers = [];

before(async () => {
  // A server of this file's own: some cases change its settings or role for a moment.
  server = await startServer();
});

after(async () => {
  for (const close of closers) {
    try { await close(); } catch { /* closed */ }
  }
  if (server) await server.stop();
});

// Each raw client as `send(args)`, resolving to the reply or rejecting with
// the client's own error: what the library's classifier is given.
async function nodeRedis(options = {}) {
  const client = createClient({
    socket: { host: '127.0.0.1', port: server.port, reconnectStrategy: false },
    ...options,
  });
  client.on('error', () => {});
  await client.connect();
  closers.push(() => client.destroy());
  return (args) => client.sendCommand(args);
}

async function ioredis(options = {}) {
  const client = new Redis({
    host: '127.0.0.1',
    port: server.port,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    lazyConnect: true,
    ...options,
  });
  client.on('error', () => {});
  await client.connect();
  closers.push(() => client.disconnect());
  return (args) => client.call(...args);
}

async function glide({ username, password } = {}) {
  Logger.setLoggerConfig('error'); // not a warning line for each error reply
  const client = await GlideClient.createClient({
    addresses: [{ host: '127.0.0.1', port: server.port }],
    ...(username ? { credentials: { username, password } } : {}),
  });
  closers.push(() => client.close());
  return (args) => client.customCommand(args);
}

const CLIENTS = { 'node-redis': nodeRedis, ioredis, glide };

const substitute = (args, key, n) => args.map((a) => a.replaceAll('$KEY', key).replaceAll('$N', String(n)));

// Setup, trigger, cleanup; resolves to { reply } or { error }. The cleanup
// runs whatever the trigger did, so the server stays fresh for the next case.
async function provoke({ connect, send, admin }, kase, key) {
  for (const args of kase.setup ?? []) await admin(substitute(args, key));
  if (kase.setup_repeated) {
    const { times, command } = kase.setup_repeated;
    const sent = [];
    for (let n = 0; n < times; n++) sent.push(admin(substitute(command, key, n)));
    await Promise.all(sent);
  }
  let outcome;
  try {
    let as = send;
    if (kase.trigger_as) {
      as = await connect({ username: substitute([kase.trigger_as.user], key)[0], password: kase.trigger_as.password });
    }
    outcome = { reply: await as(substitute(kase.trigger, key)) };
  } catch (error) {
    outcome = { error };
  } finally {
    for (const args of kase.cleanup ?? []) await admin(substitute(args, key));
  }
  return outcome;
}

test('the kinds are the contract\'s', () => {
  assert.deepEqual(Object.values(ErrorKind).sort(), CONTRACT.kinds.map((k) => k.name));
  const unavailable = CONTRACT.kinds.find((k) => k.name === 'UNAVAILABLE');
  for (const code of unavailable.server_codes) {
    assert.equal(SeckillError.fromReplyText(`${code} any text`).kind, ErrorKind.UNAVAILABLE, code);
  }
});

test('every contract text is classified as its kind, provocable or not', () => {
  for (const error of CONTRACT.errors) {
    const typed = SeckillError.fromReplyText(error.text ?? error.template);
    assert.ok(typed, `${error.name} left untyped`);
    assert.equal(typed.kind, error.kind, error.name);
    assert.equal(typed.code, error.code, error.name);
    assert.equal(typed.retryable, error.retryable, error.name);
  }
});

for (const [name, connect] of Object.entries(CLIENTS)) {
  test(`every provocable error is typed as the contract says (${name})`, async () => {
    const via = { connect, send: await connect(), admin: await nodeRedis() };
    let provoked = 0;
    for (const error of CONTRACT.errors.filter((e) => e.provoke)) {
      const { reply, error: raw } = await provoke(via, error.provoke, `contract-${name}-${error.name}`);
      assert.ok(raw, `${error.name} replied ${reply}`);
      const typed = SeckillError.from(raw);
      assert.ok(typed instanceof SeckillError, `${error.name} left untyped: ${raw && raw.message}`);
      assert.equal(typed.kind, error.kind, error.name);
      assert.equal(typed.code, error.code, error.name);
      assert.equal(typed.retryable, error.retryable, error.name);
      assert.ok(
        [error.text, ...(error.other_texts ?? [])].includes(`${typed.code} ${typed.message}`),
        `${error.name}: typed as ${typed.code} ${typed.message}`,
      );
      provoked += 1;
    }
    assert.ok(provoked >= 30, `only ${provoked} errors provoked`);
  });
}

const TYPED = {
  'SECKILL.DEDUCT': { names: Outcome, decode: (reply) => DeductResult.fromReply(reply).outcome },
  'SECKILL.CONFIRM': { names: ConfirmOutcome, decode: parseConfirm },
  'SECKILL.REFUND': { names: RefundOutcome, decode: (reply) => RefundResult.fromReply(reply).outcome },
  'SECKILL.SETTLE': { names: SettleOutcome, decode: parseSettle },
};

test('outcome names and codes are the contract\'s', () => {
  assert.deepEqual(Object.keys(CONTRACT.outcomes).sort(), Object.keys(TYPED).sort());
  for (const [command, { names, decode }] of Object.entries(TYPED)) {
    const listed = CONTRACT.outcomes[command];
    assert.deepEqual(Object.values(names).sort(), listed.map((o) => o.name).sort(), command);
    for (const outcome of listed) assert.equal(decode(outcome.code), outcome.name, `${command} ${outcome.code}`);
  }
});

for (const [name, connect] of Object.entries(CLIENTS)) {
  test(`every outcome is decoded as the contract names it (${name})`, async () => {
    const via = { connect, send: await connect(), admin: await nodeRedis() };
    for (const [command, listed] of Object.entries(CONTRACT.outcomes)) {
      for (const outcome of listed) {
        const kase = outcome.provoke;
        const { reply, error } = await provoke(via, kase, `contract-${name}-${command}-${outcome.name}`);
        assert.equal(error, undefined, `${command} ${outcome.name}`);
        assert.equal(TYPED[command].decode(reply), outcome.name, `${command} ${outcome.name}`);
        if (command === 'SECKILL.DEDUCT') {
          assert.equal(DeductResult.fromReply(reply).stock, outcome.name === 'BOUGHT' ? kase.reply : null);
        }
        if (command === 'SECKILL.REFUND') {
          assert.equal(RefundResult.fromReply(reply).units, outcome.name === 'REFUNDED' ? kase.reply : null);
        }
      }
    }
  });
}

const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

test('ItemInfo reads the contract\'s fields', async () => {
  const fields = CONTRACT.info_fields;
  for (const RESP of [2, 3]) {
    const send = await nodeRedis({ RESP });
    await send(['SECKILL.INIT', '{contract}', '10', 'STREAM', '{contract}:orders']);
    const raw = await send(['SECKILL.INFO', '{contract}']);
    // Field, value, ... under RESP2; a map, in the server's order, under RESP3.
    let sent;
    if (Array.isArray(raw)) sent = raw.filter((_, i) => i % 2 === 0);
    else sent = raw instanceof Map ? [...raw.keys()] : Object.keys(raw);
    assert.deepEqual(sent.map(String), fields.map((f) => f.name), `RESP${RESP}`);
    assert.equal(ItemInfo.fromReply(raw).stream, '{contract}:orders');
    assert.deepEqual(Object.keys(ItemInfo.fromReply(raw)), fields.map((f) => camel(f.name)));
  }
  // Each field is read from the field of its name: every one gets a value
  // of its own, the flags both ways.
  for (const flag of [0, 1]) {
    const reply = [];
    const expected = {};
    fields.forEach((f, i) => {
      const [value, read] = { integer: [100 + i, 100 + i], flag: [flag, flag === 1], 'key or nil': ['s', 's'] }[f.type];
      reply.push(f.name, value);
      expected[camel(f.name)] = read;
    });
    assert.deepEqual({ ...ItemInfo.fromReply(reply) }, expected);
  }
});
