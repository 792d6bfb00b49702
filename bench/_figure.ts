/**
 * What one figure of the bench is (`bench/figures/<NN>_<name>.ts`, one file per figure), what it
 * is given (the database, the options, the baseline's SQL core) and what it returns: its rows of
 * the table, each with its target and verdict, and notes printed after the table. `bench/bench.ts`
 * selects the figures, runs them in order and writes the rows to the JSON result the benchmarks
 * page's table is built from (`deno task bench:table`).
 *
 * @module
 */
import type { BenchDatabase } from './_db.ts';
import type { Sample } from './_common.ts';
import { fmt, median } from './_stats.ts';

/** The bench's options (`deno task bench --help`). */
export interface Options {
  quick: boolean;
  rounds: number;
  only: Set<number>;
  batch: number;
  concurrency: number;
  connections: number;
  explain: boolean;
  profile: boolean;
  /** A git revision whose migrations figures 1, 2, 7 and 8 also run on (before/after). */
  baseline?: string;
  /** The `@pgflow/core` version figure 9 installs. */
  pgflowVersion: string;
  /** Figure 7's rounds (designed for 100) and runs per round (1,000). */
  historyRounds: number;
  historyRuns: number;
}

/**
 * One row of the table: what is measured, the measurement, its side-by-side counterpart, the
 * ratio with its range, the target and whether it was met (`met`, `MISSED` or `-`). The label
 * starts with the figure's number.
 */
export type Row = [
  label: string,
  measured: string,
  sideBySide: string,
  ratio: string,
  target: string,
  result: string,
];

/** The `supabase/` of a `--baseline` revision, unpacked for `migrate()`'s `workdir`. */
export interface Baseline {
  workdir: string;
  label: string;
}

/** What a figure is given. */
export interface FigureContext {
  db: BenchDatabase;
  o: Options;
  /** With `--baseline`, for the figures that also run on that revision's SQL core. */
  baseline?: Baseline;
  /** A measurement two figures share (1 and 2), run once per bench run. */
  once<T>(key: string, measure: () => Promise<T>): Promise<T>;
}

/** What a figure returns. */
export interface FigureResult {
  rows: Row[];
  notes: string[];
}

/** One figure of the bench. */
export interface Figure {
  number: number;
  /** A few words, for `--help` and the JSON result. */
  name: string;
  /** Whether `--baseline` also runs it on that revision's SQL core. */
  usesBaseline?: boolean;
  run(ctx: FigureContext): Promise<FigureResult>;
}

/** `met` or `MISSED`. */
export const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');

/** The rates of samples (items per second). */
export const rates = (xs: Sample[]): number[] => xs.map((x) => x.rate);

/** The median CPU ms per item of samples, or null when the CPU was not measured. */
export const cpu = (xs: Sample[]): number | null =>
  xs.every((x) => x.cpuMs !== null) ? median(xs.map((x) => x.cpuMs!)) : null;

/** The median CPU ms per item spent in PostgreSQL, or null when not measured. */
export const serverCpu = (xs: Sample[]): number | null =>
  xs.every((x) => x.serverCpuMs !== null) ? median(xs.map((x) => x.serverCpuMs!)) : null;

/** `, 0.707 CPU ms/task (0.573 in PostgreSQL)`, or nothing when the CPU was not measured. */
export const cpuText = (xs: Sample[], unit: string): string =>
  cpu(xs) === null
    ? ''
    : `, ${fmt(cpu(xs)!, 3)} CPU ms/${unit} (${fmt(serverCpu(xs)!, 3)} in PostgreSQL)`;
