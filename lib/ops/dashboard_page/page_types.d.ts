/**
 * The types `page.js` (the dashboard page's script) is checked with: the JSON API's answers as
 * the browser receives them, from the server's own types in `../dashboard.ts`, and the base
 * path the handler writes into the script. Types only: nothing here reaches the page.
 *
 * @module
 */
import type { DashboardOverview, DashboardRunDetail } from '../dashboard.ts';

/** A value after `JSON.stringify` and `JSON.parse`: dates arrive as ISO strings. */
export type Wire<T> = T extends Date ? string
  : T extends readonly (infer E)[] ? Wire<E>[]
  : T extends object ? { [K in keyof T]: Wire<T[K]> }
  : T;

/** `GET api/overview`. */
export type Overview = Wire<DashboardOverview>;
/** One queue of the overview. */
export type Queue = Overview['queues'][number];
/** One queue function of a queue. */
export type QueueFunction = Queue['functions'][number];
/** One run of the overview. */
export type Run = Overview['runs'][number];
/** The open fence. */
export type Fence = NonNullable<Overview['fence']>;
/** A queue's completions per minute. */
export type Throughput = NonNullable<Queue['throughput']>;
/** A queue's lag, p95 latency and failures per minute. */
export type History = NonNullable<Queue['history']>;
/** `GET api/runs/<id>`. */
export type RunDetail = Wire<DashboardRunDetail>;
/** What the page keeps for an open run: its detail, or why it could not be read. */
export type DetailEntry = RunDetail | { problem: string };

declare global {
  /** Replaced by the handler with the base path as a JSON string (`"/dashboard"`). */
  const __BASE_PATH__: string;
}
