/**
 * Figure 4, start-up: `startWorker()` until it polls, with 1 and 50 deployments (verify, and the
 * first start that compiles).
 *
 * @module
 */
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Options,
  type Row,
  verdict,
} from '../_figure.ts';
import type { DeployedFlow } from '../../lib/dsl/deployed_flow.ts';
import { startWorker } from '../../lib/worker/worker.ts';
import type { BenchDatabase } from '../_db.ts';
import { routedRegistry } from '../_flows.ts';
import { fmt, median, roundRatio, since } from '../_stats.ts';
import { silent } from '../_common.ts';

async function startup(
  db: BenchDatabase,
  o: Options,
): Promise<{ one: number[]; fifty: number[]; firstOne: number; firstFifty: number }> {
  const one = routedRegistry('sua', 1, 3, 'bench_su1');
  const fifty = routedRegistry('sub', 50, 3, 'bench_su50');
  const startOnce = async (registry: DeployedFlow[], queueName: string) => {
    const t0 = performance.now();
    const worker = await startWorker(registry, {
      queueName,
      connectionString: db.url,
      logger: silent,
      maxPollSeconds: 1,
    });
    const ms = since(t0);
    await worker.stop();
    return ms;
  };
  // The first start compiles; later starts verify (the steady state of a redeploy or wake-up).
  const firstOne = await startOnce(one, 'bench_su1');
  const firstFifty = await startOnce(fifty, 'bench_su50');
  const rounds = o.quick ? 5 : 15;
  const out = { one: [] as number[], fifty: [] as number[], firstOne, firstFifty };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      out.one.push(await startOnce(one, 'bench_su1'));
      out.fifty.push(await startOnce(fifty, 'bench_su50'));
    } else {
      out.fifty.push(await startOnce(fifty, 'bench_su50'));
      out.one.push(await startOnce(one, 'bench_su1'));
    }
  }
  return out;
}

/** Figure 4: start-up. */
export const figure: Figure = {
  number: 4,
  name: 'start-up',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const s = await startup(db, o);
    const r = roundRatio(s.fifty, s.one);
    rows.push([
      '4 start-up (start -> first poll), verify',
      `50 deployments ${fmt(median(s.fifty), 1)} ms`,
      `1 deployment ${fmt(median(s.one), 1)} ms`,
      `${fmt(r.ratio)}x (${fmt(r.low)}-${fmt(r.high)})`,
      '<= 3x',
      verdict(r.ratio <= 3),
    ]);
    rows.push([
      '4 start-up, first start (compiles)',
      `50 deployments ${fmt(s.firstFifty, 1)} ms`,
      `1 deployment ${fmt(s.firstOne, 1)} ms`,
      `${fmt(s.firstFifty / s.firstOne)}x (one sample)`,
      '(none)',
      '-',
    ]);
    return { rows, notes };
  },
};
