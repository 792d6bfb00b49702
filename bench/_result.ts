/**
 * The bench's JSON result (`bench/results/latest.json`, or `--json=PATH`): the latest run of each
 * figure, with when, on which commit, with which arguments and in which environment it ran, its
 * rows and its notes. A run adds or replaces the figures it ran and keeps the others, so a long
 * figure run once stays next to a quick one run often. `deno task bench:table`
 * (`tools/bench_table.ts`) builds BENCHMARKS.md's current table from it.
 *
 * @module
 */

/** Where `deno task bench` writes its result unless `--json=PATH` names another file. */
export const RESULT_FILE = 'bench/results/latest.json';

/** One row of a figure, as the bench prints it. */
export interface ResultRow {
  /** What is measured, starting with the figure's number. */
  label: string;
  measured: string;
  sideBySide: string;
  /** The ratio of the two sides, with its range over the rounds. */
  ratio: string;
  target: string;
  /** `met`, `MISSED`, or `-` for a row without a target. */
  result: string;
}

/** The latest run of one figure. */
export interface FigureRecord {
  figure: number;
  name: string;
  /** When the figure finished (ISO 8601, UTC). */
  ranAt: string;
  /** The checkout's commit (`abc1234`, `abc1234+changes` with uncommitted changes), or null. */
  commit: string | null;
  /** The arguments `deno task bench` was given. */
  arguments: string[];
  /** PostgreSQL, the PGMQ kind, Deno and the CPUs, as the bench printed them. */
  environment: string;
  rows: ResultRow[];
  notes: string[];
}

/** The whole file. */
export interface BenchResult {
  /** One record per figure, by figure number. */
  figures: FigureRecord[];
}

/**
 * `previous` with `records` added, each replacing the earlier record of its figure.
 *
 * @example
 * ```ts
 * import { mergeResult } from './_result.ts';
 * const merged = mergeResult({ figures: [] }, []);
 * console.assert(merged.figures.length === 0);
 * ```
 */
export function mergeResult(previous: BenchResult | null, records: FigureRecord[]): BenchResult {
  const byFigure = new Map((previous?.figures ?? []).map((r) => [r.figure, r]));
  for (const r of records) byFigure.set(r.figure, r);
  return { figures: [...byFigure.values()].sort((a, b) => a.figure - b.figure) };
}

const STRING_FIELDS = ['label', 'measured', 'sideBySide', 'ratio', 'target', 'result'] as const;

/**
 * Reads a result file's text, checking its shape; the error names the file and what is wrong.
 *
 * @example
 * ```ts
 * import { parseResult } from './_result.ts';
 * console.assert(parseResult('{"figures":[]}', 'x.json').figures.length === 0);
 * ```
 */
export function parseResult(text: string, path: string): BenchResult {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new Error(`${path} is not JSON: ${(e as Error).message}`);
  }
  const figures = (data as { figures?: unknown })?.figures;
  if (!Array.isArray(figures)) throw new Error(`${path}: "figures" must be an array`);
  figures.forEach((f: Partial<FigureRecord>, i) => {
    const where = `${path}: figures[${i}]`;
    if (!Number.isInteger(f?.figure) || (f.figure as number) < 1) {
      throw new Error(`${where}.figure must be a figure number (1 or more), got ${f?.figure}`);
    }
    for (const key of ['name', 'ranAt', 'environment'] as const) {
      if (typeof f[key] !== 'string') throw new Error(`${where}.${key} must be a string`);
    }
    if (f.commit !== null && typeof f.commit !== 'string') {
      throw new Error(`${where}.commit must be a string or null`);
    }
    if (!Array.isArray(f.arguments) || !Array.isArray(f.notes) || !Array.isArray(f.rows)) {
      throw new Error(`${where}: arguments, rows and notes must be arrays`);
    }
    f.rows.forEach((row, j) => {
      for (const key of STRING_FIELDS) {
        if (typeof row?.[key] !== 'string') {
          throw new Error(`${where}.rows[${j}].${key} must be a string`);
        }
      }
    });
  });
  return data as BenchResult;
}

/**
 * The result at `path`, or null when there is none yet.
 *
 * @example
 * ```ts
 * import { readResult, RESULT_FILE } from './_result.ts';
 * console.log((await readResult(RESULT_FILE))?.figures.length ?? 0, 'figures');
 * ```
 */
export async function readResult(path: string): Promise<BenchResult | null> {
  try {
    return parseResult(await Deno.readTextFile(path), path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}
