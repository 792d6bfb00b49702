/**
 * The dashboard's one HTML page: markup, style and script in one document, no build step,
 * nothing loaded from elsewhere. The handler in `dashboard.ts` fills in `__BASE_PATH__` and a
 * per-response script nonce (`__NONCE__`). The script polls `api/overview` (and
 * `api/runs/<id>` for each open run, for its events), renders with escaped strings, and draws
 * the throughput charts and run timelines as inline SVG.
 *
 * @module
 */

/**
 * The page template (see the module docs).
 *
 * @example
 * ```ts
 * import { DASHBOARD_PAGE } from './dashboard_page.ts';
 * console.assert(DASHBOARD_PAGE.startsWith('<!doctype html>'));
 * ```
 */
export const DASHBOARD_PAGE: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard dashboard</title>
<link rel="icon" href="data:,">
<style>
  :root {
    --bg: #f5f6f8; --card: #fff; --ink: #1d2330; --muted: #667085; --line: #e3e6eb;
    --ok: #12805c; --ok-bg: #e3f5ec; --warn: #a15c00; --warn-bg: #fff1dc; --bad: #b42318;
    --bad-bg: #fde7e5; --info: #175cd3; --info-bg: #e5efff; --idle: #667085; --idle-bg: #eef0f3;
    --cancel: #5b3fa8; --cancel-bg: #efeafb; --bar: #3b6fd8;
  }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
         background: var(--bg); color: var(--ink); }
  header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 12px 20px;
           background: #1d2330; color: #fff; }
  header h1 { font-size: 17px; margin: 0 12px 0 0; font-weight: 650; letter-spacing: .2px; }
  header h1 span { color: #9fb3d9; font-weight: 400; }
  header .spacer { flex: 1; }
  header form { display: flex; gap: 6px; align-items: center; }
  header input { width: 230px; padding: 5px 8px; border-radius: 6px; border: 1px solid #4a5263;
                 background: #2a3140; color: #fff; }
  main { padding: 16px 20px 40px; max-width: 1500px; margin: 0 auto; }
  button { font: inherit; padding: 4px 10px; border-radius: 6px; border: 1px solid #c5cbd5;
           background: #fff; color: var(--ink); cursor: pointer; }
  button:hover { background: #f0f2f5; }
  button.danger { border-color: #e6a39c; color: var(--bad); }
  button.primary { border-color: #9db8ee; color: var(--info); }
  header button { background: #2a3140; color: #fff; border-color: #4a5263; }
  .pill { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px;
          font-weight: 600; white-space: nowrap; }
  .ok { color: var(--ok); background: var(--ok-bg); }
  .warn { color: var(--warn); background: var(--warn-bg); }
  .bad { color: var(--bad); background: var(--bad-bg); }
  .info { color: var(--info); background: var(--info-bg); }
  .idle { color: var(--idle); background: var(--idle-bg); }
  .cancelled { color: var(--cancel); background: var(--cancel-bg); }
  .pill.cancelled { text-decoration: line-through; text-decoration-thickness: 1px; }
  .summary { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px;
             margin-bottom: 14px; }
  .stat { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
          padding: 10px 14px; }
  .stat b { display: block; font-size: 22px; }
  .stat span { color: var(--muted); font-size: 12px; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 14px; }
  .card { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
          padding: 14px 16px; min-width: 0; }
  .card h2 { font-size: 16px; margin: 0; display: flex; gap: 8px; align-items: center;
             flex-wrap: wrap; }
  .card h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .5px; color: var(--muted);
             margin: 14px 0 6px; }
  .depth { color: var(--muted); font-size: 13px; margin-top: 4px; }
  .depth b { color: var(--ink); }
  table { width: 100%; border-collapse: collapse; }
  th { text-align: left; font-size: 12px; color: var(--muted); font-weight: 600;
       border-bottom: 1px solid var(--line); padding: 4px 6px; }
  td { border-bottom: 1px solid #f0f1f4; padding: 5px 6px; vertical-align: top; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
  .reason { color: var(--warn); font-size: 12.5px; margin-top: 2px; }
  .muted { color: var(--muted); }
  .workers { font-size: 12px; color: var(--muted); }
  .act { display: flex; gap: 4px; }
  .act input { width: 130px; padding: 3px 6px; border: 1px solid #c5cbd5; border-radius: 6px; }
  .chart { margin-top: 4px; }
  .chart svg { width: 100%; height: 56px; display: block; background: #fafbfc;
               border: 1px solid var(--line); border-radius: 6px; }
  .chart .legend { display: flex; justify-content: space-between; color: var(--muted); font-size: 11.5px; }
  .banner { border-radius: 10px; padding: 12px 16px; margin-bottom: 14px; border: 1px solid #f0c987;
            background: var(--warn-bg); }
  .banner h2 { margin: 0 0 6px; font-size: 15px; }
  .progress { height: 8px; background: #f3dfbd; border-radius: 99px; overflow: hidden; margin: 6px 0; }
  .progress div { height: 100%; background: var(--ok); }
  .runs { margin-top: 16px; }
  .runs .tools { display: flex; gap: 8px; align-items: center; margin-left: auto; }
  .runs select { font: inherit; padding: 3px 6px; border-radius: 6px; border: 1px solid #c5cbd5; }
  tr.run { cursor: pointer; }
  tr.run:hover td { background: #f7f9fc; }
  tr.run button { padding: 0 8px; font-size: 12.5px; }
  .err { color: var(--bad); font-size: 12.5px; max-width: 520px; overflow: hidden;
         text-overflow: ellipsis; white-space: nowrap; }
  .err.why-cancelled { color: var(--cancel); }
  tr.detail td { background: #fafbfc; }
  .timeline svg { width: 100%; display: block; }
  pre.error { white-space: pre-wrap; color: var(--bad); background: var(--bad-bg); padding: 8px 10px;
              border-radius: 6px; margin: 8px 0 0; font-size: 12.5px; }
  pre.error.cancelled { color: var(--cancel); background: var(--cancel-bg); }
  ol.events { list-style: none; margin: 0; padding: 0; max-height: 240px; overflow: auto;
              border: 1px solid var(--line); border-radius: 6px; background: #fff; }
  ol.events li { display: flex; gap: 8px; align-items: baseline; padding: 2px 8px;
                 border-bottom: 1px solid #f0f1f4; font-size: 12.5px; }
  ol.events li:last-child { border-bottom: 0; }
  ol.events .at { color: var(--muted); min-width: 150px; }
  .empty { color: var(--muted); padding: 18px; text-align: center; }
  .empty code { background: #eef0f3; padding: 1px 5px; border-radius: 4px; }
  #message { margin-bottom: 12px; }
  #message:empty { display: none; }
  .note { border-radius: 8px; padding: 8px 12px; }
</style>
</head>
<body>
<header>
  <h1>Switchyard <span>dashboard</span></h1>
  <span id="status" class="pill idle">loading…</span>
  <span id="access" class="pill idle"></span>
  <span class="spacer"></span>
  <form id="token-form" autocomplete="off">
    <input id="token" type="password" autocomplete="off" placeholder="bearer: worker secret or service role key"
           aria-label="bearer token">
    <button type="submit" id="token-use">Use bearer</button>
    <button type="button" id="token-forget">Forget</button>
  </form>
</header>
<main>
  <div id="message"></div>
  <div id="fence"></div>
  <div id="summary" class="summary"></div>
  <div id="queues" class="grid"></div>
  <section class="card runs">
    <h2>Recent runs
      <span class="tools">
        <label class="muted" for="run-status">status</label>
        <select id="run-status">
          <option value="">all</option><option value="started">started</option>
          <option value="completed">completed</option><option value="failed">failed</option>
          <option value="cancelled">cancelled</option>
        </select>
        <label class="muted" for="run-queue">queue</label>
        <select id="run-queue"><option value="">all</option></select>
      </span>
    </h2>
    <div id="runs"></div>
  </section>
  <section class="card" id="option-changes-card">
    <h2>Option changes <span class="muted">runtime options changed under the same slug</span></h2>
    <div id="option-changes"></div>
  </section>
</main>
<script nonce="__NONCE__">
(() => {
  'use strict';
  const BASE = __BASE_PATH__;
  const TOKEN_KEY = 'switchyard.dashboard.bearer';
  const state = { data: null, open: new Set(), details: new Map(), skew: 0, timer: null, busy: false };
  const $ = (id) => document.getElementById(id);

  // A bearer in the fragment (#token=...) is taken once and removed from the address bar;
  // fragments never reach the server.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    sessionStorage.setItem(TOKEN_KEY, fragment.get('token'));
    history.replaceState(null, '', location.pathname + location.search);
  }
  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';

  const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) =>
    ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  const now = () => Date.now() - state.skew;
  const ms = (t) => (t ? new Date(t).getTime() : null);
  function duration(d) {
    if (d === null || d === undefined || !isFinite(d)) return '–';
    if (d < 1000) return Math.max(0, Math.round(d)) + ' ms';
    const s = d / 1000;
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + Math.floor(s % 60) + 's';
    const h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + (m % 60) + 'm';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
  }
  const ago = (t) => (t ? duration(now() - ms(t)) + ' ago' : '–');
  const clock = (t) => (t ? new Date(t).toLocaleTimeString() : '–');
  const pill = (cls, text, title) =>
    '<span class="pill ' + cls + '"' + (title ? ' title="' + esc(title) + '"' : '') + '>' +
    esc(text) + '</span>';
  const STATE_CLASS = { active: 'ok', draining: 'warn', drained: 'idle', completed: 'ok',
    failed: 'bad', started: 'info', created: 'idle', skipped: 'idle', cancelled: 'cancelled',
    retried: 'warn' };
  const can = (data, action) => data.access.actions.includes(action);

  async function api(path, init = {}) {
    const headers = Object.assign({ accept: 'application/json' }, init.headers || {});
    if (token()) headers.authorization = 'Bearer ' + token();
    const response = await fetch(BASE + path, Object.assign({}, init, { headers }));
    let body = null;
    try { body = await response.json(); } catch { /* not JSON */ }
    return { status: response.status, ok: response.ok, body };
  }

  function show(kind, text) {
    $('message').innerHTML = text ? '<div class="note ' + kind + '">' + esc(text) + '</div>' : '';
  }

  function chart(t, minutes) {
    if (!t) return '<div class="muted">no throughput: the queue is not in the catalog yet</div>';
    const values = t.perMinute;
    const peak = Math.max(1, ...values);
    const w = 600, h = 56, n = values.length, gap = 1, bw = w / n;
    let bars = '';
    values.forEach((v, i) => {
      const bh = v === 0 ? 0 : Math.max(2, (v / peak) * (h - 8));
      bars += '<rect x="' + (i * bw + gap / 2).toFixed(2) + '" y="' + (h - bh).toFixed(2) +
        '" width="' + Math.max(1, bw - gap).toFixed(2) + '" height="' + bh.toFixed(2) +
        '" fill="var(--bar)"><title>' + esc(v + ' completed, ' + (n - 1 - i) + ' min ago') +
        '</title></rect>';
    });
    return '<div class="chart"><svg viewBox="0 0 ' + w + ' ' + h +
      '" preserveAspectRatio="none" role="img" aria-label="completed tasks per minute">' + bars +
      '</svg><div class="legend"><span>' + minutes + ' min ago</span><span>' + t.total +
      ' completed · peak ' + Math.max(0, ...values) + '/min</span><span>now</span></div></div>';
  }

  function functionRow(f, canAct) {
    const flags = [];
    flags.push(f.enabled ? pill('ok', 'enabled') : pill('bad', 'disabled', 'disabled by a fence'));
    if (f.pausedAt) flags.push(pill('warn', 'paused'));
    let flagsHtml = flags.join(' ');
    if (f.pausedAt) {
      flagsHtml += '<div class="reason" data-pause-reason="' + esc(f.functionName) + '">' +
        esc(f.pauseReason) + ' <span class="muted">· since ' + esc(clock(f.pausedAt)) + ' (' +
        esc(ago(f.pausedAt)) + ')</span></div>';
    }
    const workers = f.workers.length === 0
      ? '<span class="muted">none</span>'
      : f.workers.map((w) =>
        '<div title="' + esc(w.workerId) + '"><span class="mono">' + esc(w.workerId.slice(0, 8)) +
        '</span> ' + (w.live ? pill('ok', 'live') : w.deprecatedAt
          ? pill('warn', 'stopping')
          : pill('bad', 'silent')) + ' <span class="workers">♥ ' + esc(ago(w.lastHeartbeatAt)) +
        '</span></div>'
      ).join('');
    let action = '';
    if (canAct) {
      action = f.pausedAt
        ? '<div class="act"><button class="primary" data-action="resume" data-function="' +
          esc(f.functionName) + '">Resume</button></div>'
        : '<div class="act"><input data-reason-for="' + esc(f.functionName) +
          '" placeholder="reason" aria-label="pause reason for ' + esc(f.functionName) +
          '"><button class="danger" data-action="pause" data-function="' + esc(f.functionName) +
          '">Pause</button></div>';
    }
    return '<tr data-function-row="' + esc(f.functionName) + '"><td><b>' + esc(f.functionName) +
      '</b></td><td>' + flagsHtml + '</td><td class="num">' + f.liveWorkers + '</td><td>' +
      workers + '</td>' + (canAct ? '<td>' + action + '</td>' : '') + '</tr>';
  }

  function queueCard(q, data) {
    const canAct = data.access.authorized;
    const d = q.depth;
    let depth;
    if (!q.catalogued) {
      depth = 'not in the queue catalog yet: no compiled flow routes a step here';
    } else if (d.visible === null) {
      depth = 'PGMQ has no table for this queue';
    } else {
      depth = '<b>' + d.visible + '</b> visible · <b>' + d.hidden + '</b> hidden' +
        (d.oldestEnqueuedAt ? ' · oldest sent ' + esc(ago(d.oldestEnqueuedAt)) : '');
    }
    const functions = q.functions.length === 0
      ? '<div class="muted">no queue function registered for this queue</div>'
      : '<table><tr><th>function</th><th>state</th><th class="num">live</th><th>workers · last heartbeat</th>' +
        (canAct ? '<th>action</th>' : '') + '</tr>' +
        q.functions.map((f) => functionRow(f, canAct)).join('') + '</table>';
    const versions = q.versions.length === 0
      ? '<div class="muted">no compiled version has a step on this queue</div>'
      : '<table><tr><th>version</th><th>alias</th><th>state</th><th class="num">started runs</th>' +
        '<th class="num">queued tasks</th><th class="num">started tasks</th></tr>' +
        q.versions.map((v) =>
          '<tr data-version="' + esc(v.flowSlug) + '"><td><b>' + esc(v.flowSlug) + '</b></td><td>' +
          esc(v.alias ?? '–') + '</td><td>' + pill(STATE_CLASS[v.state] || 'idle', v.state) +
          '</td><td class="num">' + v.startedRuns + '</td><td class="num">' + v.queuedTasks +
          '</td><td class="num">' + v.startedTasks + '</td></tr>'
        ).join('') + '</table>';
    const owner = d && d.ownership === 'private'
      ? pill('idle', 'private · ' + (d.ownerFlow || ''))
      : d ? pill('info', 'shared') : pill('idle', 'uncatalogued');
    return '<section class="card" data-queue="' + esc(q.queueName) + '"><h2><span class="mono">' +
      esc(q.queueName) + '</span> ' + owner + '</h2><div class="depth">' + depth + '</div>' +
      '<h3>completed tasks per minute</h3>' + chart(q.throughput, data.minutes) +
      '<h3>queue functions</h3>' + functions + '<h3>versions</h3>' + versions + '</section>';
  }

  function timeline(run, data) {
    const t0 = ms(run.startedAt);
    const end = run.finishedAt ? ms(run.finishedAt) : ms(data.generatedAt);
    const span = Math.max(1, end - t0);
    const rowH = 22, labelW = 210, statusW = 170, w = 1000, h = run.steps.length * rowH + 18;
    const right = w - statusW;
    const x = (t) => labelW + ((Math.min(Math.max(t, t0), end) - t0) / span) * (right - labelW);
    let svg = '';
    run.steps.forEach((s, i) => {
      const y = i * rowH + 4;
      svg += '<text x="0" y="' + (y + 13) + '" font-size="12" fill="#1d2330">' + esc(s.stepSlug) +
        '</text><text x="' + (labelW - 8) + '" y="' + (y + 13) +
        '" font-size="11" fill="#667085" text-anchor="end">' + esc(s.queueName) + '</text>';
      const q = ms(s.queuedAt), st = ms(s.startedAt);
      const fin = s.finishedAt ? ms(s.finishedAt)
        : (s.status === 'started' || s.status === 'created' || s.status === 'cancelled') && q ? end : null;
      const color = s.status === 'failed' ? '#d92d20' : s.status === 'completed' ? '#12805c'
        : s.status === 'cancelled' ? '#8f7bd0' : '#3b6fd8';
      if (q !== null && st !== null && st > q) {
        svg += '<rect x="' + x(q) + '" y="' + (y + 4) + '" width="' + Math.max(1, x(st) - x(q)) +
          '" height="10" fill="#d0d5dd"><title>waiting ' + esc(duration(st - q)) + '</title></rect>';
      }
      const from = st ?? q;
      if (from !== null && fin !== null) {
        svg += '<rect x="' + x(from) + '" y="' + (y + 2) + '" width="' + Math.max(2, x(fin) - x(from)) +
          '" height="14" rx="3" fill="' + color + '"><title>' + esc(s.status + ' · ' +
            duration(fin - from) + ' · attempt ' + s.attempts + '/' + (s.maxAttempts ?? '?')) +
          '</title></rect>';
      }
      svg += '<text x="' + (w - 4) + '" y="' + (y + 13) + '" font-size="11" fill="#667085" text-anchor="end">' +
        esc(s.status + (s.attempts ? ' · attempt ' + s.attempts + ' of ' + (s.maxAttempts ?? '?') : '')) +
        '</text>';
    });
    svg += '<text x="' + labelW + '" y="' + (h - 2) + '" font-size="10" fill="#667085">0</text>' +
      '<text x="' + right + '" y="' + (h - 2) + '" font-size="10" fill="#667085" text-anchor="end">' +
      esc(duration(span)) + '</text>';
    // A completed step's error is an earlier attempt's (a retry, or attempts left).
    const errors = run.steps.filter((s) => s.error).map((s) =>
      '<pre class="error">' + esc(s.stepSlug + (s.status === 'completed' ? ' (an earlier attempt)'
        : ' (attempt ' + s.attempts + ')') + ': ' + s.error) + '</pre>'
    ).join('');
    const cancelled = run.status === 'cancelled';
    return '<div class="timeline"><svg viewBox="0 0 ' + w + ' ' + h + '" height="' + h +
      '">' + svg + '</svg></div>' + (run.error && (!errors || cancelled)
        ? '<pre class="error' + (cancelled ? ' cancelled' : '') + '">' + esc(run.error) + '</pre>' : '') +
      errors + eventList(run) + '<div class="muted mono">run ' + esc(run.runId) + '</div>';
  }

  // The run's latest events, from api/runs/<id> (loaded when the run opens and on each refresh).
  function eventList(run) {
    const d = state.details.get(run.runId);
    if (!d) return '<h3>events</h3><div class="muted">loading…</div>';
    if (d.problem) return '<h3>events</h3><div class="muted">' + esc(d.problem) + '</div>';
    const t0 = ms(run.startedAt);
    return '<h3>events' + (d.eventsTruncated ? ' · the latest ' + d.events.length : '') + '</h3>' +
      '<ol class="events" data-events="' + esc(run.runId) + '">' + d.events.map((e) =>
        '<li data-event="' + esc(e.event) + '"><span class="at mono" title="' + esc(e.at) + '">' +
        esc(clock(e.at)) + ' · +' + esc(duration(ms(e.at) - t0)) + '</span>' +
        (e.stepSlug ? '<b>' + esc(e.stepSlug) + '</b>' : '<span class="muted">run</span>') + ' ' +
        pill(STATE_CLASS[e.event] || 'idle', e.event) + '</li>'
      ).join('') + '</ol>';
  }

  async function loadDetail(id) {
    const { status, body } = await api('/api/runs/' + encodeURIComponent(id));
    state.details.set(id, status === 200 ? body
      : { problem: 'events unavailable (' + status + '): ' + ((body && body.message) || '') });
  }

  function runsTable(data) {
    if (data.runs.length === 0) {
      return '<div class="empty">No runs' + ($('run-status').value || $('run-queue').value
        ? ' match the filter.' : ' yet. Start one with <code>select switchyard.start_flow(\\'&lt;alias&gt;\\', \\'{}\\')</code> or <code>connect().startFlow(alias, input)</code>.') + '</div>';
    }
    const canAct = can(data, 'cancel') || can(data, 'retry');
    let rows = '';
    for (const r of data.runs) {
      const open = state.open.has(r.runId);
      let outcome;
      if (r.status === 'failed') {
        outcome = '<div class="err" data-run-error="' + esc(r.runId) + '" title="' + esc(r.error) + '">' +
          (r.failedStep ? '<b>' + esc(r.failedStep) + '</b>: ' : '') + esc(r.error) + '</div>';
      } else if (r.status === 'cancelled') {
        outcome = '<div class="err why-cancelled" data-run-error="' + esc(r.runId) + '" title="' +
          esc(r.error) + '">' + esc(r.error) + '</div>';
      } else {
        outcome = '<span class="muted">' + r.steps.filter((s) => s.status === 'completed').length +
          '/' + r.steps.length + ' steps</span>';
      }
      let action = '';
      if (r.status === 'started' && can(data, 'cancel')) {
        action = '<button class="danger" data-action="cancel" data-run-id="' + esc(r.runId) + '">Cancel</button>';
      } else if (r.status === 'failed' && can(data, 'retry')) {
        action = '<button class="primary" data-action="retry" data-run-id="' + esc(r.runId) + '">Retry</button>';
      }
      rows += '<tr class="run" data-run="' + esc(r.runId) + '"><td>' +
        pill(STATE_CLASS[r.status] || 'idle', r.status) + '</td><td><b>' + esc(r.startedAs) +
        '</b></td><td class="mono">' + esc(r.flowSlug) + '</td><td title="' + esc(r.startedAt) + '">' +
        esc(ago(r.startedAt)) + '</td><td class="num">' + esc(duration(r.durationMs)) +
        '</td><td>' + outcome + '</td>' + (canAct ? '<td>' + action + '</td>' : '') + '</tr>';
      if (open) {
        rows += '<tr class="detail"><td colspan="' + (canAct ? 7 : 6) + '">' + timeline(r, data) + '</td></tr>';
      }
    }
    return '<table><tr><th>status</th><th>alias (started as)</th><th>version</th><th>started</th>' +
      '<th class="num">duration</th><th>steps · failing step: error</th>' +
      (canAct ? '<th>action</th>' : '') + '</tr>' + rows + '</table>';
  }

  function summary(data) {
    const fns = data.queues.flatMap((q) => q.functions);
    const live = fns.reduce((n, f) => n + f.liveWorkers, 0);
    const paused = fns.filter((f) => f.pausedAt).length;
    const draining = data.queues.flatMap((q) => q.versions).filter((v) => v.state === 'draining');
    const completed = data.queues.reduce((n, q) => n + (q.throughput ? q.throughput.total : 0), 0);
    const visible = data.queues.reduce((n, q) => n + ((q.depth && q.depth.visible) || 0), 0);
    const failed = data.runs.filter((r) => r.status === 'failed').length;
    const stat = (v, label) => '<div class="stat"><b>' + esc(v) + '</b><span>' + esc(label) + '</span></div>';
    return stat(data.queues.length, 'queues') + stat(fns.length + ' / ' + live, 'functions / live workers') +
      stat(paused, 'paused functions') + stat(new Set(draining.map((v) => v.flowSlug)).size, 'draining versions') +
      stat(visible, 'visible messages') + stat(completed, 'tasks completed, last ' + data.minutes + ' min') +
      stat(failed + ' / ' + data.runs.length, 'failed / recent runs');
  }

  function fenceBanner(f) {
    if (!f) return '';
    const quiet = f.functions.filter((x) => x.quiet).length;
    const pct = f.functions.length ? Math.round((quiet / f.functions.length) * 100) : 100;
    return '<div class="banner" data-fence="' + f.fenceId + '"><h2>Fence #' + f.fenceId + ' open since ' +
      esc(clock(f.openedAt)) + ' (' + esc(ago(f.openedAt)) + ') · ' + quiet + ' of ' +
      f.functions.length + ' functions quiet' + (f.quiet ? ' — deploy, then <code>deno task fence end</code>' : '') +
      '</h2><div class="progress"><div data-width="' + pct + '"></div></div><table><tr><th>function</th>' +
      '<th>queue</th><th>was enabled</th><th class="num">live workers</th><th class="num">started tasks</th>' +
      '<th class="num">stalled tasks</th><th>state</th></tr>' + f.functions.map((x) =>
        '<tr><td><b>' + esc(x.functionName) + '</b></td><td class="mono">' + esc(x.queueName) + '</td><td>' +
        (x.wasEnabled ? 'yes' : 'no') + '</td><td class="num">' + x.liveWorkers + '</td><td class="num">' +
        x.startedTasks + '</td><td class="num">' + x.stalledTasks + '</td><td>' +
        (x.quiet ? pill('ok', 'quiet') : pill('warn', 'waiting')) + '</td></tr>'
      ).join('') + '</table></div>';
  }

  function emptyQueues() {
    return '<section class="card empty">No queues yet. A queue appears when a worker compiles a flow ' +
      'that routes a step to it: <code>deno task scaffold-queue &lt;queue&gt;</code>, then ' +
      '<code>deno task serve</code> (or <code>startWorker(registry, { queueName })</code>).</section>';
  }

  function optionChanges(data) {
    const changes = data.optionChanges || [];
    if (changes.length === 0) {
      return '<div class="empty">None. A registry that changes only maxAttempts, baseDelay, ' +
        'maxDelay, timeout or startDelay of a flow is applied here, for tasks created afterwards.</div>';
    }
    return '<table><thead><tr><th>when</th><th>flow</th><th>by</th><th>changes</th></tr></thead><tbody>' +
      changes.map((c) => '<tr data-option-change="' + esc(String(c.changeId)) + '"><td title="' +
        esc(String(c.changedAt)) + '">' + esc(ago(c.changedAt)) + '</td><td class="mono">' +
        esc(c.flowSlug) + '</td><td class="mono">' + esc(c.changedBy) +
        (c.applicationName ? ' <span class="muted">' + esc(c.applicationName) + '</span>' : '') +
        '</td><td>' + c.differences.map((d) => esc(d)).join('<br>') + '</td></tr>').join('') +
      '</tbody></table>';
  }

  function render(data) {
    // Keep typed pause reasons and focus across refreshes.
    const typed = {};
    document.querySelectorAll('[data-reason-for]').forEach((el) => (typed[el.dataset.reasonFor] = el.value));
    const focused = document.activeElement && document.activeElement.dataset
      ? document.activeElement.dataset.reasonFor : undefined;
    $('fence').innerHTML = fenceBanner(data.fence);
    document.querySelectorAll('.progress div[data-width]').forEach((el) => (el.style.width = el.dataset.width + '%'));
    $('summary').innerHTML = summary(data);
    $('queues').innerHTML = data.queues.length ? data.queues.map((q) => queueCard(q, data)).join('') : emptyQueues();
    document.querySelectorAll('[data-reason-for]').forEach((el) => {
      if (typed[el.dataset.reasonFor] !== undefined) el.value = typed[el.dataset.reasonFor];
      if (el.dataset.reasonFor === focused) el.focus();
    });
    $('runs').innerHTML = runsTable(data);
    $('option-changes').innerHTML = optionChanges(data);
    const queueSelect = $('run-queue');
    const selected = queueSelect.value;
    const names = data.queues.map((q) => q.queueName);
    if (queueSelect.options.length - 1 !== names.length ||
        names.some((n, i) => queueSelect.options[i + 1].value !== n)) {
      queueSelect.innerHTML = '<option value="">all</option>' +
        names.map((n) => '<option value="' + esc(n) + '">' + esc(n) + '</option>').join('');
      queueSelect.value = names.includes(selected) ? selected : '';
    }
    const a = data.access;
    $('access').className = 'pill ' + (a.authorized ? 'ok' : 'warn');
    $('access').textContent = a.authorized ? 'actions enabled' : 'read-only';
    $('access').title = a.problem || '';
  }

  async function refresh() {
    if (state.busy) return;
    state.busy = true;
    clearTimeout(state.timer);
    let delay = 3000;
    try {
      const params = new URLSearchParams();
      if ($('run-status').value) params.set('status', $('run-status').value);
      if ($('run-queue').value) params.set('queue', $('run-queue').value);
      // The open runs' events come with the overview, so both render together.
      const shown = state.data ? state.data.runs.filter((r) => state.open.has(r.runId)) : [];
      const [{ status, body }] = await Promise.all([
        api('/api/overview' + (params.size ? '?' + params : '')),
        ...shown.map((r) => loadDetail(r.runId)),
      ]);
      if (status === 401) {
        $('status').className = 'pill bad';
        $('status').textContent = 'bearer required';
        $('access').className = 'pill bad';
        $('access').textContent = 'refused';
        show('bad', 'This dashboard requires the bearer (SWITCHYARD_DASHBOARD_AUTH=required): ' +
          ((body && body.message) || 'unauthorized') + '. Enter it above.');
        $('queues').innerHTML = '';
        $('summary').innerHTML = '';
        $('fence').innerHTML = '';
        $('runs').innerHTML = '';
        return;
      }
      if (status !== 200) throw new Error((body && body.message) || 'HTTP ' + status);
      state.data = body;
      state.skew = Date.now() - new Date(body.generatedAt).getTime();
      delay = body.refreshMs || delay;
      render(body);
      if ($('message').dataset.sticky !== '1') show('', '');
      $('status').className = 'pill ok';
      $('status').textContent = 'live · ' + new Date().toLocaleTimeString();
      document.body.dataset.loaded = '1';
    } catch (e) {
      $('status').className = 'pill bad';
      $('status').textContent = 'error';
      show('bad', 'Refresh failed: ' + e.message);
    } finally {
      state.busy = false;
      state.timer = setTimeout(refresh, delay);
    }
  }

  // An action's POST and its message: okText(result) when it was done, else the refusal.
  async function postAction(path, body, button, label, okText) {
    button.disabled = true;
    const { status, body: answer } = await api(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    $('message').dataset.sticky = '1';
    if (status === 200) {
      show('ok', okText(answer.result));
    } else {
      show('bad', label + ' refused (' + status + '): ' + ((answer && answer.message) || ''));
    }
    setTimeout(() => ($('message').dataset.sticky = ''), 4000);
    await refresh();
  }

  async function act(action, fn, button) {
    const body = {};
    if (action === 'pause') {
      const input = document.querySelector('[data-reason-for="' + CSS.escape(fn) + '"]');
      if (input && input.value.trim()) body.reason = input.value.trim();
    }
    await postAction('/api/functions/' + encodeURIComponent(fn) + '/' + action, body, button,
      action + ' ' + fn, (r) => action === 'pause'
        ? (r.changed ? 'Paused ' + fn + ': ' + r.reason : fn + ' was already paused: ' + r.reason)
        : (r.changed ? 'Resumed ' + fn : fn + ' was not paused'));
  }

  async function actOnRun(action, id, button) {
    const body = {};
    if (action === 'cancel') {
      // Cancelling cannot be undone: the prompt is the confirmation, and asks for the reason.
      const reason = prompt('Cancel run ' + id + '? Its queued tasks are archived and no further ' +
        'step starts; this cannot be undone.\\nReason (optional):', '');
      if (reason === null) return;
      if (reason.trim()) body.reason = reason.trim();
    }
    const run = 'run ' + id.slice(0, 8);
    await postAction('/api/runs/' + encodeURIComponent(id) + '/' + action, body, button,
      action + ' ' + run, (r) => action === 'cancel'
        ? (r.changed ? 'Cancelled ' + run : run + ' was already cancelled (the first reason is kept)')
        : 'Retried ' + run + ': ' + r.requeued + ' task(s) queued again');
  }

  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-action]');
    if (button) {
      event.stopPropagation();
      if (button.dataset.runId) actOnRun(button.dataset.action, button.dataset.runId, button);
      else act(button.dataset.action, button.dataset.function, button);
      return;
    }
    const row = event.target.closest('tr.run');
    if (row) {
      const id = row.dataset.run;
      if (state.open.has(id)) {
        state.open.delete(id);
        state.details.delete(id);
      } else {
        state.open.add(id);
        loadDetail(id).then(() => state.data && ($('runs').innerHTML = runsTable(state.data)));
      }
      if (state.data) $('runs').innerHTML = runsTable(state.data);
    }
  });
  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if ($('token').value) sessionStorage.setItem(TOKEN_KEY, $('token').value);
    $('token').value = '';
    refresh();
  });
  $('token-forget').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    refresh();
  });
  $('run-status').addEventListener('change', refresh);
  $('run-queue').addEventListener('change', refresh);
  refresh();
})();
</script>
</body>
</html>
`;
