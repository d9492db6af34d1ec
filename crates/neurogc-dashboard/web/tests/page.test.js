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
  // The badge says it is a replay, not live.
  const replay = await api(page, 'replay');
  assert.equal(replay.source, SEED_CSV);
  assert.equal(replay.speed, 50);
  assert.match(await page.textContent('#conn'), /^replay(ed| ×50): benchmark_lstm_09-02-2026-09-50\.csv$/);
  assert.doesNotMatch(await page.textContent('#conn'), /live/);
  assert.ok(!(await api(page, 'shownCharts')).includes('rss'), 'the seed measured no RSS: no empty chart');
  await page.evaluate(() => window.neurogcDashboard.renderNow());
  await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-replay.png'), fullPage: true });
});

test('idle turns are gaps, not lines; tick labels never repeat', { timeout: 30000 }, async (t) => {
  const dash = await startDashboard();
  const browser = await launchBrowser();
  t.after(async () => { await browser.close(); await dash.stop(); });
  const page = await browser.context.newPage();
  await page.goto(dash.url + '/');
  await page.waitForFunction(() => window.neurogcDashboard?.connection() === 'live', null, { timeout: 10000 });
  assert.equal(await page.textContent('#conn'), 'live');

  // An alternating run: two servers sampled together, each idle (no requests) while the other
  // has the load, in 4 s turns; memory moves by thousandths of a percent.
  const t0 = Math.floor(Date.now() / 1000) - 60;
  const samples = [];
  for (let i = 0; i < 24; i++) {
    const turn = Math.floor(i / 4) % 2;
    for (const [k, server] of ['a', 'b'].entries()) {
      const s = { ...agentSample(server, t0 + i + k * 0.3, i), mem: 0.2 + 0.001 * (i % 7) };
      if (turn !== k) Object.assign(s, { requests: 0, rps: 0, p99: null, p95: null, p50: null });
      samples.push(s);
    }
  }
  assert.equal((await post(dash.url, '/api/metrics', samples)).status, 200);
  await page.waitForFunction(() => window.neurogcDashboard.count() === 48, null, { timeout: 10000 });
  await page.evaluate(() => window.neurogcDashboard.renderNow());

  // Each server's throughput line is drawn only over its own turns: a gap per idle turn, from
  // its last busy sample to its next, and nothing joined across the other server's rows.
  const busy = (k) => samples.filter((s, j) => j % 2 === k && s.requests > 0).map((s) => [s.time, s.rps]);
  assert.deepEqual(await api(page, 'points', 'rps', 'a'), busy(0));
  assert.deepEqual(await api(page, 'points', 'rps', 'b'), busy(1));
  const gaps = Object.fromEntries((await api(page, 'seriesGaps', 'rps')).map((s) => [s.label, s.gaps]));
  // a idles in turns 2, 4 and 6, b in turns 1, 3 and 5: a line starts at its first value and
  // ends at its last, so only the idle turns in between are gaps.
  assert.equal(gaps.a.length, 2, JSON.stringify(gaps.a));
  assert.equal(gaps.b.length, 2, JSON.stringify(gaps.b));
  const near = (x, y) => Math.abs(x - y) < 0.2;
  assert.ok(near(gaps.a[0][0], t0 + 3) && near(gaps.a[0][1], t0 + 8), JSON.stringify(gaps.a[0]));
  assert.ok(near(gaps.b[0][0], t0 + 7.3) && near(gaps.b[0][1], t0 + 12.3), JSON.stringify(gaps.b[0]));
  // The CPU is measured in idle turns too: one unbroken line per server.
  assert.ok((await api(page, 'seriesGaps', 'cpu')).every((s) => s.gaps.length === 0));

  const ticks = await api(page, 'yTicks', 'mem');
  assert.ok(ticks.length >= 2, JSON.stringify(ticks));
  assert.equal(new Set(ticks).size, ticks.length, `repeated tick labels: ${JSON.stringify(ticks)}`);
  assert.ok(ticks.every((v) => /^0\.2\d+$/.test(v)), JSON.stringify(ticks));
  // Byte axes tick at whole binary units, and every label says what its tick is.
  const disk = await api(page, 'yTicks', 'disk');
  assert.ok(disk.length >= 2 && disk.every((v) => /^\d+(\.\d+)? (B|KiB)\/s$/.test(v)), JSON.stringify(disk));
  assert.equal(new Set(disk).size, disk.length, JSON.stringify(disk));
  assert.ok(disk.some((v) => /^[1-9]\d* KiB\/s$/.test(v)), `ticks at whole KiB: ${JSON.stringify(disk)}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-alternating.png'), fullPage: true });
});

test('policy actions: a marker per action in its lane, a tooltip, the list', { timeout: 60000 }, async (t) => {
  const dash = await startDashboard();
  const browser = await launchBrowser();
  t.after(async () => { await browser.close(); await dash.stop(); });
  const page = await browser.context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(dash.url + '/');
  await page.waitForFunction(() => window.neurogcDashboard?.connection() === 'live', null, { timeout: 10000 });

  // Samples without actions add none: ours with an empty policy_action, and the seed's format.
  const t0 = Math.floor(Date.now() / 1000) - 60;
  const quiet = [];
  for (let i = 0; i < 30; i++) quiet.push(agentSample('default', t0 + i, i));
  quiet.push({ server: 'seed', timestamp: t0 + 1, cpu: 1, gc_triggered: 'True' });
  assert.equal((await post(dash.url, '/api/metrics', quiet)).status, 200);
  await page.waitForFunction(() => window.neurogcDashboard.count() === 31, null, { timeout: 10000 });
  await page.evaluate(() => window.neurogcDashboard.renderNow());
  assert.deepEqual(await api(page, 'actions'), []);
  assert.deepEqual(await api(page, 'actionMarkers'), []);
  assert.equal(await page.isVisible('.chart[data-chart="gc"] .actions'), false, 'no list without actions');

  // The scheduler's actions, as the agent reports them (the last of each interval).
  const acts = {
    2: ['set_threshold(2000, 10, 1000000)', 'young collections stay automatic; full collections are the scheduler\'s (rss budget: twice the live heap after the warm-up)', 'threshold', ''],
    5: ['collect(2) -> 160110 in 288.8 ms; gc.freeze()', 'warm-up of 3.0 s over: the warm heap is frozen; no quiet window in 2.00 s (P = 0.00 for 50.0 ms); 1 in flight; predicted pause 50.0 ms', 'freeze', 'freeze'],
    9: ['collect(2) -> 12376 in 17.0 ms', 'due: every 44 requests keeps the pauses out of the p99 or small; not waiting: recent needed collections found a quiet window 15 % of the time; 1 in flight; predicted pause 15.4 ms', 'collect', 'due'],
    12: ['collect(2) -> 10624 in 15.0 ms', 'opportunistic; quiet window: P(no arrival in 16.2 ms) = 1.00; 0 in flight; predicted pause 16.2 ms', 'collect', 'quiet'],
    15: ['collect(2) -> 20480 in 21.3 ms', 'memory grew 64 MiB since the last full collection (live 120 MiB); quiet window: P(no arrival in 20.0 ms) = 0.97; 0 in flight; predicted pause 20.0 ms', 'collect', 'growth'],
    18: ['gc.unfreeze(); collect(2) -> 40000 in 30.1 ms; gc.freeze()', 'stale freeze: rss 400 MiB, 200 MiB at the freeze; no quiet window in 1.00 s (P = 0.10 for 30.0 ms); 2 in flight; predicted pause 30.0 ms', 'refreeze', 'stale'],
    21: ['collect(2) -> 5000 in 40.0 ms', 'guard: rss 300 MiB > budget 200 MiB; forced by the memory guard; 1 in flight; predicted pause 35.0 ms', 'guard', 'guard'],
    24: ['set_threshold(2800, 10, 1000000)', 'young threshold trial: 2800 against at 2000: young pauses 0.20 ms, full 15.00 ms', 'threshold', 'young threshold'],
    // Text, never markup.
    27: ['observing only', '<b>not bold</b> FreeThreaded collector', 'other', ''],
  };
  const samples = [];
  for (let i = 0; i < 30; i++) {
    const s = agentSample('neurogc', t0 + i + 0.5, i);
    if (acts[i]) Object.assign(s, { policy_action: acts[i][0], policy_reason: acts[i][1], policy_actions: i === 9 ? 2 : 1 });
    samples.push(s);
  }
  // Two actions in one pixel column of the lane: one marker, the guard's.
  samples.push({ ...agentSample('neurogc', t0 + 29.5, 29), policy_action: 'collect(2) -> 7 in 1.0 ms',
    policy_reason: 'due: every 44 requests', policy_actions: 1 });
  samples.push({ ...agentSample('neurogc', t0 + 29.51, 29), policy_action: 'collect(2) -> 9 in 2.0 ms',
    policy_reason: 'guard: young generation count 90000 > budget 80000', policy_actions: 1 });
  assert.equal((await post(dash.url, '/api/metrics', samples)).status, 200);
  await page.waitForFunction(() => window.neurogcDashboard.count() === 63, null, { timeout: 10000 });
  await page.evaluate(() => window.neurogcDashboard.renderNow());

  const expected = Object.entries(acts).map(([i, [action, reason, kind, trigger]]) => ({
    time: t0 + Number(i) + 0.5, server: 'neurogc', kind, trigger, action, reason,
    count: Number(i) === 9 ? 2 : 1 }));
  expected.push(
    { time: t0 + 29.5, server: 'neurogc', kind: 'collect', trigger: 'due',
      action: 'collect(2) -> 7 in 1.0 ms', reason: 'due: every 44 requests', count: 1 },
    { time: t0 + 29.51, server: 'neurogc', kind: 'guard', trigger: 'guard',
      action: 'collect(2) -> 9 in 2.0 ms', reason: 'guard: young generation count 90000 > budget 80000', count: 1 });
  assert.deepEqual(await api(page, 'actions', 'neurogc'), expected);
  assert.deepEqual(await api(page, 'actions', 'default'), []);
  assert.deepEqual(await api(page, 'actions', 'seed'), []);

  // Markers: one per action, in the neurogc lane (below the default lane: servers top down),
  // the two in one pixel column drawn as one.
  const markers = await api(page, 'actionMarkers');
  assert.deepEqual(markers.map((m) => [m.time, m.server, m.kind]),
    expected.slice(0, -2).map((a) => [a.time, a.server, a.kind]).concat([[t0 + 29.51, 'neurogc', 'guard']]));
  assert.ok(markers.every((m) => m.y === markers[0].y), 'one lane');
  assert.ok(markers.every((m, i) => i === 0 || m.x > markers[i - 1].x + 5), 'separate columns');

  // The list: most recent first, action and reason as text.
  const rows = await page.$$eval('.chart[data-chart="gc"] .actions li',
    (lis) => lis.map((li) => ({ kind: li.dataset.kind, srv: li.querySelector('.srv').textContent,
      act: li.querySelector('.act').textContent, why: li.querySelector('.why').textContent,
      bold: li.querySelectorAll('b').length })));
  assert.deepEqual(rows.map((r) => [r.kind, r.srv, r.act, r.why]),
    expected.slice().reverse().map((a) => [a.kind, a.server, a.action, a.reason]));
  assert.ok(rows.every((r) => r.bold === 0), 'reasons are not markup');
  const listText = await page.textContent('.chart[data-chart="gc"] .actions');
  assert.match(listText, /collect · due\s*collect\(2\) -> 12376 in 17\.0 ms/);
  assert.match(listText, /due: every 44 requests keeps the pauses out of the p99 or small/);
  assert.match(listText, /the last of 2 in the interval/);

  // Hover: the action and its reason in the tooltip.
  const over = await page.$('.chart[data-chart="gc"] .u-over');
  const box = await over.boundingBox();
  const due = markers.find((m) => m.time === t0 + 9.5);
  await page.mouse.move(box.x + due.x, box.y + due.y);
  await page.waitForSelector('.chart[data-chart="gc"] .action-tip:not([hidden])', { timeout: 5000 });
  const tip = await page.textContent('.chart[data-chart="gc"] .action-tip');
  assert.match(tip, /neurogc/);
  assert.match(tip, /collect\(2\) -> 12376 in 17\.0 ms/);
  assert.match(tip, /due: every 44 requests keeps the pauses out of the p99 or small/);
  await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-actions.png') });
  // Away from any action: no tooltip.
  await page.mouse.move(box.x + (due.x + markers[markers.indexOf(due) + 1].x) / 2, box.y + due.y);
  await page.waitForSelector('.chart[data-chart="gc"] .action-tip', { state: 'hidden', timeout: 5000 });

  // The list is bounded: 60 more actions, the newest 50 listed.
  const many = [];
  for (let i = 0; i < 60; i++) {
    many.push({ ...agentSample('many', t0 + 30 + i * 0.25, i), policy_action: `set_threshold(${1000 + i}, 10, 10)`,
      policy_reason: `young threshold trial: ${1000 + i}`, policy_actions: 1 });
  }
  assert.equal((await post(dash.url, '/api/metrics', many)).status, 200);
  await page.waitForFunction(() => window.neurogcDashboard.count('many') === 60, null, { timeout: 10000 });
  await page.evaluate(() => window.neurogcDashboard.renderNow());
  assert.equal((await api(page, 'actions', 'many')).length, 60);
  const listed = await page.$$eval('.chart[data-chart="gc"] .actions li .act', (e) => e.map((x) => x.textContent));
  assert.equal(listed.length, 50);
  assert.equal(listed[0], 'set_threshold(1059, 10, 10)');
  assert.equal(listed[49], 'set_threshold(1010, 10, 10)');
  assert.deepEqual(pageErrors, []);
});
