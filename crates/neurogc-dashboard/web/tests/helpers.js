// Shared by the browser tests: the real `neurogc dashboard` binary, headless Debian Chromium
// driven by playwright-core, and a keep-alive HTTP client. Everything targets 127.0.0.1.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');

const REPO = path.resolve(__dirname, '../../../..');
const BIN = process.env.NEUROGC_BIN || path.resolve(__dirname, '../../../../target/release/neurogc');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO, 'artifacts', 'dashboard');

/** Starts `neurogc dashboard ARGS` and resolves once it prints its URL. */
function startDashboard(args = [], { port = 0 } = {}) {
  if (!fs.existsSync(BIN)) {
    throw new Error(`neurogc binary not found at ${BIN} (build it, or set NEUROGC_BIN)`);
  }
  // The crate's `dashboard` example is the same command without the CLI around it.
  const sub = path.basename(BIN) === 'dashboard' ? [] : ['dashboard'];
  const child = spawn(BIN, [...sub, '--port', String(port), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`dashboard did not start in 10 s: ${out}${err}`)), 10000);
    function fail(e) { clearTimeout(timer); child.kill('SIGKILL'); reject(e); }
    child.on('exit', (code) => fail(new Error(`dashboard exited with ${code}: ${out}${err}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/http:\/\/(127\.0\.0\.1:\d+)\//);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({
          url: `http://${m[1]}`,
          port: Number(m[1].split(':')[1]),
          child,
          output: () => out + err,
          stop: () => stopProcess(child),
        });
      }
    });
  });
}

/** SIGINT (the dashboard's Ctrl-C path), then SIGKILL if it has not exited in 5 s. */
function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', (code) => { clearTimeout(kill); resolve(code); });
    child.kill('SIGINT');
  });
}

/** A free loopback port (for tests that restart the dashboard on the same port). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Headless Chromium with a fresh profile; `close()` removes the profile. */
async function launchBrowser() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'neurogc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      // A page the test itself serves counts as public: it could not open the local WebSocket.
      ...(process.env.NEUROGC_WEB_FROM_DISK ? ['--disable-features=LocalNetworkAccessChecks'] : [])],
    viewport: { width: 1400, height: 1000 },
    timeout: 30000,
  });
  if (process.env.NEUROGC_WEB_FROM_DISK) await serveWebFromDisk(context);
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

// The binary embeds the page at compile time; with NEUROGC_WEB_FROM_DISK=1 the browser gets
// web/src/ from disk instead, so work on the page needs no rebuild (a final run should not set it).
const WEB_SRC = path.resolve(__dirname, '../src');
const FROM_DISK = { '/': ['index.html', 'text/html'], '/index.html': ['index.html', 'text/html'],
  '/app.js': ['app.js', 'text/javascript'], '/style.css': ['style.css', 'text/css'] };

async function serveWebFromDisk(context) {
  await context.route((url) => url.hostname === '127.0.0.1' && url.pathname in FROM_DISK,
    (route) => {
      const [file, contentType] = FROM_DISK[new URL(route.request().url()).pathname];
      return route.fulfill({ status: 200, contentType, body: fs.readFileSync(path.join(WEB_SRC, file)) });
    });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/** POSTs a JSON body; resolves {status, body}. */
function post(url, pathName, payload, { contentType = 'application/json' } = {}) {
  const body = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  const u = new URL(pathName, url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search,
      method: 'POST', agent, timeout: 10000,
      headers: { 'content-type': contentType, 'content-length': body.length } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error(`POST ${pathName} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function getJson(url, pathName) {
  const res = await fetch(new URL(pathName, url));
  return res.json();
}

/** Polls `fn` until it returns a truthy value; throws with `what` after `timeoutMs`. */
async function waitFor(fn, what, timeoutMs = 15000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A full agent sample (our CSV schema) for `server` at unix time `t`, deterministic in `i`. */
function agentSample(server, t, i) {
  const gen2 = i % 10 === 5;
  return {
    server, time: t, cpu: 10 + (i % 7) * 3, mem: 1 + (i % 5) * 0.1, disk_read: 0,
    disk_write: 1000 * (i % 4), net_sent: 5000 + 100 * i, net_recv: 4000 + 50 * i,
    rps: 40 + (i % 9), p95: 4 + (i % 3), p99: 6 + (i % 4) + (gen2 ? 20 : 0), gc_triggered: true,
    interval_s: 1, pid: 1000, rss_bytes: (50 + i) * 1048576, requests: 40, errors: 0,
    in_flight: 1, p50: 2, max_latency: 30,
    gc0_collections: 20, gc0_collected: 1000, gc0_uncollectable: 0, gc0_pause_ms_sum: 2,
    gc0_pause_ms_max: 0.2,
    gc1_collections: i % 3 === 0 ? 1 : 0, gc1_collected: 100, gc1_uncollectable: 0,
    gc1_pause_ms_sum: 0.6, gc1_pause_ms_max: 0.6,
    gc2_collections: gen2 ? 1 : 0, gc2_collected: gen2 ? 5000 : 0, gc2_uncollectable: 0,
    gc2_pause_ms_sum: gen2 ? 18 : 0, gc2_pause_ms_max: gen2 ? 18 : 0,
    gc_count0: 100, gc_count1: 3, gc_count2: 1, gc_enabled: true, policy: server,
    policy_actions: 0, policy_action: '', policy_reason: '',
  };
}

function percentile(values, p) {
  if (!values.length) return null;
  const s = Float64Array.from(values).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

module.exports = {
  ARTIFACTS, BIN, REPO, agentSample, freePort, getJson, launchBrowser, percentile, post,
  startDashboard, stopProcess, waitFor,
};
