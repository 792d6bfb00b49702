/**
 * Figure 2, end to end: runs/s of a 3-step flow over two shared queues with 2 workers, against the
 * raw PGMQ loop of figure 1, measured in figure 1's rounds (`./01_throughput.ts`); with
 * `--baseline` also on that revision's SQL core.
 *
 * @module
 */
import { fmt, median, roundRatio } from '../_stats.ts';
import {
  cpuText,
  type Figure,
  type FigureContext,
  type FigureResult,
  rates,
  type Row,
  verdict,
} from '../_figure.ts';
import { measureThroughput } from './01_throughput.ts';

/** Figure 2: end to end. */
export const figure: Figure = {
  number: 2,
  name: 'end to end',
  usesBaseline: true,
  async run(ctx: FigureContext): Promise<FigureResult> {
    const t = await measureThroughput(ctx);
    const rows: Row[] = [];
    const raw1 = t.raw.get(1)!;
    const r2 = roundRatio(t.e2e.map((x) => x.rate * 3), rates(raw1));
    rows.push([
      '2 end to end (3 steps, 2 queues, 2 workers)',
      `${fmt(median(rates(t.e2e)), 0)} runs/s = ${fmt(median(rates(t.e2e)) * 3, 0)} tasks/s` +
      cpuText(t.e2e, 'run'),
      `raw PGMQ (1 loop) ${fmt(median(rates(raw1)), 0)} msgs/s`,
      `${fmt(r2.ratio)}x tasks/msgs (${fmt(r2.low)}-${fmt(r2.high)})`,
      '>= 0.25x',
      verdict(r2.ratio >= 0.25),
    ]);
    if (t.baseline) {
      const b = t.baseline;
      const vs = roundRatio(rates(t.e2e), rates(b.e2e));
      rows.push([
        `2 ... on the SQL core ${b.label}`,
        `${fmt(median(rates(b.e2e)), 0)} runs/s` + cpuText(b.e2e, 'run'),
        `this core ${fmt(median(rates(t.e2e)), 0)} runs/s`,
        `this core / it ${fmt(vs.ratio)}x (${fmt(vs.low)}-${fmt(vs.high)})`,
        '(before/after)',
        '-',
      ]);
    }
    return { rows, notes: [] };
  },
};
