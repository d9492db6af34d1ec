// The page in a real headless Chromium: samples streamed into the real binary end up in the
// charts, themes switch and are remembered, the page reconnects by itself, replay works.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  ARTIFACTS, REPO, agentSample, freePort, launchBrowser, post, startDashboard, waitFor,
} = require('./helpers');

// The seed's published datasets, committed in the repository.
const SEED_DIR = path.join(REPO, 'data', 'seed-neurogc');
const SEED_CSV = path.join(SEED_DIR, 'benchmark_lstm_09-02-2026-09-50.csv');

fs.mkdirSync(ARTIFACTS, { recursive: true });

const api = (page, fn, ...args) => page.evaluate(
  ([name, a]) => window.neurogcDashboard[name](...a), [fn, args]);

test('streamed samples end up in the charts; themes; reconnect', { timeout: 60000 }, async (t) => {
  const port = await freePort();
  let dash = await startDashboard([], { port });
  const browser = await launchBrowser();
  t.after(async () => { await browser.close(); await dash.stop(); });

  const t0 = Math.floor(Date.now() / 1000) - 60;
  const posted = { with_gc: [], without_gc: [], seed: [] };
  const agentAt = (server, i) => {
    const s = agentSample(server, t0 + i, i + (server === 'without_gc' ? 3 : 0));
    posted[server].push(s);
    return s;
  };
  // The seed's format: eleven columns, `timestamp`, booleans as strings.
  const seedAt = (i) => {
    const s = { server: 'seed', timestamp: t0 + i + 0.5, cpu: 20 + i, mem: 50, disk_read: 0,
      disk_write: 0, net_sent: 10, net_recv: 10, rps: 12, p95: 300 + i, p99: 400 + i,
      gc_triggered: i % 4 === 0 ? 'True' : 'False' };
    posted.seed.push(s);
    return s;
  };

  // Ten seconds of history before the page opens: it must get them on connect.
  for (let i = 0; i < 10; i++) {
    const r = await post(dash.url, '/api/metrics', [agentAt('with_gc', i), agentAt('without_gc', i)]);
    assert.equal(r.status, 200, r.body);
  }
  const page = await browser.context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(dash.url + '/');
  await page.waitForFunction(() => window.neurogcDashboard?.connection() === 'live', null, { timeout: 10000 });

  // Then live: single samples, arrays and {"samples": [...]}, and a bad request in between.
  for (let i = 10; i < 40; i++) {
    assert.equal((await post(dash.url, '/api/metrics', agentAt('with_gc', i))).status, 200);
    assert.equal((await post(dash.url, '/api/metrics', { samples: [agentAt('without_gc', i)] })).status, 200);
    assert.equal((await post(dash.url, '/api/metrics', [seedAt(i)])).status, 200);
    if (i === 20) {
      const bad = await post(dash.url, '/api/metrics', { server: 'with_gc', time: 'soon' });
      assert.equal(bad.status, 422);
    }
  }
  const total = posted.with_gc.length + posted.without_gc.length + posted.seed.length;
  await page.waitForFunction((n) => window.neurogcDashboard.count() === n, total, { timeout: 10000 });
  await page.evaluate(() => window.neurogcDashboard.renderNow());

  assert.deepEqual(await api(page, 'servers'), ['with_gc', 'without_gc', 'seed']);
  assert.deepEqual(await api(page, 'charts'), ['gc', 'cpu', 'mem', 'rss', 'disk', 'net', 'rps', 'latency']);
  for (const server of ['with_gc', 'without_gc']) {
    const ours = posted[server];
    assert.deepEqual(await api(page, 'points', 'cpu', server), ours.map((s) => [s.time, s.cpu]));
    assert.deepEqual(await api(page, 'points', 'p99', server), ours.map((s) => [s.time, s.p99]));
    assert.deepEqual(await api(page, 'points', 'rss_bytes', server),
      ours.map((s) => [s.time, s.rss_bytes / 1048576]));
    // GC timeline: a gen-2 marker (sized by its pause) exactly where a full collection ran.
    assert.deepEqual(await api(page, 'points', 'gc2', server),
      ours.filter((s) => s.gc2_collections > 0).map((s) => [s.time, s.gc2_pause_ms_max]));
    assert.equal((await api(page, 'points', 'gc0', server)).length, ours.length);
  }
  const seed = posted.seed;
  assert.deepEqual(await api(page, 'points', 'p95', 'seed'), seed.map((s) => [s.timestamp, s.p95]));
  assert.deepEqual(await api(page, 'points', 'gcany', 'seed'),
    seed.filter((s) => s.gc_triggered === 'True').map((s) => [s.timestamp, 0]));
  assert.deepEqual(await api(page, 'points', 'rss_bytes', 'seed'), [], 'the seed has no RSS column');

  // What uPlot itself holds, per series.
  const cpuSeries = await api(page, 'seriesPoints', 'cpu');
  assert.deepEqual(cpuSeries, [
    { label: 'with_gc', points: 40 }, { label: 'without_gc', points: 40 }, { label: 'seed', points: 30 }]);
  const latency = await api(page, 'seriesPoints', 'latency');
  assert.equal(latency.length, 6, 'p99 and p95 per server');

  // Summary cards.
  const card = (server, k) => page.textContent(`.card[data-server="${server}"] [data-k="${k}"]`);
  const gcEvents = posted.with_gc.reduce(
    (n, s) => n + s.gc0_collections + s.gc1_collections + s.gc2_collections, 0);
  assert.equal(await card('with_gc', 'gc'), String(gcEvents));
  assert.equal(await card('with_gc', 'p99'), `${posted.with_gc.at(-1).p99.toFixed(2)} ms`);
  assert.equal(await card('with_gc', 'peak'), '89.0 MiB');
  assert.equal(await card('seed', 'gc'), String(seed.filter((s) => s.gc_triggered === 'True').length));
  assert.equal(await card('seed', 'peak'), '50.0 %');

  const stats = await api(page, 'stats');
  assert.equal(stats.history, 20);
  assert.equal(stats.live, total - 20);
  assert.equal(stats.seqGaps, 0);
  await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-light.png'), fullPage: true });

  // Dark theme, remembered across a reload; the reload shows the past from history.
  await page.click('#theme');
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  await page.reload();
  await page.waitForFunction((n) => window.neurogcDashboard?.count() === n, total, { timeout: 10000 });
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  await page.evaluate(() => window.neurogcDashboard.renderNow());
  await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-dark.png'), fullPage: true });

  // The dashboard goes away: the page says so, retries, and picks up a new one by itself.
  await dash.stop();
  await page.waitForFunction(() => window.neurogcDashboard.connection() !== 'live', null, { timeout: 5000 });
  assert.match(await page.textContent('#conn'), /retrying|connecting/);
  dash = await startDashboard([], { port });
  await page.waitForFunction(() => window.neurogcDashboard.connection() === 'live', null, { timeout: 15000 });
  assert.equal((await post(dash.url, '/api/metrics', agentSample('after_restart', t0 + 100, 1))).status, 200);
  await page.waitForFunction(() => window.neurogcDashboard.servers().join() === 'after_restart', null,
    { timeout: 5000 });
  assert.deepEqual(pageErrors, []);
});

test('--replay plays the seed benchmark CSV into the page', { timeout: 30000 }, async (t) => {
  const dash = await startDashboard(['--replay', SEED_CSV, '--speed', '50']);
  const browser = await launchBrowser();
  t.after(async () => { await browser.close(); await dash.stop(); });
  const page = await browser.context.newPage();
  await page.goto(dash.url + '/');
  // 70 rows, 35 per server, spanning ~70 s: ~1.4 s at 50×.
  await page.waitForFunction(() => window.neurogcDashboard?.count() === 70, null, { timeout: 15000 });
  assert.deepEqual((await api(page, 'servers')).sort(), ['with_gc', 'without_gc']);
  assert.equal((await api(page, 'points', 'p99', 'with_gc')).length, 35);
  assert.match(dash.output(), /replay: 70 samples of 2 \(.*\) from 1 file/);
  assert.ok(!(await api(page, 'shownCharts')).includes('rss'), 'the seed measured no RSS: no empty chart');
  await page.evaluate(() => window.neurogcDashboard.renderNow());
  await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-replay.png'), fullPage: true });
});
