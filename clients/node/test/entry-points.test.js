'use strict';
// The package as users load it: require and import of each entry point give
// the same objects, and the hand-written TypeScript declarations type real
// usage (tsc --noEmit on test/types).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const fs = require('node:fs');

test('require and import of every entry point give the same objects', async () => {
  const cjs = require('seckill-client');
  const esm = await import('seckill-client');
  for (const name of Object.keys(cjs)) assert.equal(esm[name], cjs[name], name);
  assert.deepEqual(Object.keys(esm).sort(), Object.keys(cjs).sort());
  const nodeRedis = await import('seckill-client/node-redis');
  assert.equal(nodeRedis.seckill, cjs.seckill);
  assert.equal(require('seckill-client/node-redis').seckill, cjs.seckill);
  // The root installSeckill hands each client to its kind's installer.
  const ioredis = await import('seckill-client/ioredis');
  assert.equal(ioredis.installSeckill, require('seckill-client/ioredis').installSeckill);
  const glide = await import('seckill-client/glide');
  assert.equal(glide.installSeckill, require('seckill-client/glide').installSeckill);
  assert.equal(typeof cjs.installSeckill, 'function');
  assert.throws(() => cjs.installSeckill({}), /ioredis .*or a Valkey GLIDE client or batch/);
});

test('the node-redis module has one command per SECKILL command, and no more', () => {
  const { seckill } = require('seckill-client');
  const names = ['init', 'deduct', 'confirm', 'release', 'refund', 'order', 'confirmOrder', 'refundOrder', 'add', 'window',
    'stream', 'get', 'bought', 'holds', 'info', 'status', 'scan', 'take', 'settle', 'transfers',
    'variants'];
  assert.deepEqual(Object.keys(seckill).sort(), [...names, ...names.map((n) => n.toUpperCase())].sort());
  for (const n of names) {
    assert.equal(typeof seckill[n].parseCommand, 'function');
    assert.equal(seckill[n].IS_READ_ONLY, ['get', 'bought', 'holds', 'info', 'status', 'scan', 'transfers', 'variants'].includes(n));
  }
});

test('the TypeScript declarations type real usage', { timeout: 300000 }, () => {
  const tsc = path.join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');
  assert.ok(fs.existsSync(tsc), 'typescript is a devDependency (npm ci)');
  execFileSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { stdio: 'pipe' });
});
