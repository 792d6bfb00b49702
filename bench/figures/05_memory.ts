/**
 * Figure 5, memory: peak RSS (VmHWM) of a worker process with a 50-flow registry while it
 * processes, next to one with a 1-flow registry.
 *
 * @module
 */
import type { Figure, FigureContext, FigureResult, Options, Row } from '../_figure.ts';
import type { BenchDatabase } from '../_db.ts';
import { fmt, median } from '../_stats.ts';
import { waitUntil } from '../_common.ts';

async function peakRss(
  db: BenchDatabase,
  flows: number,
  prefix: string,
  runs: number,
): Promise<{ peakMb: number }> {
  const queue = `bench_rss_${prefix}`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ['run', '-A', new URL('../_rss_worker.ts', import.meta.url).pathname],
    env: {
      DATABASE_URL: db.url,
      BENCH_FLOWS: String(flows),
      BENCH_PREFIX: prefix,
      BENCH_QUEUE: queue,
    },
    stdin: 'piped',
    stdout: 'piped',
    stderr: 'inherit',
  }).spawn();
  const writer = child.stdin.getWriter();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    while (!seen.includes('ready')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the ${flows}-flow worker process exited before it was ready`);
      seen += value;
    }
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
    await db.sql`select count(switchyard.start_flow(${prefix} || (i % ${flows}::int),
                  jsonb_build_object('i', i))) from generate_series(1, ${runs}::int) i`;
    await waitUntil(`the ${flows}-flow worker to drain ${queue}`, async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from switchyard.step_tasks
         where queue_name = ${queue} and status <> 'completed'`;
      return n === 0;
    });
    const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
    const kb = Number(status.match(/^VmHWM:\s+(\d+) kB/m)?.[1]);
    if (!Number.isFinite(kb)) throw new Error(`no VmHWM in /proc/${child.pid}/status`);
    return { peakMb: kb / 1024 };
  } finally {
    await writer.close().catch(() => {});
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await child.status;
    clearTimeout(timer);
  }
}

async function memory(db: BenchDatabase, o: Options) {
  const runs = o.quick ? 500 : 2000; // 3 tasks per run
  const one: number[] = [];
  const fifty: number[] = [];
  const rounds = o.quick ? 1 : 3;
  for (let r = 0; r < rounds; r++) {
    // Fresh prefixes per round keep the queues apart (each process compiles its own flows).
    one.push((await peakRss(db, 1, `rssa${r}x`, runs)).peakMb);
    fifty.push((await peakRss(db, 50, `rssb${r}x`, runs)).peakMb);
  }
  return { one, fifty, tasks: runs * 3 };
}

/** Figure 5: memory. */
export const figure: Figure = {
  number: 5,
  name: 'memory',
  async run(ctx: FigureContext): Promise<FigureResult> {
    const { db, o } = ctx;
    const rows: Row[] = [];
    const notes: string[] = [];
    const m = await memory(db, o);
    rows.push([
      `5 peak RSS while processing ${m.tasks} tasks`,
      `50-flow registry ${fmt(median(m.fifty), 1)} MB`,
      `1-flow registry ${fmt(median(m.one), 1)} MB`,
      `${fmt(median(m.fifty) / median(m.one))}x`,
      '(none)',
      '-',
    ]);
    return { rows, notes };
  },
};
