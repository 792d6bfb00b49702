/**
 * `deno task metrics [--window SECONDS] [--prometheus | --json]`: per queue its depth, lag,
 * claims, completions and failures per second and retries, per step its duration percentiles
 * and attempts, over the last `--window` seconds (default 60, at most 86400;
 * docs/design/observability.md). `--prometheus` prints the text the dashboard serves at
 * `/metrics`; `--json` the document of `switchyard.metrics`.
 *
 * Needs `DATABASE_URL`. Exit codes: 0 printed, 1 refused, 2 bad usage.
 *
 * @module
 */
import { metrics, metricSnapshot, prometheusText } from '../lib/ops.ts';
import { formatMetrics } from '../lib/ops/format.ts';
import { MAX_METRICS_WINDOW_SECONDS } from '../lib/sql/metrics.ts';
import { parse, runCommand, secondsOption, UsageError } from './_operator_cli.ts';
import { commandName } from './_invocation.ts';

const USAGE = `usage: ${commandName('metrics')} [--window SECONDS] [--prometheus | --json]

Per queue: depth, lag, claims/s, completions/s, failures/s, retries; per step: p50/p95/p99
duration and attempts; over the last --window seconds (default 60, at most 86400).
--prometheus prints Prometheus text, --json the SQL core's document. Needs DATABASE_URL.`;

await runCommand(USAGE, async (sql, args) => {
  const { values, positionals } = parse(args, {
    window: { type: 'string' },
    prometheus: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  }
  if (values.prometheus && values.json) {
    throw new UsageError('--prometheus and --json exclude each other: give one');
  }
  const windowSeconds = secondsOption('window', values.window, 60);
  if (windowSeconds > MAX_METRICS_WINDOW_SECONDS) {
    throw new UsageError(
      `--window ${windowSeconds} is invalid: use at most ${MAX_METRICS_WINDOW_SECONDS} seconds`,
    );
  }
  const m = await metrics(sql, { windowSeconds });
  if (values.prometheus) console.log(prometheusText(m, await metricSnapshot(sql)).trimEnd());
  else if (values.json) console.log(JSON.stringify(m, null, 2));
  else console.log(formatMetrics(m));
});
