// NeuroGC dashboard page: a WebSocket client that keeps the recent window of samples in one
// time-aligned table and draws it with uPlot. No framework, no build step, no network beyond the
// dashboard itself.
//
// Data model: one row per sample, sorted by sample time. `xs` holds the times; every server has
// one column per metric, holding its own value on its rows and `undefined` on the others' rows,
// so one array set feeds every chart (uPlot wants aligned columns). uPlot joins a line across
// `undefined` (another server's row) and breaks it at `null` (this server measured nothing:
// latency and throughput of an interval without requests, e.g. its idle turn in an alternating
// run), so a line shows only what its server did.
//
// For tests and tools the page exposes `window.neurogcDashboard` (documented in docs/dashboard.md).
'use strict';
(function () {
  // What to chart. `key` is a sample field; `scale` converts it to the chart's unit.
  const CHARTS = [
    { id: 'cpu', title: 'CPU', unit: '% of one core', fields: [{ key: 'cpu' }] },
    { id: 'mem', title: 'Memory', unit: '% of machine', fields: [{ key: 'mem' }] },
    { id: 'rss', title: 'Resident set size', unit: 'MiB',
      fields: [{ key: 'rss_bytes', scale: 1 / 1048576 }] },
    { id: 'disk', title: 'Disk I/O', unit: 'B/s',
      fields: [{ key: 'disk_read', label: 'read' }, { key: 'disk_write', label: 'write', dash: [6, 4] }] },
    { id: 'net', title: 'Network', unit: 'B/s',
      fields: [{ key: 'net_recv', label: 'in' }, { key: 'net_sent', label: 'out', dash: [6, 4] }] },
    { id: 'rps', title: 'Throughput', unit: 'requests/s', fields: [{ key: 'rps' }] },
    { id: 'latency', title: 'Latency', unit: 'ms',
      fields: [{ key: 'p99', label: 'p99' }, { key: 'p95', label: 'p95', dash: [6, 4] }] },
  ];
  // GC timeline markers: one lane per server, one marker per generation that collected in the
  // interval, sized by that generation's longest pause. `gcany` marks samples that only say that
  // some collection ran (the seed's `gc_triggered`).
  const GENS = [
    { key: 'gc0', gen: 0, label: 'gen 0', color: '#22a06b', dy: 0.25 },
    { key: 'gc1', gen: 1, label: 'gen 1', color: '#e8a317', dy: 0 },
    { key: 'gc2', gen: 2, label: 'gen 2 (full)', color: '#e5484d', dy: -0.25 },
    { key: 'gcany', gen: null, label: 'a collection ran (no per-generation data)', color: '#8b95a5', dy: 0 },
  ];
  // Policy actions (a sample's `policy_action`, `policy_reason`): a triangle above the lane,
  // coloured by what the action did. Where several fall in one pixel column of a lane, the
  // earliest kind here is drawn (a guard matters more than a routine collection).
  const ACTION_KINDS = [
    { kind: 'guard', label: 'guard', color: '#e11d48' },
    { kind: 'refreeze', label: 're-freeze', color: '#7c3aed' },
    { kind: 'freeze', label: 'freeze', color: '#0891b2' },
    { kind: 'threshold', label: 'threshold', color: '#b45309' },
    { kind: 'collect', label: 'collect', color: '#2563eb' },
    { kind: 'other', label: 'other action', color: '#8b95a5' },
  ];
  const KIND_INDEX = Object.fromEntries(ACTION_KINDS.map((k, i) => [k.kind, i]));
  const MAX_LISTED = 50;
  const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed',
    '#0891b2', '#db2777', '#65a30d', '#ea580c', '#4f46e5'];
  const METRIC_KEYS = CHARTS.flatMap((c) => c.fields.map((f) => f.key));
  const SCALE = Object.fromEntries(CHARTS.flatMap((c) => c.fields.map((f) => [f.key, f.scale || 1])));
  const COLUMNS = METRIC_KEYS.concat(GENS.map((g) => g.key));
  // Fields that have no value while a server serves no requests.
  const IDLE_GAPS = ['rps', 'p99', 'p95'];
  const RENDER_EVERY_MS = 200;
  const CHART_HEIGHT = 210;
  const Y_AXIS_SIZE = 84;

  const $ = (id) => document.getElementById(id);

  // ---- the table ---------------------------------------------------------------------------
  const table = {
    xs: [], // sample times, sorted
    rowServer: [], // index into `order` of the server each row belongs to
    servers: new Map(), // name -> {name, index, color, cols: {column: []}, summary}
    order: [], // servers in first-seen order
    measured: new Set(), // columns with at least one value (a chart with none is hidden)
    // Samples with a policy action, sorted by time: few next to the rows, so drawing and
    // hovering them walk this rather than every row.
    actions: [], // {time, server, kind, trigger, action, reason, count}
    actionsVersion: 0, // bumped on every change, so the list is rebuilt only when it changed
  };
  let windowS = 600;
  let maxPerServer = 20000;

  function newSummary() {
    return { samples: 0, gcEvents: 0, lastTime: -Infinity, p99: null, rps: null, policy: '',
      peakRss: null, peakMem: null, maxPause: null };
  }

  function colorFor(i) {
    return i < PALETTE.length ? PALETTE[i] : `hsl(${(i * 137.508) % 360}, 62%, 48%)`;
  }

  function addServer(name) {
    const srv = { name, index: table.order.length, color: colorFor(table.order.length),
      cols: {}, summary: newSummary() };
    for (const c of COLUMNS) srv.cols[c] = new Array(table.xs.length).fill(undefined);
    table.servers.set(name, srv);
    table.order.push(srv);
    structureChanged = true;
    return srv;
  }

  function resetTable() {
    table.xs = [];
    table.rowServer = [];
    table.servers = new Map();
    table.order = [];
    table.measured = new Set();
    table.actions = [];
    table.actionsVersion++;
    structureChanged = true;
  }

  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

  // The row's value for every column of the sample's own server.
  function rowValues(s) {
    const vals = {};
    for (const k of METRIC_KEYS) {
      const v = num(s[k]);
      vals[k] = v === null ? null : v * SCALE[k];
    }
    let perGen = false;
    for (const g of GENS) {
      if (g.gen === null) continue;
      const n = num(s[`gc${g.gen}_collections`]);
      if (n !== null) perGen = true;
      vals[g.key] = n > 0 ? (num(s[`gc${g.gen}_pause_ms_max`]) ?? 0) : null;
    }
    vals.gcany = !perGen && s.gc_triggered === true ? 0 : null;
    // An interval without requests has no throughput to draw, only a gap (a line down to 0 and
    // back would draw an alternating run's schedule, not its servers).
    if (num(s.requests) === 0) for (const k of IDLE_GAPS) vals[k] = null;
    return vals;
  }

  // Why the policy acted: the reason's leading words, as the scheduler, the memory guard and the
  // simple policies write them (crates/neurogc-core/src/policy); the GC events' `trigger` names.
  const TRIGGERS = [
    [/^guard\b/, 'guard'],
    [/^freeze\b|^warm-up of .* over/, 'freeze'],
    [/^due\b/, 'due'],
    [/^opportunistic\b/, 'quiet'],
    [/^memory grew\b/, 'growth'],
    [/^stale\b/, 'stale'],
    [/^young threshold\b/, 'young threshold'],
    [/^periodic\b/, 'timer'],
    [/^model output\b/, 'model'],
  ];

  function actionTrigger(reason) {
    for (const [re, trigger] of TRIGGERS) if (re.test(reason)) return trigger;
    return '';
  }

  // What the action did. A guard's re-freeze counts as the guard's: that memory went over the
  // budget is what to notice.
  function actionKind(action, trigger) {
    if (trigger === 'guard' || /^(guard armed|over budget)\b/.test(action)) return 'guard';
    if (action.includes('gc.unfreeze()')) return 'refreeze';
    if (action.includes('gc.freeze()')) return 'freeze';
    if (action.startsWith('set_threshold')) return 'threshold';
    if (action.includes('collect(')) return 'collect';
    return 'other';
  }

  function addAction(s) {
    const action = typeof s.policy_action === 'string' ? s.policy_action.trim() : '';
    if (!action) return;
    const reason = typeof s.policy_reason === 'string' ? s.policy_reason : '';
    const trigger = actionTrigger(reason);
    const a = { time: s.time, server: s.server, kind: actionKind(action, trigger), trigger,
      action, reason, count: num(s.policy_actions) ?? 1 };
    const acts = table.actions;
    let i = acts.length;
    if (i && acts[i - 1].time > a.time) {
      i = lowerBound(acts, a.time, (x) => x.time);
      while (i < acts.length && acts[i].time <= a.time) i++; // after its equals: arrival order
    }
    acts.splice(i, 0, a);
    table.actionsVersion++;
  }

  // The first index of sorted `arr` whose key is at least `t`.
  function lowerBound(arr, t, key) {
    let lo = 0, hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (key(arr[mid]) < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // Where a row with time `t` goes: usually at the end, so search backwards a little first.
  function insertionIndex(t) {
    const xs = table.xs;
    let i = xs.length;
    for (let steps = 0; i > 0 && xs[i - 1] > t; steps++, i--) {
      if (steps === 32) {
        let lo = 0, hi = i;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (xs[mid] <= t) lo = mid + 1; else hi = mid;
        }
        return lo;
      }
    }
    return i;
  }

  function addSample(s) {
    if (typeof s.server !== 'string' || typeof s.time !== 'number') return;
    const srv = table.servers.get(s.server) || addServer(s.server);
    const vals = rowValues(s);
    const i = insertionIndex(s.time);
    const atEnd = i === table.xs.length;
    const put = (arr, v) => (atEnd ? arr.push(v) : arr.splice(i, 0, v));
    for (const c of COLUMNS) if (vals[c] !== null) table.measured.add(c);
    put(table.xs, s.time);
    put(table.rowServer, srv.index);
    for (const other of table.order) {
      const mine = other === srv;
      for (const c of COLUMNS) put(other.cols[c], mine ? vals[c] : undefined);
    }
    summarise(srv.summary, s, vals);
    addAction(s);
  }

  function summarise(sum, s, vals) {
    sum.samples++;
    let gcs = 0;
    for (const g of [0, 1, 2]) gcs += num(s[`gc${g}_collections`]) || 0;
    if (gcs === 0 && vals.gcany !== null) gcs = 1; // the seed's samples only say "some GC ran"
    sum.gcEvents += gcs;
    for (const g of [0, 1, 2]) {
      const p = num(s[`gc${g}_pause_ms_max`]);
      if (p !== null && (sum.maxPause === null || p > sum.maxPause)) sum.maxPause = p;
    }
    const rss = num(s.rss_bytes);
    if (rss !== null && (sum.peakRss === null || rss > sum.peakRss)) sum.peakRss = rss;
    const mem = num(s.mem);
    if (mem !== null && (sum.peakMem === null || mem > sum.peakMem)) sum.peakMem = mem;
    if (s.time >= sum.lastTime) {
      sum.lastTime = s.time;
      sum.p99 = num(s.p99);
      sum.rps = num(s.rps);
      if (typeof s.policy === 'string') sum.policy = s.policy;
    }
  }

  // Drops rows older than the window (counted back from the newest) or beyond the row budget;
  // in chunks, since every drop shifts every column.
  function evict() {
    const xs = table.xs;
    if (!xs.length) return;
    const cutoff = xs[xs.length - 1] - windowS;
    let k = 0;
    while (k < xs.length && xs[k] < cutoff) k++;
    k = Math.max(k, xs.length - maxPerServer * Math.max(1, table.order.length));
    if (k < 256 && k < xs.length / 100) return;
    xs.splice(0, k);
    table.rowServer.splice(0, k);
    for (const srv of table.order) for (const c of COLUMNS) srv.cols[c].splice(0, k);
    // Actions go with their rows.
    const a = xs.length ? lowerBound(table.actions, xs[0], (x) => x.time) : table.actions.length;
    if (a) { table.actions.splice(0, a); table.actionsVersion++; }
  }

  // ---- measurements (for the status line and for tests) -----------------------------------
  const stats = {
    received: 0, history: 0, live: 0, lagged: 0, seqGaps: 0, lastSeq: 0, connects: 0,
    deliveryMs: [], // ingest (server clock) -> message handled here
    sentToPageMs: [], // a client's `sent_ms` field -> message handled here
    onScreenMs: [], // ingest -> first redraw that includes the sample
    renders: 0, frameMs: 0,
  };
  let pendingScreen = [];
  const MAX_DELAYS = 100000; // per measurement; older halves are dropped on a long session

  function record(values, v) {
    if (values.length >= MAX_DELAYS) values.splice(0, MAX_DELAYS / 2);
    values.push(v);
  }

  function percentile(values, p) {
    if (!values.length) return null;
    const sorted = Float64Array.from(values).sort();
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  }

  function summary(values) {
    return { count: values.length, p50: percentile(values, 50), p99: percentile(values, 99),
      max: values.length ? values.reduce((a, b) => (b > a ? b : a)) : null };
  }

  // ---- the WebSocket -----------------------------------------------------------------------
  let instance = null;
  let attempt = 0;
  let retryAt = 0;
  let connState = 'connecting';
  let replay = null; // what the dashboard is replaying ({source, speed, done}), from its hello

  function setConn(state) {
    connState = state;
    const el = $('conn');
    el.dataset.state = state;
    el.dataset.source = replay ? 'replay' : 'live';
    if (state === 'live' && replay) {
      const name = replay.source.replace(/\/+$/, '').split('/').pop();
      el.textContent = `${replay.done ? 'replayed' : `replay ×${replay.speed}`}: ${name}`;
      el.title = `samples played back from ${replay.source}, not live`;
    } else if (state === 'live') el.textContent = 'live';
    else if (state === 'connecting') el.textContent = 'connecting…';
    else {
      const secs = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
      el.textContent = `disconnected, retrying in ${secs} s`;
    }
  }

  function connect() {
    setConn('connecting');
    const url = new URL('/ws', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    if (instance) {
      url.searchParams.set('resume', instance);
      url.searchParams.set('after', String(stats.lastSeq));
    }
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      scheduleReconnect();
      return;
    }
    ws.onopen = () => {
      attempt = 0;
      stats.connects++;
      setConn('live');
    };
    ws.onmessage = (ev) => handle(JSON.parse(ev.data));
    ws.onclose = () => scheduleReconnect();
  }

  // Exponential backoff with jitter, so many tabs do not reconnect in lockstep.
  function scheduleReconnect() {
    const delay = Math.min(10000, 500 * 2 ** attempt) * (0.8 + 0.4 * Math.random());
    attempt = Math.min(attempt + 1, 10);
    retryAt = Date.now() + delay;
    setConn('reconnecting');
    setTimeout(connect, delay);
  }

  function handle(msg) {
    switch (msg.type) {
      case 'hello':
        // A new dashboard process (or our first connection): its history replaces ours.
        if (!msg.resumed) resetTable();
        instance = msg.instance;
        windowS = msg.window_s;
        maxPerServer = msg.max_per_server;
        stats.lastSeq = msg.last_seq;
        replay = msg.replay || null;
        setConn(connState);
        break;
      case 'history':
        for (const s of msg.samples) addSample(s);
        stats.history += msg.samples.length;
        stats.received += msg.samples.length;
        break;
      case 'samples': {
        const now = Date.now();
        for (const s of msg.samples) {
          if (s.seq !== stats.lastSeq + 1) stats.seqGaps += Math.max(0, s.seq - stats.lastSeq - 1);
          stats.lastSeq = Math.max(stats.lastSeq, s.seq);
          addSample(s);
          record(stats.deliveryMs, now - s.ingest_ms);
          if (typeof s.sent_ms === 'number') record(stats.sentToPageMs, now - s.sent_ms);
          pendingScreen.push(s.ingest_ms);
        }
        stats.live += msg.samples.length;
        stats.received += msg.samples.length;
        break;
      }
      case 'lagged':
        stats.lagged += msg.missed;
        break;
      default:
        return;
    }
    dirty = true;
  }

  // ---- charts ------------------------------------------------------------------------------
  let charts = []; // {spec, u, el}
  let structureChanged = true;
  let dirty = true;
  let rangeS = 0;

  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  function fmt(v, unit) {
    if (v === null || v === undefined) return '–';
    if (unit === 'B/s') return fmtBytes(v) + '/s';
    const a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  }

  const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const BYTE_INCRS = BYTE_UNITS.flatMap((_, k) => [1, 2, 5, 10, 20, 50, 100, 200, 500]
    .map((m) => m * 1024 ** k));
  // The binary unit a byte value reads best in: [index, divisor].
  function byteUnit(v) {
    let i = 0, div = 1;
    while (Math.abs(v) / div >= 1024 && i < BYTE_UNITS.length - 1) { div *= 1024; i++; }
    return [i, div];
  }

  function fmtBytes(v) {
    const [i, div] = byteUnit(v);
    v /= div;
    return `${Math.abs(v) >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${BYTE_UNITS[i]}`;
  }

  // Axis labels with as many decimals as the tick spacing needs, so neighbouring ticks never
  // read the same (0.201, 0.202 rather than 0.20, 0.20); byte axes share one unit.
  function tickLabels(splits, incr, unit) {
    // The fewest decimals that write the step exactly (2.5 needs one, 0.002 three).
    const decimals = (step) => {
      let d = 0;
      while (d < 6 && Math.abs(step * 10 ** d - Math.round(step * 10 ** d)) > 1e-6 * step * 10 ** d) d++;
      return d;
    };
    if (unit === 'B/s') {
      const [i, div] = byteUnit(Math.max(...splits.map(Math.abs)));
      const d = i === 0 ? 0 : decimals(incr / div);
      return splits.map((v) => `${(v / div).toFixed(d)} ${BYTE_UNITS[i]}/s`);
    }
    const d = decimals(incr);
    return splits.map((v) => v.toFixed(d));
  }

  // Clock time on one line, as precise as the tick spacing needs.
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  function fmtClock(secs, incr) {
    const d = new Date(secs * 1000);
    const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    if (incr >= 60) return hm;
    const hms = `${hm}:${pad(d.getSeconds())}`;
    return incr >= 1 ? hms : `${hms}.${pad(d.getMilliseconds(), 3)}`;
  }

  function axes(unit, yValues, ySplits) {
    const stroke = css('--muted');
    const grid = { stroke: css('--grid'), width: 1 };
    const x = { stroke, grid, ticks: grid, space: 70,
      values: (u, splits, ax, space, incr) => splits.map((v) => fmtClock(v, incr)) };
    const y = { stroke, grid, ticks: grid, size: Y_AXIS_SIZE,
      values: yValues || ((u, splits, ax, space, incr) => tickLabels(splits, incr, unit)) };
    if (ySplits) y.splits = ySplits;
    if (unit === 'B/s') y.incrs = BYTE_INCRS; // ticks at 1, 2, 5… KiB rather than at 1000 B
    return [x, y];
  }

  // The x range: the whole window, or the last `rangeS` seconds of it.
  function xRange(u, min, max) {
    if (min === null || max === null) return [0, 1];
    if (rangeS > 0) min = Math.max(min, max - rangeS);
    return min === max ? [min - 1, max + 1] : [min, max];
  }

  function chartBox(spec, wide) {
    const el = document.createElement('div');
    el.className = 'chart' + (wide ? ' wide' : '');
    el.dataset.chart = spec.id;
    const h = document.createElement('h3');
    h.textContent = spec.title;
    const unit = document.createElement('span');
    unit.className = 'unit';
    unit.textContent = spec.unit;
    h.append(unit);
    el.append(h);
    return el;
  }

  const pixelRatio = () => devicePixelRatio || 1;

  // uPlot clips a gap from the row before a null to the row after it; with other servers' rows
  // in between, that leaves stubs of the line on both sides. A gap here runs from this series'
  // last value before the nulls to its first value after them. (uPlot leaves leading and
  // trailing nulls out of idx0..idx1: a line simply starts or ends there.)
  function ownGaps(u, sidx, idx0, idx1, nullGaps) {
    if (!nullGaps.length) return nullGaps;
    const xs = u.data[0], ys = u.data[sidx];
    const px = (i) => u.valToPos(xs[i], 'x', true);
    const gaps = [];
    let last = -1, open = false;
    for (let i = idx0; i <= idx1; i++) {
      const v = ys[i];
      if (v === null) open = true;
      else if (v !== undefined) {
        if (open && last >= 0) gaps.push([px(last), px(i)]);
        open = false;
        last = i;
      }
    }
    return gaps;
  }

  function lineChart(spec, width) {
    const series = [{}];
    const data = [table.xs];
    for (const srv of table.order) {
      for (const f of spec.fields) {
        series.push({ label: f.label ? `${srv.name} ${f.label}` : srv.name, stroke: srv.color,
          width: 1.5, dash: f.dash, spanGaps: false, gaps: ownGaps,
          value: (u, v) => fmt(v, spec.unit) });
        data.push(srv.cols[f.key]);
      }
    }
    const el = chartBox(spec, false);
    const u = new uPlot({ width, height: CHART_HEIGHT, series, axes: axes(spec.unit),
      scales: { x: { time: true, range: xRange } }, cursor: { sync: { key: 'neurogc' } },
      legend: { live: true } }, data, el);
    return { spec, u, el, data: () => data };
  }

  function gcChart(width) {
    const spec = { id: 'gc', title: 'GC timeline',
      unit: 'circles: collections, sized by the longest pause in the interval · triangles: policy actions' };
    const lanes = Math.max(1, table.order.length);
    const laneOf = (srv) => lanes - 1 - srv.index; // first server on top
    const names = table.order.map((s) => s.name);
    const series = [{}, ...table.order.map((srv) => ({ label: srv.name, stroke: srv.color,
      paths: () => null, points: { show: false } }))];
    // Data columns only feed uPlot's cursor; the markers are drawn by the hook below.
    const data = [table.xs, ...table.order.map((srv) => srv.cols.gc2)];
    const el = chartBox(spec, true);
    const key = document.createElement('div');
    key.className = 'key';
    for (const g of GENS) {
      const item = document.createElement('span');
      const dot = document.createElement('i');
      dot.style.background = g.color;
      item.append(dot, g.label);
      key.append(item);
    }
    // The actions' part of the key shows once there are actions (the seed's samples have none).
    const actionKey = document.createElement('span');
    actionKey.className = 'action-key';
    for (const k of ACTION_KINDS) {
      const item = document.createElement('span');
      const tri = document.createElement('b');
      tri.style.color = k.color;
      item.append(tri, k.label);
      actionKey.append(item);
    }
    key.append(actionKey);
    el.append(key);
    const radius = (ms) => Math.min(14, 3 + 2.2 * Math.log2(1 + ms));
    let markers = []; // the actions drawn last, for the API: {time, server, kind, x, y} in CSS px
    // One path per generation (a fill per marker is slow on a software canvas), and per lane
    // and generation at most one marker per pixel column: the largest.
    const draw = (u) => {
      const { ctx } = u;
      const { left, top, width: w, height: h } = u.bbox;
      const xs = table.xs;
      const [x0, x1] = [u.scales.x.min, u.scales.x.max];
      let i = 0;
      while (i < xs.length && xs[i] < x0) i++;
      const dpr = devicePixelRatio || 1;
      const paths = GENS.map(() => new Path2D());
      const last = new Map(); // lane*GENS+gen -> [px, r, cy]
      const flush = (g, m) => {
        paths[g].moveTo(m[0] + m[1], m[2]);
        paths[g].arc(m[0], m[2], m[1], 0, 2 * Math.PI);
      };
      for (; i < xs.length && xs[i] <= x1; i++) {
        const srv = table.order[table.rowServer[i]];
        const px = Math.round(u.valToPos(xs[i], 'x', true));
        GENS.forEach((g, gi) => {
          const ms = srv.cols[g.key][i];
          if (ms == null) return;
          const k = srv.index * GENS.length + gi;
          const r = radius(ms) * dpr;
          const m = last.get(k);
          if (m && m[0] === px) {
            m[1] = Math.max(m[1], r);
            return;
          }
          if (m) flush(gi, m);
          last.set(k, [px, r, u.valToPos(laneOf(srv) + g.dy, 'y', true)]);
        });
      }
      for (const [k, m] of last) flush(k % GENS.length, m);
      // Actions: a triangle pointing down at the lane, one path per kind, per lane at most one
      // per pixel column (the most important kind there).
      const tris = ACTION_KINDS.map(() => new Path2D());
      const half = 4.5 * dpr, tall = 8 * dpr;
      markers = [];
      const put = (m) => {
        const cy = u.valToPos(laneOf(m.srv) + 0.36, 'y', true);
        tris[m.ki].moveTo(m.px - half, cy - tall);
        tris[m.ki].lineTo(m.px + half, cy - tall);
        tris[m.ki].lineTo(m.px, cy);
        tris[m.ki].closePath();
        markers.push({ time: m.a.time, server: m.a.server, kind: m.a.kind,
          x: u.valToPos(m.a.time, 'x'), y: u.valToPos(laneOf(m.srv) + 0.36, 'y') - 4 });
      };
      const acts = table.actions;
      const lastAct = new Map(); // lane -> {px, ki, a, srv}
      for (let j = lowerBound(acts, x0, (a) => a.time); j < acts.length && acts[j].time <= x1; j++) {
        const a = acts[j];
        const srv = table.servers.get(a.server);
        if (!srv) continue;
        const px = Math.round(u.valToPos(a.time, 'x', true));
        const ki = KIND_INDEX[a.kind];
        const m = lastAct.get(srv.index);
        if (m && m.px === px) {
          if (ki <= m.ki) { m.ki = ki; m.a = a; }
          continue;
        }
        if (m) put(m);
        lastAct.set(srv.index, { px, ki, a, srv });
      }
      for (const m of lastAct.values()) put(m);
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, top, w, h);
      ctx.clip();
      ctx.globalAlpha = 0.78;
      GENS.forEach((g, gi) => {
        ctx.fillStyle = g.color;
        ctx.fill(paths[gi]);
      });
      ctx.globalAlpha = 0.95;
      ACTION_KINDS.forEach((k, ki) => {
        ctx.fillStyle = k.color;
        ctx.fill(tris[ki]);
      });
      ctx.restore();
    };
    const u = new uPlot({
      width, height: Math.max(120, 54 * lanes + 50), series,
      axes: axes('', (u, splits) => splits.map((v) => names[lanes - 1 - v] || ''),
        () => names.map((_, i) => i)),
      // Room above the top lane for its actions' triangles.
      scales: { x: { time: true, range: xRange }, y: { auto: false, range: [-0.6, lanes - 0.3] } },
      cursor: { sync: { key: 'neurogc' }, points: { show: false } },
      legend: { show: false },
      hooks: { draw: [draw] },
    }, data, el);

    // Hover: the action nearest the pointer (within 6 px) in the lane under it, in a tooltip.
    const tip = document.createElement('div');
    tip.className = 'action-tip';
    tip.hidden = true;
    el.append(tip);
    const hover = (e) => {
      const r = u.over.getBoundingClientRect();
      const x = e.clientX - r.left, y = e.clientY - r.top;
      const srv = table.order[lanes - 1 - Math.round(u.posToVal(y, 'y'))];
      let best = null, bestDx = 7;
      if (srv) {
        const acts = table.actions;
        const t1 = u.posToVal(x + 6, 'x');
        for (let j = lowerBound(acts, u.posToVal(x - 6, 'x'), (a) => a.time);
          j < acts.length && acts[j].time <= t1; j++) {
          if (acts[j].server !== srv.name) continue;
          const dx = Math.abs(u.valToPos(acts[j].time, 'x') - x);
          if (dx <= bestDx) { best = acts[j]; bestDx = dx; } // ties: the later one
        }
      }
      if (!best) { tip.hidden = true; return; }
      tip.replaceChildren(...actionParts(best));
      tip.hidden = false;
      const box = el.getBoundingClientRect();
      const left = r.left - box.left + x + 14;
      tip.style.left = `${Math.max(0, left + tip.offsetWidth > box.width ? left - 28 - tip.offsetWidth : left)}px`;
      tip.style.top = `${r.top - box.top + y + 14}px`;
    };
    u.over.addEventListener('mousemove', hover);
    u.over.addEventListener('mouseleave', () => { tip.hidden = true; });

    // The most recent actions under the timeline.
    const list = document.createElement('section');
    list.className = 'actions';
    const h = document.createElement('h4');
    h.textContent = 'Policy actions';
    const sub = document.createElement('span');
    sub.className = 'unit';
    sub.textContent = `most recent first, the last ${MAX_LISTED}`;
    h.append(sub);
    const ol = document.createElement('ol');
    list.append(h, ol);
    el.append(list);
    return { spec, u, el, data: () => data, markers: () => markers, actionKey, list, ol,
      listed: -1 };
  }

  const kindLabel = (kind) => ACTION_KINDS[KIND_INDEX[kind]].label;

  // An action as text nodes (never HTML: the text comes from whoever posted the sample).
  function actionParts(a) {
    const span = (cls, text) => {
      const e = document.createElement('span');
      e.className = cls;
      e.textContent = text;
      return e;
    };
    const when = span('when', fmtClock(a.time, 1));
    when.title = new Date(a.time * 1000).toLocaleString();
    const srv = span('srv', a.server);
    const color = table.servers.get(a.server)?.color;
    if (color) srv.style.setProperty('--c', color);
    const label = kindLabel(a.kind);
    const kind = span('kind', a.trigger && a.trigger !== label ? `${label} · ${a.trigger}` : label);
    kind.style.setProperty('--k', ACTION_KINDS[KIND_INDEX[a.kind]].color);
    const act = document.createElement('code');
    act.className = 'act';
    act.textContent = a.action;
    const parts = [when, srv, kind, act, span('why', a.reason)];
    // A sample carries the last action of its interval, and how many there were.
    if (a.count > 1) parts.push(span('more', `(the last of ${a.count} in the interval)`));
    return parts;
  }

  function renderActionList(c) {
    if (c.listed === table.actionsVersion) return;
    c.listed = table.actionsVersion;
    const acts = table.actions;
    c.list.hidden = c.actionKey.hidden = acts.length === 0;
    const rows = [];
    for (let j = acts.length - 1; j >= 0 && rows.length < MAX_LISTED; j--) {
      const li = document.createElement('li');
      li.dataset.kind = acts[j].kind;
      li.append(...actionParts(acts[j]));
      rows.push(li);
    }
    c.ol.replaceChildren(...rows);
  }

  function chartWidth(wide) {
    const box = $('charts');
    const full = box.clientWidth || 1000;
    if (wide) return full - 22;
    const cols = Math.max(1, Math.floor((full + 12) / (520 + 12)));
    return Math.floor((full - 12 * (cols - 1)) / cols) - 22;
  }

  // Only charts on screen are redrawn; the others catch up when scrolled into view.
  const onScreen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const c = charts.find((ch) => ch.el === e.target);
      if (!c) continue;
      c.visible = e.isIntersecting;
      if (c.visible && c.stale) { c.stale = false; c.u.setData(c.data()); }
    }
  });

  function buildCharts() {
    for (const c of charts) { onScreen.unobserve(c.el); c.u.destroy(); }
    const box = $('charts');
    box.replaceChildren();
    charts = [];
    if (!table.order.length) return;
    charts.push(gcChart(chartWidth(true)));
    for (const spec of CHARTS) charts.push(lineChart(spec, chartWidth(false)));
    for (const c of charts) {
      c.visible = true;
      box.append(c.el);
      onScreen.observe(c.el);
    }
  }

  // ---- cards -------------------------------------------------------------------------------
  const CARD_FIELDS = [
    ['gc', 'GC events'], ['p99', 'p99 now'], ['peak', 'peak RSS'],
    ['rps', 'RPS now'], ['pause', 'max pause'], ['n', 'samples'],
  ];

  function renderCards() {
    const box = $('cards');
    if (box.children.length !== table.order.length) {
      box.replaceChildren(...table.order.map((srv) => {
        const card = document.createElement('article');
        card.className = 'card';
        card.dataset.server = srv.name;
        card.style.setProperty('--c', srv.color);
        const h = document.createElement('h2');
        h.textContent = srv.name;
        const pol = document.createElement('span');
        pol.className = 'policy';
        h.append(pol);
        const dl = document.createElement('dl');
        for (const [k, label] of CARD_FIELDS) {
          const d = document.createElement('div');
          const dt = document.createElement('dt');
          dt.textContent = label;
          const dd = document.createElement('dd');
          dd.dataset.k = k;
          d.append(dt, dd);
          dl.append(d);
        }
        const age = document.createElement('div');
        age.className = 'age';
        card.append(h, dl, age);
        return card;
      }));
    }
    table.order.forEach((srv, i) => {
      const card = box.children[i];
      const s = srv.summary;
      const set = (k, text) => { card.querySelector(`[data-k="${k}"]`).textContent = text; };
      card.querySelector('.policy').textContent = s.policy ? `policy ${s.policy}` : '';
      set('gc', String(s.gcEvents));
      set('p99', s.p99 === null ? '–' : `${fmt(s.p99)} ms`);
      set('peak', s.peakRss !== null ? fmtBytes(s.peakRss)
        : s.peakMem !== null ? `${fmt(s.peakMem)} %` : '–');
      set('rps', fmt(s.rps));
      set('pause', s.maxPause === null ? '–' : `${fmt(s.maxPause)} ms`);
      set('n', String(s.samples));
      const last = new Date(s.lastTime * 1000);
      const today = last.toDateString() === new Date().toDateString();
      card.querySelector('.age').textContent =
        `last sample ${today ? last.toLocaleTimeString() : last.toLocaleString()}`;
    });
  }

  // ---- the render loop ---------------------------------------------------------------------
  function render(all = false) {
    evict();
    $('empty').hidden = table.order.length > 0;
    if (structureChanged) {
      buildCharts();
      structureChanged = false;
    } else {
      for (const c of charts) {
        if (c.visible || all) c.u.setData(c.data());
        else c.stale = true;
      }
    }
    for (const c of charts) {
      c.el.hidden = c.spec.fields ? !c.spec.fields.some((f) => table.measured.has(f.key)) : false;
      if (c.list) renderActionList(c);
    }
    renderCards();
    const n = table.order.reduce((a, s) => a + s.summary.samples, 0);
    $('totals').textContent = `${table.order.length} server${table.order.length === 1 ? '' : 's'}` +
      ` · ${n} samples`;
    const now = Date.now();
    for (const ms of pendingScreen) record(stats.onScreenMs, now - ms);
    pendingScreen = [];
    stats.renders++;
  }

  // Redraws at most every RENDER_EVERY_MS, and spends at most about a third of the time drawing
  // (the browser's paint included, measured up to the next task), so a flood of samples slows
  // the redraws, never the handling of incoming messages.
  function loop() {
    if (!dirty) {
      if (connState === 'reconnecting') setConn('reconnecting');
      setTimeout(loop, RENDER_EVERY_MS);
      return;
    }
    dirty = false;
    const t0 = performance.now();
    render();
    setTimeout(() => {
      const spent = performance.now() - t0;
      stats.frameMs += spent;
      setTimeout(loop, Math.min(2000, Math.max(RENDER_EVERY_MS, 2 * spent)));
    }, 0);
  }

  // ---- controls ----------------------------------------------------------------------------
  function applyTheme(theme) {
    document.documentElement.dataset.theme = theme;
    $('theme').textContent = theme === 'dark' ? 'light theme' : 'dark theme';
    structureChanged = true; // uPlot's axis colours are fixed at creation
    dirty = true;
  }

  $('theme').addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    try { localStorage.setItem('neurogc-theme', next); } catch (e) { /* private mode */ }
    applyTheme(next);
  });
  $('range').addEventListener('change', (e) => {
    rangeS = Number(e.target.value);
    dirty = true;
  });
  // Charts are sized to the page's width; rebuild them when it changes (not when the height
  // does, which every rebuild itself changes).
  let resizeTimer = null;
  let lastWidth = $('charts').clientWidth;
  new ResizeObserver(() => {
    const width = $('charts').clientWidth;
    if (width === lastWidth) return;
    lastWidth = width;
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { structureChanged = true; dirty = true; }, 150);
  }).observe($('charts'));

  // ---- the test and tooling API ------------------------------------------------------------
  window.neurogcDashboard = {
    /** Metric columns the charts draw (sample field names, plus gc0/gc1/gc2/gcany markers). */
    metrics: COLUMNS.slice(),
    /** Ids of the charts on the page, in order (hidden ones, with no data yet, included). */
    charts: () => charts.map((c) => c.spec.id),
    /** Ids of the charts shown (those with data). */
    shownCharts: () => charts.filter((c) => !c.el.hidden).map((c) => c.spec.id),
    /** Server names, in first-seen order. */
    servers: () => table.order.map((s) => s.name),
    /** `[[time, value], …]` the charts hold for one metric of one server (value in chart units). */
    points(metric, server) {
      const srv = table.servers.get(server);
      if (!srv || !srv.cols[metric]) return [];
      const col = srv.cols[metric];
      const out = [];
      for (let i = 0; i < col.length; i++) if (col[i] != null) out.push([table.xs[i], col[i]]);
      return out;
    },
    /** How many samples of `server` (or of all servers) the table holds. */
    count(server) {
      if (server === undefined) return table.xs.length;
      const srv = table.servers.get(server);
      return srv ? table.rowServer.filter((i) => i === srv.index).length : 0;
    },
    /** Points drawn per uPlot series of one chart: [{label, points}] (what uPlot itself holds). */
    seriesPoints(chartId) {
      const c = charts.find((ch) => ch.spec.id === chartId);
      if (!c) return [];
      return c.u.series.slice(1).map((s, i) => ({ label: s.label,
        points: c.u.data[i + 1].reduce((n, v) => n + (v == null ? 0 : 1), 0) }));
    },
    /** The y axis' tick labels of one chart, as drawn. */
    yTicks(chartId) {
      const c = charts.find((ch) => ch.spec.id === chartId);
      return c ? (c.u.axes[1]._values || []).slice() : [];
    },
    /** Gaps drawn per uPlot series of one chart: [{label, gaps: [[t0, t1], …]}] (sample times). */
    seriesGaps(chartId) {
      const c = charts.find((ch) => ch.spec.id === chartId);
      if (!c) return [];
      const time = (px) => c.u.posToVal((px - c.u.bbox.left) / pixelRatio(), 'x'); // canvas px
      return c.u.series.slice(1).map((s) => ({ label: s.label,
        gaps: (s._paths?.gaps || []).map(([a, b]) => [time(a), time(b)]) }));
    },
    /** Policy actions held (samples with a `policy_action`), in time order, for one server or
     *  all: [{time, server, kind, trigger, action, reason, count}]. */
    actions(server) {
      return table.actions.filter((a) => server === undefined || a.server === server)
        .map((a) => ({ ...a }));
    },
    /** The action markers the GC timeline drew last: [{time, server, kind, x, y}], x and y in
     *  CSS pixels from the plot area's top left (where to hover). */
    actionMarkers() {
      const c = charts.find((ch) => ch.spec.id === 'gc');
      return c ? c.markers() : [];
    },
    /** Connection state: 'live', 'connecting' or 'reconnecting'. */
    connection: () => connState,
    /** The replay feeding the dashboard (`{source, speed, done}`), or null when it is live. */
    replay: () => replay,
    /** Counters and delay summaries (ms): delivery, sentToPage, onScreen. */
    stats: () => ({
      received: stats.received, history: stats.history, live: stats.live,
      lagged: stats.lagged, seqGaps: stats.seqGaps, lastSeq: stats.lastSeq,
      connects: stats.connects, renders: stats.renders,
      meanFrameMs: stats.renders ? stats.frameMs / stats.renders : null,
      delivery: summary(stats.deliveryMs), sentToPage: summary(stats.sentToPageMs),
      onScreen: summary(stats.onScreenMs),
    }),
    /** Clears the delay measurements (counters stay). */
    resetDelays() { stats.deliveryMs = []; stats.sentToPageMs = []; stats.onScreenMs = []; },
    /** Draws every chart now (also those scrolled out of view), e.g. before a screenshot. */
    renderNow() { render(true); dirty = false; },
  };

  applyTheme(document.documentElement.dataset.theme || 'light');
  connect();
  loop();
})();
