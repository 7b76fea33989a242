'use strict';
// Starts real redis-server (or valkey-server) processes for the tests: one
// standalone server (with extra settings if asked), a replica of one, or a
// cluster of three masters. Every process is stopped
// by stop(), and also when the test process exits for any reason it can catch.
//
//   SECKILL_MODULE  the module's .so (required)
//   SECKILL_SERVER  the server binary (default: redis-server)

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { Socket } = require('node:net');

const MODULE = process.env.SECKILL_MODULE;
const SERVER = process.env.SECKILL_SERVER || 'redis-server';

if (!MODULE) {
  throw new Error('SECKILL_MODULE must name the seckill module (.so) to load into the test servers');
}
if (!fs.existsSync(MODULE)) {
  throw new Error(`SECKILL_MODULE=${MODULE} does not exist`);
}

const running = new Set();

function killAll() {
  for (const proc of running) {
    try { proc.kill('SIGKILL'); } catch { /* already gone */ }
  }
  running.clear();
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => { killAll(); process.exit(128 + os.constants.signals[signal]); });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A port that is free now, and (for cluster nodes) whose bus port (+10000) is
// free too; ports stay within 20000-32000.
const taken = new Set();
function portIsFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
async function freePort(withBus) {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = withBus
      ? 20000 + Math.floor(Math.random() * 2000)
      : 20000 + Math.floor(Math.random() * 12000);
    if (taken.has(port) || (withBus && taken.has(port + 10000))) continue;
    if (!(await portIsFree(port))) continue;
    if (withBus && !(await portIsFree(port + 10000))) continue;
    taken.add(port);
    if (withBus) taken.add(port + 10000);
    return port;
  }
  throw new Error('no free port found in 20000-32000');
}

// A minimal RESP2 client for administration (cluster setup, INFO, ACL), so
// that setting servers up does not depend on the libraries under test.
function rawCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const sock = new Socket();
    let buf = Buffer.alloc(0);
    sock.setTimeout(10000);
    sock.once('timeout', () => { sock.destroy(); reject(new Error(`timeout on port ${port}: ${args.join(' ')}`)); });
    sock.once('error', reject);
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const parsed = parseResp(buf, 0);
      if (parsed) {
        sock.end();
        if (parsed.value instanceof Error) reject(parsed.value); else resolve(parsed.value);
      }
    });
    sock.connect(port, '127.0.0.1', () => {
      let out = `*${args.length}\r\n`;
      for (const a of args) {
        const s = String(a);
        out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
      }
      sock.write(out);
    });
  });
}

function parseResp(buf, pos) {
  const end = buf.indexOf('\r\n', pos);
  if (end < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('utf8', pos + 1, end);
  const next = end + 2;
  switch (type) {
    case '+': return { value: line, pos: next };
    case '-': return { value: new Error(line), pos: next };
    case ':': return { value: Number(line), pos: next };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, pos: next };
      if (buf.length < next + len + 2) return null;
      return { value: buf.toString('utf8', next, next + len), pos: next + len + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, pos: next };
      const items = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const item = parseResp(buf, p);
        if (!item) return null;
        items.push(item.value);
        p = item.pos;
      }
      return { value: items, pos: p };
    }
    default:
      throw new Error(`unexpected RESP type ${type}`);
  }
}

class Server {
  constructor(port, dir, proc) {
    this.port = port;
    this.dir = dir;
    this.proc = proc;
  }

  command(...args) {
    return rawCommand(this.port, ...args);
  }

  async info(section) {
    const text = await this.command('INFO', section);
    const out = {};
    for (const line of text.split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
    }
    return out;
  }

  // errorstat_MOVED:count=N (absent = 0)
  async movedCount() {
    const stats = await this.info('errorstats');
    const v = stats.errorstat_MOVED;
    if (!v) return 0;
    const m = /count=(\d+)/.exec(v);
    return m ? Number(m[1]) : 0;
  }

  async stop() {
    if (!running.has(this.proc)) return;
    running.delete(this.proc);
    const exited = new Promise((resolve) => this.proc.once('exit', resolve));
    this.proc.kill('SIGKILL');
    await exited;
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// `args`: more settings for the server, e.g. ['--min-replicas-to-write', '1'].
async function startServer({ cluster = false, args: extra = [] } = {}) {
  const port = await freePort(cluster);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seckill-node-'));
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--save', '',
    '--appendonly', 'no',
    '--dir', dir,
    '--loadmodule', path.resolve(MODULE),
    '--logfile', path.join(dir, 'server.log'),
  ];
  if (cluster) {
    args.push('--cluster-enabled', 'yes',
      '--cluster-config-file', path.join(dir, 'nodes.conf'),
      '--cluster-node-timeout', '5000');
  }
  args.push(...extra);
  const proc = spawn(SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(proc);
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  let exitCode = null;
  proc.once('exit', (code) => { exitCode = code; });
  const server = new Server(port, dir, proc);
  for (let i = 0; i < 200; i++) {
    if (exitCode !== null) break;
    try {
      if ((await server.command('PING')) === 'PONG') return server;
    } catch { /* not up yet */ }
    await sleep(50);
  }
  let log = '';
  try { log = fs.readFileSync(path.join(dir, 'server.log'), 'utf8'); } catch { /* none */ }
  await server.stop();
  throw new Error(`${SERVER} did not start on port ${port}: ${stderr}\n${log.slice(-2000)}`);
}

// A replica of `master`, returned once its first sync is done (the link is
// up and the replica has loaded what the master had).
async function startReplica(master, { args = [] } = {}) {
  // The first sync at once (a diskless sync waits 5 s for more replicas).
  await master.command('CONFIG', 'SET', 'repl-diskless-sync-delay', '0');
  const replica = await startServer({ args: ['--replicaof', '127.0.0.1', String(master.port), ...args] });
  try {
    const deadline = Date.now() + 30000;
    for (;;) {
      const info = await replica.info('replication');
      if (info.master_link_status === 'up' && info.master_sync_in_progress === '0') break;
      if (Date.now() > deadline) throw new Error(`the replica on port ${replica.port} did not sync with ${master.port} in 30 s`);
      await sleep(50);
    }
    return replica;
  } catch (err) {
    await replica.stop();
    throw err;
  }
}

class Cluster {
  constructor(nodes) {
    this.nodes = nodes;
  }

  get rootNodes() {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  }

  // Sum over all masters of errorstat_MOVED.
  async movedCount() {
    let sum = 0;
    for (const n of this.nodes) sum += await n.movedCount();
    return sum;
  }

  async stop() {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

// Three masters, no replicas: slots split in three ranges, CLUSTER MEET, then
// wait until every node reports cluster_state:ok and all agree on the slots.
async function startCluster() {
  const nodes = [];
  try {
    for (let i = 0; i < 3; i++) nodes.push(await startServer({ cluster: true }));
    const ranges = [[0, 5460], [5461, 10922], [10923, 16383]];
    for (let i = 0; i < 3; i++) {
      await nodes[i].command('CLUSTER', 'ADDSLOTSRANGE', ranges[i][0], ranges[i][1]);
    }
    for (let i = 1; i < 3; i++) {
      await nodes[i].command('CLUSTER', 'MEET', '127.0.0.1', nodes[0].port);
    }
    const deadline = Date.now() + 60000;
    for (;;) {
      if (await clusterReady(nodes)) break;
      if (Date.now() > deadline) throw new Error('the cluster did not become ready in 60 s');
      await sleep(100);
    }
    return new Cluster(nodes);
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw err;
  }
}

async function clusterReady(nodes) {
  const views = [];
  for (const n of nodes) {
    const info = await n.command('CLUSTER', 'INFO');
    if (!/cluster_state:ok/.test(info)) return false;
    const slots = await n.command('CLUSTER', 'SLOTS');
    const view = slots
      .map((s) => `${s[0]}-${s[1]}@${s[2][1]}`)
      .sort()
      .join(',');
    let covered = 0;
    for (const s of slots) covered += s[1] - s[0] + 1;
    if (covered !== 16384 || slots.length !== 3) return false;
    views.push(view);
  }
  return views.every((v) => v === views[0]);
}

module.exports = { startServer, startReplica, startCluster, rawCommand, sleep, SERVER, MODULE };
