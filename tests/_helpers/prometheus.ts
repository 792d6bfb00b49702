/**
 * Prometheus for the tests (docs/design/observability.md#counters-histograms-and-levels): a strict
 * reader of the text format, and
 * Debian's `prometheus` started on a free port with a temporary configuration, queried through
 * its HTTP API.
 *
 * @module
 */
import { freePort } from '../../cli/_util.ts';
import { Spawned } from './process.ts';

/** Debian's binaries (the CI installs them, .ci/run); the tests fail, never skip, without them. */
export const PROMETHEUS = Deno.env.get('PROMETHEUS') ?? '/usr/bin/prometheus';
/** promtool, which checks and unit-tests rule files. */
export const PROMTOOL = Deno.env.get('PROMTOOL') ?? '/usr/bin/promtool';

/** One sample of the text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reader of the text exposition format (0.0.4): every sample's family has its HELP and
 * TYPE before it, names and label names are valid, label values are quoted with only \\, \" and
 * \n escaped, values are numbers, and no series appears twice; a counter's name ends with
 * `_total`, a histogram's samples are its `_bucket` (with `le`), `_sum` and `_count`. Throws
 * naming the line.
 */
export function parsePrometheus(text: string): Sample[] {
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const helps = new Set<string>(), types = new Map<string, string>();
  const seen = new Set<string>();
  const samples: Sample[] = [];
  if (!text.endsWith('\n')) throw new Error('the text must end with a newline');
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((line, i) => {
    const where = `line ${i + 1} ${JSON.stringify(line)}`;
    const meta = /^# (HELP|TYPE) (\S+) (.+)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name`);
      if (kind === 'HELP') {
        if (helps.has(name)) throw new Error(`${where}: a second HELP`);
        helps.add(name);
      } else {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) {
          throw new Error(`${where}: bad type`);
        }
        if (types.has(name)) throw new Error(`${where}: a second TYPE`);
        types.set(name, rest);
      }
      return;
    }
    if (line.startsWith('#') || line === '') throw new Error(`${where}: not a sample or HELP/TYPE`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`${where}: not a sample`);
    const [, name, , body = '', valueText] = m;
    // A histogram's samples are its name with _bucket (and an le label), _sum or _count.
    const base = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
    const family = base !== undefined && types.get(base) === 'histogram' ? base : name;
    if (!helps.has(family) || !types.has(family)) {
      throw new Error(`${where}: no HELP and TYPE before`);
    }
    if (types.get(family) === 'counter' && !name.endsWith('_total')) {
      throw new Error(`${where}: a counter's name ends with _total`);
    }
    if (name === `${base}_bucket` && family === base && !/(^|,)le="/.test(body)) {
      throw new Error(`${where}: a bucket without le`);
    }
    const labels: Record<string, string> = {};
    let rest = body;
    while (rest.length > 0) {
      const l = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/.exec(rest);
      if (!l) throw new Error(`${where}: bad labels at ${JSON.stringify(rest)}`);
      if (l[1] in labels) throw new Error(`${where}: label ${l[1]} twice`);
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      rest = rest.slice(l[0].length);
    }
    if (!/^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(valueText)) {
      throw new Error(`${where}: bad value`);
    }
    const key = name + JSON.stringify(Object.entries(labels).sort());
    if (seen.has(key)) throw new Error(`${where}: the series appears twice`);
    seen.add(key);
    samples.push({ name, labels, value: Number(valueText) });
  });
  return samples;
}

/** A running Prometheus. */
export interface Prometheus {
  /** Its base URL. */
  url: string;
  /** An instant query at `time` (seconds since the epoch), its vector's samples. */
  query(expr: string, time?: number): Promise<{ labels: Record<string, string>; value: number }[]>;
  /** Stops it and removes its data. */
  stop(): Promise<void>;
  /** What it logged, for a failure's message. */
  log(): string;
}

/**
 * Starts `prometheus` on a free port with `config` (YAML text) and waits for its API to answer.
 */
export async function startPrometheus(config: string): Promise<Prometheus> {
  try {
    await Deno.stat(PROMETHEUS);
  } catch {
    throw new Error(
      `prometheus is missing at ${PROMETHEUS}: install Debian's with \`apt-get install -y ` +
        'prometheus` (as .ci/run does), or set PROMETHEUS',
    );
  }
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-prometheus-' });
  await Deno.writeTextFile(`${dir}/prometheus.yml`, config);
  const port = freePort();
  const child = new Spawned(PROMETHEUS, [
    `--config.file=${dir}/prometheus.yml`,
    `--storage.tsdb.path=${dir}/data`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await child.stop('SIGTERM');
    await Deno.remove(dir, { recursive: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/-/ready`);
      await r.body?.cancel();
      if (r.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus did not become ready in 30 s:\n${child.output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    async query(expr, time) {
      const params = new URLSearchParams({ query: expr });
      if (time !== undefined) params.set('time', String(time));
      const r = await fetch(`${url}/api/v1/query?${params}`);
      const body = await r.json();
      if (body.status !== 'success') {
        throw new Error(`prometheus refused ${expr}: ${JSON.stringify(body)}`);
      }
      if (body.data.resultType !== 'vector') {
        throw new Error(`${expr}: a ${body.data.resultType}, not a vector`);
      }
      return (body.data.result as { metric: Record<string, string>; value: [number, string] }[])
        .map((x) => ({ labels: x.metric, value: Number(x.value[1]) }));
    },
    stop,
    log: () => child.output,
  };
}

/**
 * Prometheus' histogram_quantile over one histogram's cumulative buckets (`le` ascending, +Inf
 * last, as its `_bucket` samples are): the rank q × the +Inf count, the first bucket whose count
 * reaches it, and a linear interpolation inside it (from 0 below the first bound); the last
 * finite bound when that is the +Inf bucket; null when it counted nothing (Prometheus' NaN).
 */
export function histogramQuantile(
  q: number,
  buckets: readonly { le: number; count: number }[],
): number | null {
  const total = buckets.at(-1)!.count;
  if (total === 0) return null;
  const rank = q * total;
  const i = buckets.findIndex((b) => b.count >= rank);
  if (buckets[i].le === Infinity) return buckets[i - 1].le;
  const below = i === 0 ? 0 : buckets[i - 1].count;
  const lo = i === 0 ? 0 : buckets[i - 1].le;
  if (buckets[i].count === below) return lo;
  return lo + (buckets[i].le - lo) * (rank - below) / (buckets[i].count - below);
}
