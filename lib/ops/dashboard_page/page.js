// The dashboard page's script, inlined into the page by `deno task dashboard-page` (without these
// first comment lines). Plain JavaScript, no build step; `deno task check` type-checks it with
// check.json (the DOM's types) against page_types.d.ts (the JSON API's answers).
/** @typedef {import('./page_types.d.ts').Overview} Overview */
/** @typedef {import('./page_types.d.ts').Queue} Queue */
/** @typedef {import('./page_types.d.ts').QueueFunction} QueueFunction */
/** @typedef {import('./page_types.d.ts').Run} Run */
/** @typedef {import('./page_types.d.ts').Fence} Fence */
/** @typedef {import('./page_types.d.ts').Throughput} Throughput */
/** @typedef {import('./page_types.d.ts').History} History */
/** @typedef {import('./page_types.d.ts').RunDetail} RunDetail */
/** @typedef {import('./page_types.d.ts').DetailEntry} DetailEntry */
(() => {
  'use strict';
  const BASE = __BASE_PATH__;
  const TOKEN_KEY = 'switchyard.dashboard.bearer';
  /**
   * @type {{ data: Overview | null, open: Set<string>, details: Map<string, DetailEntry>,
   *   skew: number, timer: ReturnType<typeof setTimeout> | null, busy: boolean,
   *   messageToken: number }}
   */
  const state = {
    data: null,
    open: new Set(),
    details: new Map(),
    skew: 0,
    timer: null,
    busy: false,
    messageToken: 0,
  };
  /** @param {string} id an element of page.html */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /** @param {string} id an input of page.html */
  const $input = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));
  /** @param {string} id a select of page.html */
  const $select = (id) => /** @type {HTMLSelectElement} */ (document.getElementById(id));

  // A bearer in the fragment (#token=...) is taken once and removed from the address bar;
  // fragments never reach the server.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    sessionStorage.setItem(TOKEN_KEY, /** @type {string} */ (fragment.get('token')));
    history.replaceState(null, '', location.pathname + location.search);
  }
  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';

  /** @type {Record<string, string>} */
  const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  /** @param {unknown} v */
  const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]);
  const now = () => Date.now() - state.skew;
  /** @param {string | null | undefined} t */
  const ms = (t) => (t ? new Date(t).getTime() : null);
  /** @param {string} t a time the API sent */
  const msOf = (t) => /** @type {number} */ (ms(t));
  /** @param {number | null | undefined} d milliseconds */
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
  /** @param {string | null | undefined} t */
  const ago = (t) => (t ? duration(now() - msOf(t)) + ' ago' : '–');
  /** @param {string | null | undefined} t */
  const clock = (t) => (t ? new Date(t).toLocaleTimeString() : '–');
  /**
   * @param {string} cls
   * @param {unknown} text
   * @param {string} [title]
   */
  const pill = (cls, text, title) =>
    '<span class="pill ' + cls + '"' + (title ? ' title="' + esc(title) + '"' : '') + '>' +
    esc(text) + '</span>';
  /** @type {Record<string, string>} */
  const STATE_CLASS = {
    active: 'ok',
    draining: 'warn',
    drained: 'idle',
    completed: 'ok',
    failed: 'bad',
    started: 'info',
    created: 'idle',
    skipped: 'idle',
    cancelled: 'cancelled',
    retried: 'warn',
  };
  /**
   * @param {Overview} data
   * @param {Overview['access']['actions'][number]} action
   */
  const can = (data, action) => data.access.actions.includes(action);

  /**
   * A request to the JSON API with the bearer, if one is kept; its status and parsed body.
   * @param {string} path
   * @param {{ method?: string, headers?: Record<string, string>, body?: string }} [init]
   * @returns {Promise<{ status: number, ok: boolean, body: any }>} any: the body's shape is the
   *   answer's to that path, typed where it is used
   */
  async function api(path, init = {}) {
    /** @type {Record<string, string>} */
    const headers = Object.assign({ accept: 'application/json' }, init.headers || {});
    if (token()) headers.authorization = 'Bearer ' + token();
    const response = await fetch(BASE + path, Object.assign({}, init, { headers }));
    let body = null;
    try {
      body = await response.json();
    } catch { /* not JSON */ }
    return { status: response.status, ok: response.ok, body };
  }

  /**
   * @param {string} kind
   * @param {string} text
   */
  function show(kind, text) {
    $('message').innerHTML = text ? '<div class="note ' + kind + '">' + esc(text) + '</div>' : '';
  }

  /**
   * @param {Throughput | null} t
   * @param {number} minutes
   */
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

  /**
   * One small chart of a queue's history (docs/design/observability.md): a line of `values` per
   * minute (a gap where one is null), or bars; the newest minute on the right.
   * @param {string} kind `lag`, `p95` or `failures` (data-chart, for tests and styles)
   * @param {string} title
   * @param {(number | null)[]} values
   * @param {(v: number) => string} unit a value as the legend writes it
   * @param {boolean} bars
   */
  function miniChart(kind, title, values, unit, bars) {
    const w = 300, h = 48, n = values.length, top = 6;
    const known = /** @type {number[]} */ (values.filter((v) => v !== null));
    const peak = Math.max(0, ...known);
    const scale = peak > 0 ? (h - top) / peak : 0;
    const x = (/** @type {number} */ i) => n <= 1 ? w / 2 : (i / (n - 1)) * w;
    const y = (/** @type {number} */ v) => h - v * scale;
    let marks = '';
    if (bars) {
      const bw = w / Math.max(1, n);
      values.forEach((v, i) => {
        if (!v) return;
        const bh = Math.max(2, v * scale);
        marks += '<rect x="' + (i * bw).toFixed(2) + '" y="' + (h - bh).toFixed(2) + '" width="' +
          Math.max(1, bw - 1).toFixed(2) + '" height="' + bh.toFixed(2) +
          '" fill="var(--bad)"><title>' + esc(unit(v) + ', ' + (n - 1 - i) + ' min ago') +
          '</title></rect>';
      });
    } else {
      // One polyline per stretch of known values.
      /** @type {string[]} */
      let run = [];
      const flush = () => {
        if (run.length === 1) {
          const [px, py] = run[0].split(',');
          marks += '<circle cx="' + px + '" cy="' + py + '" r="2" fill="var(--line-' + kind +
            ')"/>';
        } else if (run.length > 1) {
          marks += '<polyline fill="none" stroke="var(--line-' + kind +
            ')" stroke-width="1.6" points="' + run.join(' ') + '"/>';
        }
        run = [];
      };
      values.forEach((v, i) => {
        if (v === null) return flush();
        run.push(x(i).toFixed(1) + ',' + y(v).toFixed(1));
      });
      flush();
    }
    const last = values.length ? values[values.length - 1] : null;
    const total = known.reduce((a, b) => a + b, 0);
    const summary = bars
      ? total + ' in ' + n + ' min'
      : 'now ' + (last === null ? '–' : unit(last)) + ' · peak ' + unit(peak);
    return '<div class="mini" data-chart="' + kind + '" data-points="' + known.length +
      '" data-peak="' + peak + '"><div class="mini-title">' + esc(title) +
      '</div><svg viewBox="0 0 ' + w + ' ' + h + '" preserveAspectRatio="none" role="img" ' +
      'aria-label="' + esc(title) + '">' + marks + '</svg><div class="legend"><span>' +
      esc(summary) + '</span></div></div>';
  }

  /** @param {number} s seconds */
  const secs = (s) => (s < 10 ? s.toFixed(1) : Math.round(s)) + ' s';
  /** @param {number} v milliseconds */
  const millis = (v) => (v < 1000 ? Math.round(v) + ' ms' : (v / 1000).toFixed(2) + ' s');

  /**
   * The queue's counters since install, the same figures `/metrics` serves
   * (docs/design/observability.md#counters-histograms-and-levels).
   * @param {Queue['totals']} t
   */
  function totalsLine(t) {
    return '<div class="muted" data-totals="' +
      esc(JSON.stringify([t.claims, t.completions, t.failedAttempts, t.retries, t.throttled])) +
      '">since install: ' + t.claims + ' claimed · ' + t.completions + ' completed · ' +
      t.failedAttempts + ' failed attempts · ' + t.retries + ' retries · ' + t.throttled +
      ' throttled</div>';
  }

  /**
   * Lag, p95 step latency and failures per minute of a queue, beside its completed tasks.
   * @param {History | null} hist
   */
  function historyCharts(hist) {
    if (!hist) return '';
    return '<div class="minis">' +
      miniChart('lag', 'lag (oldest visible)', hist.lagSeconds, secs, false) +
      miniChart('p95', 'p95 step latency', hist.p95Ms, millis, false) +
      miniChart('failures', 'failed attempts per minute', hist.failures, String, true) +
      '</div>';
  }

  /**
   * @param {QueueFunction} f
   * @param {boolean} canAct
   */
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
    // The latest refusal it recorded (a refused start, a pause on unsupported work): on a hosted
    // project nobody reads the keep-alive's answers, so it is shown here.
    const refused = f.refusals[0];
    if (refused) {
      flagsHtml += '<div class="reason" data-refusal="' + esc(f.functionName) + '">' +
        (f.liveWorkers === 0 ? pill('bad', 'refused') : pill('warn', 'refused before')) + ' ' +
        '<span class="mono">' + esc(refused.refusal) + '</span> ' + esc(refused.message) +
        ' <span class="muted">· ' + refused.count + '×, last ' + esc(clock(refused.lastAt)) +
        ' (' + esc(ago(refused.lastAt)) + ')</span></div>';
    }
    const workers = f.workers.length === 0
      ? '<span class="muted">none</span>'
      : f.workers.map((w) =>
        '<div title="' + esc(w.workerId) + '"><span class="mono">' + esc(w.workerId.slice(0, 8)) +
        '</span> ' + (w.live
          ? pill('ok', 'live')
          : w.deprecatedAt
          ? pill('warn', 'stopping')
          : pill('bad', 'silent')) +
        ' <span class="workers">♥ ' + esc(ago(w.lastHeartbeatAt)) +
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

  /**
   * @param {Queue} q
   * @param {Overview} data
   */
  function queueCard(q, data) {
    const canAct = data.access.authorized;
    const d = q.depth;
    // A catalogued queue has its depth: the branches after the first read it.
    const known = /** @type {NonNullable<typeof d>} */ (d);
    let depth;
    if (!q.catalogued) {
      depth = 'not in the queue catalog yet: no compiled flow routes a step here';
    } else if (known.visible === null) {
      depth = 'PGMQ has no table for this queue';
    } else {
      depth = '<b>' + known.visible + '</b> visible · <b>' + known.hidden + '</b> hidden' +
        (known.oldestEnqueuedAt ? ' · oldest sent ' + esc(ago(known.oldestEnqueuedAt)) : '');
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
      : d
      ? pill('info', 'shared')
      : pill('idle', 'uncatalogued');
    return '<section class="card" data-queue="' + esc(q.queueName) + '"><h2><span class="mono">' +
      esc(q.queueName) + '</span> ' + owner + '</h2><div class="depth">' + depth + '</div>' +
      '<h3>completed tasks per minute</h3>' + chart(q.throughput, data.minutes) +
      historyCharts(q.history) + totalsLine(q.totals) +
      '<h3>queue functions</h3>' + functions + '<h3>versions</h3>' + versions + '</section>';
  }

  /**
   * Where a run came from (docs/design/origins.md): a row trigger's write, its backfill, a
   * webhook's delivery, or another source's kind; '' for a plain start.
   * @param {Run['origin']} o
   */
  function originText(o) {
    if (!o) return '';
    const f = /** @type {Record<string, unknown>} */ (o);
    if (f.kind === 'row_trigger') {
      return 'row trigger ' + f.trigger + ' (' + f.op + ' on ' + f.table + ')';
    }
    if (f.kind === 'backfill') return 'backfill of row trigger ' + f.trigger;
    if (f.kind === 'webhook') return 'webhook ' + f.function + ' (delivery ' + f.delivery + ')';
    return String(f.kind);
  }

  /**
   * @param {Run} run
   * @param {Overview} data
   */
  function timeline(run, data) {
    const t0 = msOf(run.startedAt);
    const end = run.finishedAt ? msOf(run.finishedAt) : msOf(data.generatedAt);
    const span = Math.max(1, end - t0);
    const rowH = 22, labelW = 210, statusW = 170, w = 1000, h = run.steps.length * rowH + 18;
    const right = w - statusW;
    /** @param {number} t */
    const x = (t) => labelW + ((Math.min(Math.max(t, t0), end) - t0) / span) * (right - labelW);
    let svg = '';
    run.steps.forEach((s, i) => {
      const y = i * rowH + 4;
      svg += '<text x="0" y="' + (y + 13) + '" font-size="12" fill="#1d2330">' + esc(s.stepSlug) +
        '</text><text x="' + (labelW - 8) + '" y="' + (y + 13) +
        '" font-size="11" fill="#667085" text-anchor="end">' +
        esc(s.queueName || '(' + s.kind + ', no queue)') + '</text>';
      const q = ms(s.queuedAt), st = ms(s.startedAt);
      const fin = s.finishedAt
        ? ms(s.finishedAt)
        : (s.status === 'started' || s.status === 'created' || s.status === 'cancelled') && q
        ? end
        : null;
      const color = s.status === 'failed'
        ? '#d92d20'
        : s.status === 'completed'
        ? '#12805c'
        : s.status === 'cancelled'
        ? '#8f7bd0'
        : '#3b6fd8';
      if (q !== null && st !== null && st > q) {
        svg += '<rect x="' + x(q) + '" y="' + (y + 4) + '" width="' + Math.max(1, x(st) - x(q)) +
          '" height="10" fill="#d0d5dd"><title>waiting ' + esc(duration(st - q)) +
          '</title></rect>';
      }
      const from = st ?? q;
      if (from !== null && fin !== null) {
        svg += '<rect x="' + x(from) + '" y="' + (y + 2) + '" width="' +
          Math.max(2, x(fin) - x(from)) +
          '" height="14" rx="3" fill="' + color + '"><title>' + esc(
            s.status + ' · ' +
              duration(fin - from) + ' · attempt ' + s.attempts + '/' + (s.maxAttempts ?? '?'),
          ) +
          '</title></rect>';
      }
      svg += '<text x="' + (w - 4) + '" y="' + (y + 13) +
        '" font-size="11" fill="#667085" text-anchor="end">' +
        esc(
          (waits(s) ? 'waiting' + (s.waitDeadline ? ' until ' + s.waitDeadline : '') : s.status) +
            (s.attempts ? ' · attempt ' + s.attempts + ' of ' + (s.maxAttempts ?? '?') : ''),
        ) +
        '</text>';
    });
    // A wait step that waits takes a signal (docs/design/waits.md), with the bearer.
    const signals = run.status === 'started' && can(data, 'signal')
      ? run.steps.filter((s) => s.kind === 'wait' && waits(s)).map((s) =>
        '<button class="primary" data-action="signal" data-run-id="' + esc(run.runId) +
        '" data-step="' + esc(s.stepSlug) + '">Send signal to ' + esc(s.stepSlug) + '</button>'
      ).join(' ')
      : '';
    svg += '<text x="' + labelW + '" y="' + (h - 2) + '" font-size="10" fill="#667085">0</text>' +
      '<text x="' + right + '" y="' + (h - 2) +
      '" font-size="10" fill="#667085" text-anchor="end">' +
      esc(duration(span)) + '</text>';
    // A completed step's error is an earlier attempt's (a retry, or attempts left).
    const errors = run.steps.filter((s) => s.error).map((s) =>
      '<pre class="error">' +
      esc(
        s.stepSlug +
          (s.status === 'completed' ? ' (an earlier attempt)' : ' (attempt ' + s.attempts + ')') +
          ': ' + s.error,
      ) + '</pre>'
    ).join('');
    const cancelled = run.status === 'cancelled';
    return '<div class="timeline"><svg viewBox="0 0 ' + w + ' ' + h + '" height="' + h +
      '">' + svg + '</svg></div>' +
      (run.error && (!errors || cancelled)
        ? '<pre class="error' + (cancelled ? ' cancelled' : '') + '">' + esc(run.error) + '</pre>'
        : '') +
      (signals ? '<div class="signals">' + signals + '</div>' : '') +
      errors + controls(run, data) + progressList(run) + eventList(run) +
      '<div class="muted mono">run ' + esc(run.runId) +
      (run.origin
        ? ' · <span data-run-detail-origin="' + esc(run.runId) + '">from ' +
          esc(originText(run.origin)) + '</span>'
        : '') +
      '</div>';
  }

  // The run controls (docs/design/rerun.md), with the bearer: rerun an ended run from a
  // step (with an optional input patch), fork it, move a started one onto another version of its
  // alias, pause or resume it. The SQL core proves each one; what it refuses is shown as is.
  /**
   * @param {Run} run
   * @param {Overview} data
   */
  function controls(run, data) {
    const id = esc(run.runId);
    /** @param {string} name @param {string} more */
    const field = (name, more) =>
      'data-control="' + name + '" data-control-run="' + id + '"' + more;
    /** @param {string} action @param {string} label @param {string} kind */
    const button = (action, label, kind) =>
      '<button class="' + kind + '" data-action="' + action + '" data-run-id="' + id + '">' +
      esc(label) + '</button>';
    const ended = run.status !== 'started';
    const parts = [];
    const canRerun = ended && can(data, 'rerun');
    if (canRerun || can(data, 'fork')) {
      const first = run.failedStep ||
        (run.steps.find((s) => s.status !== 'completed' && s.status !== 'skipped') ||
          run.steps[0] || { stepSlug: '' }).stepSlug;
      parts.push(
        '<label>from step <select ' + field('step', '') + '>' +
          run.steps.map((s) =>
            '<option value="' + esc(s.stepSlug) + '"' + (s.stepSlug === first ? ' selected' : '') +
            '>' + esc(s.stepSlug) + '</option>'
          ).join('') + '</select></label>',
        '<label>input patch <input ' +
          field('patch', ' placeholder="{&quot;field&quot;: &quot;new value&quot;}"') +
          ' size="28"></label>',
      );
      if (canRerun) parts.push(button('rerun', 'Rerun from step', 'primary'));
      if (can(data, 'fork')) {
        parts.push(
          '<label>fork input <input ' +
            field('fork-input', ' placeholder="(the same input)"') + ' size="20"></label>',
          '<label>onto <select ' + field('fork-to', '') + '><option value="">' +
            esc(run.flowSlug) + ' (same version)</option>' +
            run.versions.map((v) => '<option value="' + esc(v) + '">' + esc(v) + '</option>')
              .join('') +
            '</select></label>',
          button('fork', 'Fork from step', ''),
        );
      }
    }
    if (!ended && can(data, 'move')) {
      parts.push(
        run.versions.length
          ? '<label>move onto <select ' + field('move-to', '') + '>' +
            run.versions.map((v) => '<option value="' + esc(v) + '">' + esc(v) + '</option>')
              .join('') +
            '</select></label>' + button('move', 'Move', 'primary')
          : '<span class="muted">no other version of its alias to move onto</span>',
      );
    }
    if (!ended && can(data, 'pause')) {
      parts.push(
        run.pausedAt
          ? button('resume', 'Resume run', 'primary')
          : '<input ' + field('reason', ' placeholder="pause reason (optional)" size="22"') +
            '>' + button('pause', 'Pause run', ''),
      );
    }
    return parts.length
      ? '<div class="run-controls" data-controls="' + id + '">' + parts.join(' ') + '</div>'
      : '';
  }

  /**
   * What the operator chose in a run's controls.
   * @param {string} id the run
   * @param {string} name step, patch, fork-to, move-to or reason
   */
  function chosen(id, name) {
    const el = /** @type {HTMLInputElement | HTMLSelectElement | null} */ (document.querySelector(
      '[data-control="' + name + '"][data-control-run="' + CSS.escape(id) + '"]',
    ));
    return el ? el.value.trim() : '';
  }

  /**
   * Renders the runs table, keeping what the operator typed or chose in the run controls, and
   * the focus, across the refresh.
   * @param {Overview} data
   */
  function renderRuns(data) {
    /** @type {Map<string, string>} */
    const kept = new Map();
    const key = /** @param {HTMLElement} el */ (el) =>
      el.dataset.control + '|' + el.dataset.controlRun;
    const fields = () => /** @type {NodeListOf<HTMLInputElement | HTMLSelectElement>} */ (document
      .querySelectorAll(
        '#runs [data-control]',
      ));
    fields().forEach((el) => kept.set(key(el), el.value));
    const active = /** @type {HTMLElement | null} */ (document.activeElement);
    const focused = active && active.dataset && active.dataset.control ? key(active) : null;
    $('runs').innerHTML = runsTable(data);
    fields().forEach((el) => {
      const value = kept.get(key(el));
      if (value !== undefined) el.value = value;
      if (key(el) === focused) el.focus();
    });
  }

  // Live progress (docs/design/observability.md): each task's latest `progress` event, from
  // api/runs/<id> and then, while the run is open and started, from its event stream.
  /** @param {unknown} data a progress event's JSON */
  function progressText(data) {
    const text = typeof data === 'string' ? data : JSON.stringify(data);
    return text.length > 120 ? text.slice(0, 119) + '…' : text;
  }

  /**
   * A fraction from 0 to 1 when the JSON says one (`percent`, or `done` of `total`), else null.
   * @param {unknown} data
   */
  function progressFraction(data) {
    if (typeof data !== 'object' || data === null) return null;
    const d = /** @type {Record<string, unknown>} */ (data);
    const f = typeof d.percent === 'number'
      ? d.percent / 100
      : typeof d.done === 'number' && typeof d.total === 'number' && d.total > 0
      ? d.done / d.total
      : null;
    return f === null || !Number.isFinite(f) ? null : Math.min(1, Math.max(0, f));
  }

  /** @param {RunDetail['progress'][number]} p */
  function progressItem(p) {
    const f = progressFraction(p.data);
    return '<li data-progress-of="' + esc(p.runId) + '" data-step="' + esc(p.stepSlug) +
      '" data-task="' + esc(p.taskIndex ?? 0) + '" data-event-id="' + esc(p.eventId) + '"><b>' +
      esc(p.stepSlug) + '</b>' + (p.taskIndex
        ? ' <span class="muted">task ' +
          esc(p.taskIndex) + '</span>'
        : '') +
      (f === null ? '' : ' <meter min="0" max="1" value="' + f + '"></meter> ' +
        esc(Math.round(f * 100)) + '%') +
      ' <span class="mono">' + esc(progressText(p.data)) + '</span> <span class="at mono" title="' +
      esc(p.at) + '">' + esc(clock(p.at)) + '</span></li>';
  }

  /** @param {Run} run */
  function progressList(run) {
    const entry = state.details.get(run.runId);
    if (!entry || 'problem' in entry || !entry.progress || entry.progress.length === 0) return '';
    return '<h3 data-progress-head="' + esc(run.runId) + '">progress' +
      (follows.has(run.runId) && follows.get(run.runId) !== pendingFollow ? ' · live' : '') +
      '</h3>' +
      '<ul class="step-progress" data-progress="' + esc(run.runId) + '">' +
      entry.progress.map(progressItem).join('') + '</ul>';
  }

  /** @type {Map<string, { stop(): void }>} the open started runs followed */
  const follows = new Map();
  /** Stands in a run's place in `follows` while browser.js loads. */
  const pendingFollow = { stop() {} };
  /**
   * The progress heading of a run, marked live while its stream is followed.
   * @param {string} id
   * @param {boolean} live
   */
  function markLive(id, live) {
    const head = document.querySelector('[data-progress-head="' + CSS.escape(id) + '"]');
    if (head) head.textContent = live ? 'progress · live' : 'progress';
  }
  /** @type {Promise<typeof import('../../browser.js')> | undefined} */
  let browserModule;

  /**
   * Follows each open started run with followRun (lib/browser.js, served at browser.js) from the
   * latest event its detail holds; stops following runs that closed or ended.
   * @param {Overview} data
   */
  function followOpenRuns(data) {
    const followed = (/** @type {Run} */ r) => r.status === 'started' && state.open.has(r.runId);
    for (const [id, f] of follows) {
      const run = data.runs.find((r) => r.runId === id);
      if (!run || !followed(run)) {
        f.stop();
        follows.delete(id);
      }
    }
    for (const run of data.runs) {
      const id = run.runId;
      const entry = state.details.get(id);
      if (!followed(run) || follows.has(id) || !entry || 'problem' in entry) continue;
      const after = Math.max(
        0,
        ...entry.events.map((e) => e.eventId),
        ...(entry.progress ?? []).map((e) => e.eventId),
      );
      follows.set(id, pendingFollow);
      browserModule ??= import(BASE + '/browser.js');
      browserModule.then((m) => {
        if (follows.get(id) !== pendingFollow) return;
        const following = m.followRun(id, {
          url: BASE + '/api/runs/' + encodeURIComponent(id) + '/events',
          after,
          token: token,
          onEvent: (e) => showProgress(id, e),
        });
        follows.set(id, following);
        markLive(id, true);
        // Ended (the run's last event) or refused: the next refresh shows the run as it is.
        const forget = () => {
          if (follows.get(id) !== following) return;
          follows.delete(id);
          markLive(id, false);
        };
        following.done.then(forget, forget);
      }, () => follows.delete(id));
    }
  }

  /**
   * One followed event: a progress event replaces its task's line in place.
   * @param {string} id
   * @param {import('../../browser.js').FollowedEvent} e
   */
  function showProgress(id, e) {
    const entry = state.details.get(id);
    if (e.event !== 'progress' || e.stepSlug === null || !entry || 'problem' in entry) return;
    /** @type {RunDetail['progress'][number]} */
    const p = {
      eventId: e.eventId,
      runId: e.runId,
      flowSlug: e.flowSlug,
      stepSlug: e.stepSlug,
      event: 'progress',
      at: e.at,
      taskIndex: e.taskIndex ?? 0,
      data: /** @type {any} */ (e.data),
    };
    const rest = (entry.progress ?? []).filter((q) =>
      !(q.stepSlug === p.stepSlug && (q.taskIndex ?? 0) === p.taskIndex)
    );
    entry.progress = [...rest, p];
    const list = document.querySelector('[data-progress="' + CSS.escape(id) + '"]');
    const line = list && list.querySelector(
      '[data-step="' + CSS.escape(e.stepSlug) + '"][data-task="' + p.taskIndex + '"]',
    );
    if (line) line.outerHTML = progressItem(p);
    else if (list) list.insertAdjacentHTML('beforeend', progressItem(p));
    else if (state.data) renderRuns(state.data); // its first progress
  }

  /**
   * Whether a step waits with nothing running: a started wait, sleep or flow step.
   * @param {Run['steps'][number]} s
   */
  function waits(s) {
    return s.status === 'started' && (s.kind === 'wait' || s.kind === 'sleep' || s.kind === 'flow');
  }

  // The run's latest events, from api/runs/<id> (loaded when the run opens and on each refresh).
  /** @param {Run} run */
  function eventList(run) {
    const entry = state.details.get(run.runId);
    if (!entry) return '<h3>events</h3><div class="muted">loading…</div>';
    if ('problem' in entry) {
      return '<h3>events</h3><div class="muted">' + esc(entry.problem) + '</div>';
    }
    const d = entry;
    const t0 = msOf(run.startedAt);
    return '<h3>events' + (d.eventsTruncated ? ' · the latest ' + d.events.length : '') + '</h3>' +
      '<ol class="events" data-events="' + esc(run.runId) + '">' +
      d.events.map((e) =>
        '<li data-event="' + esc(e.event) + '"><span class="at mono" title="' + esc(e.at) + '">' +
        esc(clock(e.at)) + ' · +' + esc(duration(msOf(e.at) - t0)) + '</span>' +
        (e.stepSlug ? '<b>' + esc(e.stepSlug) + '</b>' : '<span class="muted">run</span>') + ' ' +
        pill(STATE_CLASS[e.event] || 'idle', e.event) + '</li>'
      ).join('') + '</ol>';
  }

  /** @param {string} id */
  async function loadDetail(id) {
    const { status, body } = await api('/api/runs/' + encodeURIComponent(id));
    state.details.set(
      id,
      status === 200
        ? body
        : { problem: 'events unavailable (' + status + '): ' + ((body && body.message) || '') },
    );
  }

  /** @param {Overview} data */
  function runsTable(data) {
    if (data.runs.length === 0) {
      return '<div class="empty">No runs' +
        ($select('run-status').value || $select('run-queue').value
          ? ' match the filter.'
          : " yet. Start one with <code>select switchyard.start_flow('&lt;alias&gt;', '{}')</code> or <code>createClient(registry).start(alias, input)</code>.") +
        '</div>';
    }
    const canAct = can(data, 'cancel') || can(data, 'retry');
    let rows = '';
    for (const r of data.runs) {
      const open = state.open.has(r.runId);
      let outcome;
      if (r.status === 'failed') {
        outcome = '<div class="err" data-run-error="' + esc(r.runId) + '" title="' + esc(r.error) +
          '">' +
          (r.failedStep ? '<b>' + esc(r.failedStep) + '</b>: ' : '') + esc(r.error) + '</div>';
      } else if (r.status === 'cancelled') {
        outcome = '<div class="err why-cancelled" data-run-error="' + esc(r.runId) + '" title="' +
          esc(r.error) + '">' + esc(r.error) + '</div>';
      } else if (r.status === 'completed') {
        // Completed with skips is completed: say how many ran and how many were skipped.
        const skipped = r.steps.filter((s) => s.status === 'skipped').length;
        outcome = '<span class="muted" data-run-steps="' + esc(r.runId) + '">' +
          (r.steps.length - skipped) + ' step' + (r.steps.length - skipped === 1 ? '' : 's') +
          ' completed' + (skipped ? ' · ' + skipped + ' skipped' : '') + '</span>';
      } else {
        outcome = '<span class="muted" data-run-steps="' + esc(r.runId) + '">' +
          r.steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length + '/' +
          r.steps.length + ' steps done</span>';
      }
      if (r.retries > 0) {
        outcome += ' ' +
          pill(
            'warn',
            r.retries === 1 ? 'retried' : 'retried ×' + r.retries,
            'retried ' + r.retries + ' time' + (r.retries === 1 ? '' : 's') + ' (retry_run)',
          );
      }
      if (r.pausedAt) {
        outcome += ' ' + '<span data-run-paused="' + esc(r.runId) + '">' +
          pill('warn', 'paused', r.pauseReason || '') + '</span>';
      }
      // Lineage (fork_run): the run it was forked from, and the step.
      if (r.forkedFrom) {
        outcome += ' <span class="lineage" data-lineage="' + esc(r.runId) + '">forked from ' +
          '<a href="#" class="mono" data-open-run="' + esc(r.forkedFrom) + '" title="' +
          esc(r.forkedFrom) + '">' + esc(r.forkedFrom.slice(0, 8)) + '</a> at <b>' +
          esc(r.fromStep) + '</b></span>';
      }
      let action = '';
      if (r.status === 'started' && can(data, 'cancel')) {
        action = '<button class="danger" data-action="cancel" data-run-id="' + esc(r.runId) +
          '">Cancel</button>';
      } else if (r.status === 'failed' && can(data, 'retry')) {
        action = '<button class="primary" data-action="retry" data-run-id="' + esc(r.runId) +
          '">Retry</button>';
      }
      rows += '<tr class="run" data-run="' + esc(r.runId) + '"><td>' +
        pill(STATE_CLASS[r.status] || 'idle', r.status) + '</td><td><b>' + esc(r.startedAs) +
        '</b>' +
        (r.origin
          ? '<br><span class="muted" data-run-origin="' + esc(r.runId) + '">from ' +
            esc(originText(r.origin)) + '</span>'
          : '') +
        '</td><td class="mono">' + esc(r.flowSlug) + '</td><td title="' + esc(r.startedAt) +
        '">' +
        esc(ago(r.startedAt)) + '</td><td class="num">' + esc(duration(r.durationMs)) +
        '</td><td>' + outcome + '</td>' + (canAct ? '<td>' + action + '</td>' : '') + '</tr>';
      if (open) {
        rows += '<tr class="detail"><td colspan="' + (canAct ? 7 : 6) + '">' + timeline(r, data) +
          '</td></tr>';
      }
    }
    return '<table><tr><th>status</th><th>alias (started as)</th><th>version</th><th>started</th>' +
      '<th class="num">duration</th><th>steps · failing step: error</th>' +
      (canAct ? '<th>action</th>' : '') + '</tr>' + rows + '</table>';
  }

  /** @param {Overview} data */
  function summary(data) {
    const fns = data.queues.flatMap((q) => q.functions);
    const live = fns.reduce((n, f) => n + f.liveWorkers, 0);
    const paused = fns.filter((f) => f.pausedAt).length;
    const draining = data.queues.flatMap((q) => q.versions).filter((v) => v.state === 'draining');
    const completed = data.queues.reduce((n, q) => n + (q.throughput ? q.throughput.total : 0), 0);
    const visible = data.queues.reduce((n, q) => n + ((q.depth && q.depth.visible) || 0), 0);
    const failed = data.runs.filter((r) => r.status === 'failed').length;
    /**
     * @param {unknown} v
     * @param {string} label
     */
    const stat = (v, label) =>
      '<div class="stat"><b>' + esc(v) + '</b><span>' + esc(label) + '</span></div>';
    return stat(data.queues.length, 'queues') +
      stat(fns.length + ' / ' + live, 'functions / live workers') +
      stat(paused, 'paused functions') +
      stat(new Set(draining.map((v) => v.flowSlug)).size, 'draining versions') +
      stat(visible, 'visible messages') +
      stat(completed, 'tasks completed, last ' + data.minutes + ' min') +
      stat(failed + ' / ' + data.runs.length, 'failed / recent runs');
  }

  /** @param {Fence | null} f */
  function fenceBanner(f) {
    if (!f) return '';
    const quiet = f.functions.filter((x) => x.quiet).length;
    const pct = f.functions.length ? Math.round((quiet / f.functions.length) * 100) : 100;
    return '<div class="banner" data-fence="' + f.fenceId + '"><h2>Fence #' + f.fenceId +
      ' open since ' +
      esc(clock(f.openedAt)) + ' (' + esc(ago(f.openedAt)) + ') · ' + quiet + ' of ' +
      f.functions.length + ' functions quiet' +
      (f.quiet ? ' — deploy, then <code>npx switchyard fence end</code>' : '') +
      '</h2><div class="progress"><div data-width="' + pct +
      '"></div></div><table><tr><th>function</th>' +
      '<th>queue</th><th>was enabled</th><th class="num">live workers</th><th class="num">started tasks</th>' +
      '<th class="num">stalled tasks</th><th>state</th></tr>' +
      f.functions.map((x) =>
        '<tr><td><b>' + esc(x.functionName) + '</b></td><td class="mono">' + esc(x.queueName) +
        '</td><td>' +
        (x.wasEnabled ? 'yes' : 'no') + '</td><td class="num">' + x.liveWorkers +
        '</td><td class="num">' +
        x.startedTasks + '</td><td class="num">' + x.stalledTasks + '</td><td>' +
        (x.quiet ? pill('ok', 'quiet') : pill('warn', 'waiting')) + '</td></tr>'
      ).join('') + '</table></div>';
  }

  function emptyQueues() {
    return '<section class="card empty">No queues yet. A queue appears when a worker compiles a flow ' +
      'that routes a step to it: <code>npx switchyard scaffold-queue &lt;queue&gt;</code>, then ' +
      '<code>npx switchyard serve</code> (or <code>startWorker(registry, { queueName })</code>).</section>';
  }

  /** @param {Overview} data */
  function optionChanges(data) {
    const changes = data.optionChanges || [];
    if (changes.length === 0) {
      return '<div class="empty">None. A registry that changes only maxAttempts, baseDelay, ' +
        'maxDelay, timeout, startDelay, rateLimit or concurrency of a flow is applied here, for ' +
        'tasks created afterwards.</div>';
    }
    return '<table><thead><tr><th>when</th><th>flow</th><th>by</th><th>changes</th></tr></thead><tbody>' +
      changes.map((c) =>
        '<tr data-option-change="' + esc(String(c.changeId)) + '"><td title="' +
        esc(String(c.changedAt)) + '">' + esc(ago(c.changedAt)) + '</td><td class="mono">' +
        esc(c.flowSlug) + '</td><td class="mono">' + esc(c.changedBy) +
        (c.applicationName ? ' <span class="muted">' + esc(c.applicationName) + '</span>' : '') +
        '</td><td>' + c.differences.map((d) => esc(d)).join('<br>') + '</td></tr>'
      ).join('') +
      '</tbody></table>';
  }

  /** @param {Overview} data */
  function schedules(data) {
    const list = data.schedules || [];
    if (list.length === 0) {
      return '<div class="empty">None. Create one with <code>npx switchyard schedule create &lt;name&gt; ' +
        "--alias &lt;alias&gt; --cron '0 3 * * *'</code> or <code>switchyard.ensure_schedule</code> " +
        'in a migration.</div>';
    }
    return '<table><thead><tr><th>schedule</th><th>alias</th><th>cron</th><th>next tick</th>' +
      '<th>last tick</th><th class="num">skipped</th><th class="num">missed</th></tr></thead><tbody>' +
      list.map((s) => {
        const last = s.lastTick;
        const lastCell = last
          ? esc(last.outcome) + (last.runStatus
            ? ' ' + pill(
              last.runStatus === 'completed'
                ? 'ok'
                : last.runStatus === 'started'
                ? 'info'
                : 'warn',
              last.runStatus,
            )
            : '') +
            ' <span class="muted" title="' + esc(String(last.tickAt)) + '">' +
            esc(ago(last.tickAt)) + '</span>'
          : '<span class="muted">none yet</span>';
        return '<tr data-schedule="' + esc(s.name) + '"><td class="mono">' + esc(s.name) +
          (s.enabled ? '' : ' ' + pill('warn', 'paused')) + '</td><td class="mono">' +
          esc(s.alias) + '</td><td class="mono">' + esc(s.cron) + ' <span class="muted">' +
          esc(s.timeZone) + '</span></td><td>' +
          (s.nextTickAt ? esc(String(s.nextTickAt)) : '<span class="muted">none</span>') +
          '</td><td>' + lastCell + '</td><td class="num">' + s.skippedTicks +
          '</td><td class="num">' + s.missedTicks + '</td></tr>';
      }).join('') + '</tbody></table>';
  }

  /**
   * Row trigger declarations (docs/design/ingestion.md): installed or missing, the backfill's
   * state and cursor, the runs started in the last hour (docs/design/origins.md).
   * @param {Overview} data
   */
  function rowTriggers(data) {
    const list = data.rowTriggers || [];
    if (list.length === 0) {
      return '<div class="empty">None. Declare one with <code>npx switchyard trigger add &lt;name&gt; ' +
        '--table &lt;table&gt; --alias &lt;alias&gt;</code> (it writes a migration).</div>';
    }
    return '<table><thead><tr><th>trigger</th><th>table</th><th>events</th><th>alias</th>' +
      '<th>trigger in place</th><th>backfill</th><th class="num">runs, last hour</th></tr></thead>' +
      '<tbody>' +
      list.map((t) => {
        const b = t.backfill;
        const backfill = !b
          ? '<span class="muted">none declared</span>'
          : b.state === 'done'
          ? pill('ok', 'done') + ' <span class="muted">' + b.rows + ' rows · ' + b.runs +
            ' runs</span>'
          : pill('warn', b.batches === 0 ? 'pending' : 'unfinished') + ' <span class="muted">' +
            b.rows + ' rows · ' + b.runs + ' runs · ' + b.batches + ' batches' +
            (b.after ? ' · after ' + esc(JSON.stringify(b.after)) : '') + '</span>';
        return '<tr data-row-trigger="' + esc(t.name) + '"><td class="mono">' + esc(t.name) +
          '</td><td class="mono">' + esc(t.table) + '</td><td>' + esc(t.events.join(', ')) +
          '</td><td class="mono">' + esc(t.alias) + '</td><td>' +
          (t.installed
            ? pill('ok', 'installed')
            : pill('bad', 'missing', 'writes start nothing: npx switchyard doctor names the fix')) +
          '</td><td>' + backfill + '</td><td class="num">' + t.runsLastHour + '</td></tr>';
      }).join('') + '</tbody></table>';
  }

  /**
   * The open batches (docs/design/batching.md): events collecting per alias and batch key until
   * the batch holds maxSize of them or its timeout passed; the most overdue first, at most 100.
   * @param {Overview} data
   */
  function batches(data) {
    const list = data.batches || [];
    if (list.length === 0) {
      return '<div class="empty">None open. A flow with the <code>batch</code> option collects ' +
        'events started with a batch key (<code>startRun(..., { batchKey })</code>, or a row ' +
        'trigger with <code>batch_by</code>) into one run per batch.</div>';
    }
    return (list.length >= 100
      ? '<div class="muted">The 100 most overdue; <code>switchyard.list_batches()</code> ' +
        'lists them all.</div>'
      : '') +
      '<table><thead><tr><th>alias</th><th>batch key</th><th class="num">events</th>' +
      '<th>opened</th><th>due</th><th>run</th></tr></thead><tbody>' +
      list.map((b) => {
        const due = msOf(b.dueAt) - now();
        const dueCell = (b.overdue
          ? pill('warn', 'overdue', 'the tick closes it; if it stays, npx switchyard doctor') +
            ' <span class="muted">by ' + esc(duration(-due)) + '</span>'
          : '<span>in ' + esc(duration(due)) + '</span>') +
          (b.lastError
            ? ' ' + pill('bad', 'close failed', 'the tick tries again') + ' <span class="muted">' +
              esc(b.lastError) + '</span>'
            : '');
        return '<tr data-batch="' + esc(b.alias + '/' + b.batchKey) + '"><td class="mono">' +
          esc(b.alias) + '</td><td class="mono">' + esc(b.batchKey) + '</td><td class="num">' +
          b.size + ' / ' + b.maxSize + '</td><td title="' + esc(b.openedAt) + '">' +
          esc(ago(b.openedAt)) + '</td><td title="' + esc(b.dueAt) + '">' + dueCell +
          '</td><td class="mono muted">' + esc(b.runId) + '</td></tr>';
      }).join('') + '</tbody></table>';
  }

  /** @param {Overview} data */
  function rateLimits(data) {
    const limits = data.rateLimits || [];
    if (limits.length === 0) {
      return '<div class="empty">None. A step with <code>rateLimit: { name }</code> draws from the ' +
        'limit of that name: <code>select switchyard.set_rate_limit(name, rate, per_seconds, ' +
        'burst)</code>.</div>';
    }
    return '<table><thead><tr><th>name</th><th class="num">rate</th><th class="num">burst</th>' +
      '<th class="num">tokens now</th><th>steps</th></tr></thead><tbody>' +
      limits.map((l) =>
        '<tr data-rate-limit="' + esc(l.name) + '"><td class="mono">' + esc(l.name) + '</td>' +
        (l.rate === null
          ? '<td class="num" colspan="3">' + pill('warn', 'no row: no limit') + '</td>'
          : '<td class="num">' + esc(l.rate + ' / ' + l.perSeconds + ' s') +
            '</td><td class="num">' + esc(String(l.burst)) + '</td><td class="num">' +
            esc(String(Math.floor(Number(l.tokens)))) + '</td>') +
        '<td class="mono">' + l.steps.map((x) => esc(x)).join('<br>') + '</td></tr>'
      ).join('') +
      '</tbody></table>';
  }

  /** @param {Overview} data */
  function render(data) {
    // Keep typed pause reasons and focus across refreshes.
    /** @type {Record<string, string>} */
    const typed = {};
    /** The pause reason inputs (`data-reason-for`: the function's name). */
    const reasonInputs =
      () => /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll(
        '[data-reason-for]',
      ));
    /** @param {HTMLElement} el */
    const reasonFor = (el) => /** @type {string} */ (el.dataset.reasonFor);
    reasonInputs().forEach((el) => (typed[reasonFor(el)] = el.value));
    const active = /** @type {HTMLElement | null} */ (document.activeElement);
    const focused = active && active.dataset ? active.dataset.reasonFor : undefined;
    $('fence').innerHTML = fenceBanner(data.fence);
    /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('.progress div[data-width]'))
      .forEach((el) => (el.style.width = el.dataset.width + '%'));
    $('summary').innerHTML = summary(data);
    $('queues').innerHTML = data.queues.length
      ? data.queues.map((q) => queueCard(q, data)).join('')
      : emptyQueues();
    reasonInputs().forEach((el) => {
      if (typed[reasonFor(el)] !== undefined) el.value = typed[reasonFor(el)];
      if (el.dataset.reasonFor === focused) el.focus();
    });
    renderRuns(data);
    $('option-changes').innerHTML = optionChanges(data);
    $('schedules').innerHTML = schedules(data);
    $('rate-limits').innerHTML = rateLimits(data);
    $('row-triggers').innerHTML = rowTriggers(data);
    $('batches').innerHTML = batches(data);
    const queueSelect = $select('run-queue');
    const selected = queueSelect.value;
    const names = data.queues.map((q) => q.queueName);
    if (
      queueSelect.options.length - 1 !== names.length ||
      names.some((n, i) => queueSelect.options[i + 1].value !== n)
    ) {
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
    clearTimeout(state.timer ?? undefined);
    let delay = 3000;
    try {
      const params = new URLSearchParams();
      if ($select('run-status').value) params.set('status', $select('run-status').value);
      if ($select('run-queue').value) params.set('queue', $select('run-queue').value);
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
        show(
          'bad',
          'This dashboard requires the bearer (SWITCHYARD_DASHBOARD_AUTH=required): ' +
            ((body && body.message) || 'unauthorized') + '. Enter it above.',
        );
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
      followOpenRuns(body);
      if ($('message').dataset.sticky !== '1') show('', '');
      $('status').className = 'pill ok';
      $('status').textContent = 'live · ' + new Date().toLocaleTimeString();
      document.body.dataset.loaded = '1';
    } catch (e) {
      $('status').className = 'pill bad';
      $('status').textContent = 'error';
      show('bad', 'Refresh failed: ' + /** @type {Error} */ (e).message);
    } finally {
      state.busy = false;
      state.timer = setTimeout(refresh, delay);
    }
  }

  // An action's POST and its message: okText(result) when it was done, else the refusal.
  /**
   * @param {string} path
   * @param {Record<string, unknown>} body
   * @param {HTMLButtonElement} button
   * @param {string} label
   * @param {(result: any) => string} okText any: the action's result (PauseResult, CancelResult…)
   */
  async function postAction(path, body, button, label, okText) {
    button.disabled = true;
    const { status, body: answer } = await api(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    stick();
    if (status === 200) {
      show('ok', okText(answer.result));
    } else {
      // A refusal of the SQL core (422 action_refused) names the rule and, for a version it
      // cannot prove, each problem.
      const problems = answer && Array.isArray(answer.problems) ? answer.problems : [];
      show(
        'bad',
        label + ' refused (' + status + (answer && answer.rule ? ', ' + answer.rule : '') + '): ' +
          ((answer && answer.message) || '') +
          (problems.length ? ' — problems: ' + problems.join('; ') : ''),
      );
    }
    await refresh();
  }

  // The message stays 4 s through refreshes; only the latest message's timer ends that (an
  // earlier one's must not clear a newer message).
  function stick() {
    const token = ++state.messageToken;
    $('message').dataset.sticky = '1';
    const unstick = () => {
      if (token === state.messageToken) $('message').dataset.sticky = '';
    };
    setTimeout(unstick, 4000);
  }

  /**
   * @param {string} action pause or resume
   * @param {string} fn the function
   * @param {HTMLButtonElement} button
   */
  async function act(action, fn, button) {
    /** @type {{ reason?: string }} */
    const body = {};
    if (action === 'pause') {
      const input = /** @type {HTMLInputElement | null} */ (
        document.querySelector('[data-reason-for="' + CSS.escape(fn) + '"]')
      );
      if (input && input.value.trim()) body.reason = input.value.trim();
    }
    await postAction(
      '/api/functions/' + encodeURIComponent(fn) + '/' + action,
      body,
      button,
      action + ' ' + fn,
      (r) =>
        action === 'pause'
          ? (r.changed ? 'Paused ' + fn + ': ' + r.reason : fn + ' was already paused: ' + r.reason)
          : (r.changed ? 'Resumed ' + fn : fn + ' was not paused'),
    );
  }

  /**
   * @param {string} action cancel, retry or signal (the button names the step)
   * @param {string} id the run
   * @param {HTMLButtonElement} button
   */
  async function actOnRun(action, id, button) {
    const run = 'run ' + id.slice(0, 8);
    if (action === 'signal') {
      const step = /** @type {string} */ (button.dataset.step);
      const text = prompt(
        'Signal step ' + step + ' of ' + run + ': its payload, as JSON (it becomes the ' +
          "step's output and the run goes on):",
        '{}',
      );
      if (text === null) return;
      /** @type {unknown} */
      let payload;
      try {
        payload = JSON.parse(text);
      } catch {
        show('bad', 'the payload is not JSON: ' + text.slice(0, 80));
        return;
      }
      await postAction(
        '/api/runs/' + encodeURIComponent(id) + '/signal',
        { step, payload },
        button,
        'signal ' + run,
        (r) => 'Signal for ' + step + ' of ' + run + ': ' + r.outcome,
      );
      return;
    }
    if (['rerun', 'fork', 'move', 'pause', 'resume'].includes(action)) {
      await controlRun(action, id, button);
      return;
    }
    /** @type {{ reason?: string }} */
    const body = {};
    if (action === 'cancel') {
      // Cancelling cannot be undone: the prompt is the confirmation, and asks for the reason.
      const reason = prompt(
        'Cancel run ' + id + '? Its queued tasks are archived and no further ' +
          'step starts; this cannot be undone.\nReason (optional):',
        '',
      );
      if (reason === null) return;
      if (reason.trim()) body.reason = reason.trim();
    }
    await postAction(
      '/api/runs/' + encodeURIComponent(id) + '/' + action,
      body,
      button,
      action + ' ' + run,
      (r) =>
        action === 'cancel'
          ? (r.changed
            ? 'Cancelled ' + run
            : run + ' was already cancelled (the first reason is kept)')
          : 'Retried ' + run + ': ' + r.requeued + ' task(s) queued again',
    );
  }

  /**
   * A run control's POST (rerun, fork, move, pause, resume), its body from the run's controls.
   * @param {string} action
   * @param {string} id the run
   * @param {HTMLButtonElement} button
   */
  async function controlRun(action, id, button) {
    const run = 'run ' + id.slice(0, 8);
    /** @type {Record<string, unknown>} */
    const body = {};
    if (action === 'rerun' || action === 'fork') {
      body.fromStep = chosen(id, 'step');
      // A rerun's patch is merged into the run's input; a fork's input replaces it.
      const name = action === 'rerun' ? 'patch' : 'fork-input';
      const text = chosen(id, name);
      if (text) {
        /** @type {unknown} */
        let value;
        try {
          value = JSON.parse(text);
        } catch {
          stick();
          show(
            'bad',
            'the ' + (action === 'rerun' ? 'input patch' : 'fork input') +
              ' is not JSON: ' + text.slice(0, 80),
          );
          return;
        }
        if (action === 'rerun') body.inputPatch = value;
        else body.input = value;
      }
      if (action === 'fork' && chosen(id, 'fork-to')) body.toFlow = chosen(id, 'fork-to');
    } else if (action === 'move') {
      body.toFlow = chosen(id, 'move-to');
    } else if (action === 'pause' && chosen(id, 'reason')) {
      body.reason = chosen(id, 'reason');
    }
    await postAction(
      '/api/runs/' + encodeURIComponent(id) + '/' + action,
      body,
      button,
      action + ' ' + run,
      (r) =>
        action === 'rerun'
          ? 'Rerun ' + run + ' from ' + body.fromStep + ': ' + r.steps + ' step(s) run again'
          : action === 'fork'
          ? 'Forked ' + run + ' from ' + body.fromStep + ' as run ' + r.runId.slice(0, 8)
          : action === 'move'
          ? (r.changed ? 'Moved ' + run + ' onto ' + body.toFlow : run + ' is on ' + body.toFlow)
          : action === 'pause'
          ? (r.changed ? 'Paused ' + run : run + ' was already paused')
          : (r.changed ? 'Resumed ' + run : run + ' was not paused'),
    );
  }

  document.addEventListener('click', (event) => {
    const target = /** @type {Element} */ (event.target);
    /** @type {HTMLButtonElement | null} */
    const button = target.closest('button[data-action]');
    if (button) {
      event.stopPropagation();
      const action = /** @type {string} */ (button.dataset.action);
      if (button.dataset.runId) actOnRun(action, button.dataset.runId, button);
      else act(action, /** @type {string} */ (button.dataset.function), button);
      return;
    }
    /** @type {HTMLAnchorElement | null} */
    const link = target.closest('a[data-open-run]');
    if (link) {
      event.preventDefault();
      event.stopPropagation();
      const id = /** @type {string} */ (link.dataset.openRun);
      state.open.add(id);
      loadDetail(id).then(() => state.data && renderRuns(state.data));
      const shown = document.querySelector('tr.run[data-run="' + CSS.escape(id) + '"]');
      if (shown) shown.scrollIntoView({ block: 'center' });
      else {
        stick();
        show('', 'run ' + id + ' is not among the runs shown (filter or older than the list)');
      }
      return;
    }
    /** @type {HTMLTableRowElement | null} */
    const row = target.closest('tr.run');
    if (row) {
      const id = /** @type {string} */ (row.dataset.run);
      if (state.open.has(id)) {
        state.open.delete(id);
        state.details.delete(id);
      } else {
        state.open.add(id);
        loadDetail(id).then((_) => {
          if (!state.data) return;
          renderRuns(state.data);
          followOpenRuns(state.data);
        });
      }
      if (state.data) renderRuns(state.data);
    }
  });
  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if ($input('token').value) sessionStorage.setItem(TOKEN_KEY, $input('token').value);
    $input('token').value = '';
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
