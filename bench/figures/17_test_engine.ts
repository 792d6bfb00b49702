/**
 * Figure 17 (issue 39): the test engine (`switchyard/testing`, docs/design/clock.md). In this
 * process, on its embedded PGlite database: the first engine's start (PGlite's start and the SQL
 * core built, then kept as a snapshot), a start from that snapshot (while another engine holds
 * the database the first one left), later engines' starts (on the database the previous engine
 * reset to the snapshot when it closed), and one test of a 3-step flow with a week-long approval
 * wait and a retry with backoff, end to end (engine start, the flow, its week and its retry on
 * the virtual clock, close).
 *
 * @module
 */
import { defineDeployedFlow, Flow, signalPayload } from '../../lib/mod.ts';
import { createTestEngine } from '../../lib/testing.ts';
import {
  type Figure,
  type FigureContext,
  type FigureResult,
  type Row,
  verdict,
} from '../_figure.ts';
import { fmt, median } from '../_stats.ts';

const orderV1 = new Flow<{ order: string; cents: number }>({
  slug: 'orderV1',
  maxAttempts: 3,
  baseDelay: 30,
})
  .step({ slug: 'reserve' }, (input) => ({ hold: `hold-${input.order}` }))
  .wait({
    slug: 'approve',
    dependsOn: ['reserve'],
    payload: signalPayload<{ by: string }>(),
    timeout: 7 * 86400,
  })
  .step(
    { slug: 'charge', dependsOn: ['reserve', 'approve'] },
    (input) => ({ receipt: `${input.reserve.hold} by ${input.approve.by}` }),
  );
const registry = [defineDeployedFlow(orderV1, { alias: 'order' })] as const;

/** What figure 17 measured, in milliseconds. */
export interface HarnessResult {
  /** The first engine's start in this process (PGlite's start, the SQL core built). */
  firstStartMs: number;
  /** Starts from the snapshot (another engine holds the database a closed one left). */
  snapshotStartMs: number[];
  /** Each round's engine start from the snapshot. */
  startMs: number[];
  /** Each round's whole test: start, the flow with its week and its retry, close. */
  testMs: number[];
  /** Each round's flow alone (the part after the engine's start). */
  flowMs: number[];
}

/** The test of one round: the flow, its six-day wait, the signal, a failed charge, its retry. */
async function oneTest(): Promise<{ startMs: number; flowMs: number; testMs: number }> {
  const began = performance.now();
  const engine = await createTestEngine({ registry, now: '2030-01-01T09:00:00Z' });
  const started = performance.now();
  try {
    engine.mock('order', 'charge', () => {
      throw new Error('card declined');
    }, { times: 1 });
    const run = await engine.start('order', { order: 'o-1', cents: 500 });
    await engine.runUntilIdle();
    await engine.advance('6d');
    await engine.signal(run, 'approve', { by: 'ana' });
    await engine.runUntilIdle();
    await engine.advance('30s');
    const output = await engine.output(run);
    if (output.charge.receipt !== 'hold-o-1 by ana') {
      throw new Error(`figure 17: unexpected output ${JSON.stringify(output)}`);
    }
    if (engine.calls('order', 'charge').length !== 2) throw new Error('figure 17: no retry');
  } finally {
    await engine.close();
  }
  const ended = performance.now();
  return { startMs: started - began, flowMs: ended - started, testMs: ended - began };
}

/** Runs figure 17: the first start, then `rounds` tests each from the snapshot. */
export async function harnessFigure(rounds: number): Promise<HarnessResult> {
  const began = performance.now();
  const first = await createTestEngine({ registry });
  const firstStartMs = performance.now() - began;
  // Each of these starts while the engines before it are open: none finds a database a closed
  // engine left, each loads the snapshot.
  const snapshotStartMs: number[] = [];
  const open = [first];
  try {
    for (let r = 0; r < Math.min(rounds, 5); r++) {
      const t = performance.now();
      open.push(await createTestEngine({ registry }));
      snapshotStartMs.push(performance.now() - t);
    }
  } finally {
    for (const engine of open) await engine.close();
  }
  const out: HarnessResult = { firstStartMs, snapshotStartMs, startMs: [], testMs: [], flowMs: [] };
  for (let r = 0; r < rounds; r++) {
    const t = await oneTest();
    out.startMs.push(t.startMs);
    out.flowMs.push(t.flowMs);
    out.testMs.push(t.testMs);
  }
  return out;
}

/** Figure 17: the test engine. */
export const figure: Figure = {
  number: 17,
  name: 'the test engine',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { o } = ctx;
    const rows: Row[] = [];
    const h = await harnessFigure(o.rounds);
    const ms = (xs: number[]) =>
      `${fmt(median(xs), 0)} ms (${fmt(Math.min(...xs), 0)}-${fmt(Math.max(...xs), 0)})`;
    rows.push([
      "17 test engine start after the first (the previous one's database, reset)",
      ms(h.startMs),
      `the first start, which builds the snapshot: ${fmt(h.firstStartMs, 0)} ms`,
      `${fmt(median(h.startMs) / h.firstStartMs)}x`,
      '(none)',
      '-',
    ]);
    rows.push([
      '17 ... a start from the snapshot (while another engine is open)',
      ms(h.snapshotStartMs),
      `the first start ${fmt(h.firstStartMs, 0)} ms`,
      `${fmt(median(h.snapshotStartMs) / h.firstStartMs)}x`,
      '(none)',
      '-',
    ]);
    rows.push([
      '17 ... one test: 3 steps, a 6-day wait, a retry (30 s backoff), end to end',
      ms(h.testMs),
      `the flow alone ${ms(h.flowMs)}`,
      `${fmt(median(h.testMs) / 1000)}x a second`,
      '< 1 s per test after the first',
      verdict(median(h.testMs) < 1000),
    ]);
    return { rows, notes: [] };
  },
};
