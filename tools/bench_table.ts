/**
 * `deno task bench:table [--check]`: writes the current table of BENCHMARKS.md (between its
 * `bench:table` markers) from the bench's JSON result, `bench/results/latest.json`, which
 * `deno task bench` writes: one row per row of each figure's latest run, the runs they come
 * from (date, commit, arguments, environment), and the figures of `bench/figures/` the result
 * does not hold yet. `--check` changes nothing and fails when the page is not what it would write.
 *
 * The page is formatted as `deno fmt` formats it, so the task and the formatter agree.
 *
 * @module
 */
import { join } from 'node:path';
import { KIT_ROOT } from '../cli/_project.ts';
import { helpOption } from '../cli/_help.ts';
import { type BenchResult, type FigureRecord, readResult, RESULT_FILE } from '../bench/_result.ts';

/** The page the table is written into, relative to the kit. */
export const PAGE = 'BENCHMARKS.md';

/** The line before the table. */
export const TABLE_BEGIN =
  '<!-- bench:table begin: written by `deno task bench:table` from bench/results/latest.json -->';

/** The line after it. */
export const TABLE_END = '<!-- bench:table end -->';

/** A figure of the bench, as its file names it (`bench/figures/04_startup.ts`: 4, `startup`). */
export interface FigureFile {
  number: number;
  file: string;
}

/**
 * The figures of `bench/figures/`, by number (a file `<NN>_<name>.ts` per figure).
 *
 * @example
 * ```ts
 * import { figureFiles } from './bench_table.ts';
 * console.log((await figureFiles()).map((f) => f.number));
 * ```
 */
export async function figureFiles(kitDir: string = KIT_ROOT): Promise<FigureFile[]> {
  const figures: FigureFile[] = [];
  for await (const entry of Deno.readDir(join(kitDir, 'bench', 'figures'))) {
    const m = entry.name.match(/^(\d\d)_\w+\.ts$/);
    if (entry.isFile && m) figures.push({ number: Number(m[1]), file: entry.name });
  }
  return figures.sort((a, b) => a.number - b.number);
}

const cell = (text: string) => text.replaceAll('|', '\\|');

/** `1-3, 5` for `[1, 2, 3, 5]`. */
function ranges(numbers: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < numbers.length; i++) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j++;
    out.push(
      j > i + 1
        ? `${numbers[i]}-${numbers[j]}`
        : j === i + 1
        ? `${numbers[i]}, ${numbers[j]}`
        : `${numbers[i]}`,
    );
    i = j;
  }
  return out.join(', ');
}

/**
 * The block between the markers (markers included), before formatting: the table, the runs it
 * comes from, and the figures without a result.
 *
 * @example
 * ```ts
 * import { renderTable } from './bench_table.ts';
 * console.log(renderTable({ figures: [] }, [{ number: 1, file: '01_throughput.ts' }]));
 * ```
 */
export function renderTable(result: BenchResult, figures: readonly FigureFile[]): string {
  const lines = [TABLE_BEGIN, ''];
  const records = [...result.figures].sort((a, b) => a.figure - b.figure);
  if (records.length > 0) {
    lines.push(
      '| figure | measured | side by side | ratio (range) | target | result |',
      '| --- | --- | --- | --- | --- | --- |',
    );
    for (const r of records) {
      for (const row of r.rows) {
        lines.push(
          `| ${
            [row.label, row.measured, row.sideBySide, row.ratio, row.target, row.result]
              .map(cell).join(' | ')
          } |`,
        );
      }
    }
    lines.push('');
    // The runs, one line for the figures that ran together (same commit, arguments, machine).
    const runs = new Map<string, FigureRecord[]>();
    for (const r of records) {
      const key = JSON.stringify([r.commit, r.arguments, r.environment]);
      runs.set(key, [...(runs.get(key) ?? []), r]);
    }
    for (const group of runs.values()) {
      const first = group[0];
      const which = group.length === 1 ? 'Figure' : 'Figures';
      const command = ['deno task bench', ...first.arguments].join(' ');
      lines.push(
        `- ${which} ${ranges(group.map((r) => r.figure))}: \`${command}\` on ` +
          `${first.ranAt.slice(0, 10)}, commit ${
            first.commit ?? '(unknown)'
          }; ${first.environment}.`,
      );
    }
    lines.push('');
  }
  const missing = figures.filter((f) => !records.some((r) => r.figure === f.number));
  if (missing.length > 0) {
    lines.push(
      `${records.length > 0 ? 'Not in' : 'Nothing in'} ${RESULT_FILE} yet: ` +
        `${missing.length === 1 ? 'figure' : 'figures'} ${ranges(missing.map((f) => f.number))} ` +
        '(`deno task bench --only=N` adds one; the sections below have earlier results).',
      '',
    );
  }
  lines.push(TABLE_END);
  return lines.join('\n');
}

/**
 * `text` as `deno fmt` formats Markdown with the kit's settings.
 *
 * @example
 * ```ts
 * import { formatMarkdown } from './bench_table.ts';
 * console.log(await formatMarkdown('| a | b |\n|-|-|\n| x | y |\n'));
 * ```
 */
export async function formatMarkdown(text: string, kitDir: string = KIT_ROOT): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ['fmt', '--ext=md', '-'],
    cwd: kitDir,
    stdin: 'piped',
    stdout: 'piped',
    stderr: 'piped',
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`deno fmt failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/**
 * `page` with the block between its markers written from `result`, formatted; throws, naming
 * the markers, when the page lacks them.
 *
 * @example
 * ```ts
 * import { pageWithTable, TABLE_BEGIN, TABLE_END } from './bench_table.ts';
 * const page = `# Benchmarks\n\n${TABLE_BEGIN}\n${TABLE_END}\n`;
 * console.log(await pageWithTable(page, { figures: [] }, []));
 * ```
 */
export async function pageWithTable(
  page: string,
  result: BenchResult,
  figures: readonly FigureFile[],
  kitDir: string = KIT_ROOT,
): Promise<string> {
  const begin = page.indexOf(TABLE_BEGIN);
  const end = page.indexOf(TABLE_END);
  if (begin < 0 || end < begin) {
    throw new Error(
      `${PAGE} has no table markers: put the lines ${TABLE_BEGIN} and ${TABLE_END} where the ` +
        'current table goes',
    );
  }
  const text = page.slice(0, begin) + renderTable(result, figures) +
    page.slice(end + TABLE_END.length);
  return await formatMarkdown(text, kitDir);
}

/**
 * What `bench:table` writes: the page with the table of the kit's JSON result (none yet: an
 * empty result).
 *
 * @example
 * ```ts
 * import { benchmarksPage } from './bench_table.ts';
 * console.log((await benchmarksPage()).length);
 * ```
 */
export async function benchmarksPage(kitDir: string = KIT_ROOT): Promise<string> {
  const result = (await readResult(join(kitDir, RESULT_FILE))) ?? { figures: [] };
  const page = await Deno.readTextFile(join(kitDir, PAGE));
  return await pageWithTable(page, result, await figureFiles(kitDir), kitDir);
}

if (import.meta.main) {
  helpOption(`usage: deno task bench:table [--check]

Writes the current table of ${PAGE} from ${RESULT_FILE} (written by deno task bench).
--check changes nothing and fails when ${PAGE} is not what it would write.`);
  try {
    const page = join(KIT_ROOT, PAGE);
    const text = await benchmarksPage();
    if ((await Deno.readTextFile(page)) === text) {
      console.log(`bench:table: ${PAGE} is up to date`);
    } else if (Deno.args.includes('--check')) {
      console.error(
        `bench:table --check: ${PAGE} is not built from ${RESULT_FILE}: run \`deno task bench:table\``,
      );
      Deno.exit(1);
    } else {
      await Deno.writeTextFile(page, text);
      console.log(`bench:table: wrote the table of ${PAGE}`);
    }
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
