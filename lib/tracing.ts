/**
 * Traces (docs/design/observability.md) through `@opentelemetry/api`: a span per claimed batch
 * (`switchyard.claim`), per completion batch (`switchyard.complete`), per task
 * (`switchyard.task`) and per run (`switchyard.run`, from its start to its end, recorded by a
 * worker once it ended). Until the application registers an SDK's tracer provider (or runs with
 * Deno's built-in OpenTelemetry export, `OTEL_DENO=true`), the API's spans are non-recording
 * no-ops and the worker reads no trace context: tracing then costs a few object allocations per
 * task.
 *
 * A run's trace context is the W3C `traceparent` its caller gave to `start` (or the caller's
 * active span), stored with the run. The run's span is its child, with a span id derived from
 * the run and that context (`switchyard.run_span_context`), so every task's span (linked to the
 * claim span of its batch) and every child run's span is under it before it is recorded. Parsing it here (not through the
 * global propagator, which is a no-op unless an SDK sets one) keeps that true whatever
 * propagator the application registers.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';

/** The instrumentation scope of every span the kit makes. */
export const TRACER_NAME = 'switchyard';

/** The kit's tracer (the global provider's, resolved on each call, so a later SDK counts). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The span context a W3C `traceparent` names, or null when it is not one (version `ff`, an
 * all-zero trace or span id, or anything else malformed).
 *
 * @example
 * ```ts
 * import { parseTraceparent } from './tracing.ts';
 * const c = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
 * console.assert(c?.traceId === '4bf92f3577b34da6a3ce929d0e0e4736');
 * ```
 */
export function parseTraceparent(text: string | null | undefined): SpanContext | null {
  const m = text ? TRACEPARENT.exec(text) : null;
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return null;
  return { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) & 1, isRemote: true };
}

/**
 * The `traceparent` of a span context, or null when it is not valid (a no-op span's).
 *
 * @example
 * ```ts
 * import { formatTraceparent } from './tracing.ts';
 * const tp = formatTraceparent({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
 *   spanId: '00f067aa0ba902b7', traceFlags: 1 });
 * console.assert(tp === '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
 * ```
 */
export function formatTraceparent(c: SpanContext | undefined): string | null {
  if (!c || !trace.isSpanContextValid(c)) return null;
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 1) === 1 ? '01' : '00'}`;
}

/** The `traceparent` of the caller's active span, if it has a valid one. */
export function activeTraceparent(): string | null {
  return formatTraceparent(trace.getSpan(context.active())?.spanContext());
}

/** When the last malformed `traceparent` was logged (`Date.now()`), and how many since. */
const untraced = { loggedAt: -Infinity, quiet: 0 };

/**
 * The trace context a run starts with: `given` when it is a valid W3C `traceparent`, else the
 * caller's active span's (or none). A malformed one (an incoming request's header is the
 * caller's, not the application's) never fails a start: it is logged, at most once a minute,
 * with the rule, and the run starts as if none was given. W3C Trace Context asks the same of
 * a receiver: an invalid `traceparent` is ignored and a new trace begins.
 *
 * @example
 * ```ts
 * import { runTraceparent } from './tracing.ts';
 * console.assert(runTraceparent('start("a")', 'not one', () => {}) === null);
 * ```
 */
export function runTraceparent(
  what: string,
  given: unknown,
  log: (line: string) => void = console.warn,
): string | null {
  if (given === undefined) return activeTraceparent();
  if (typeof given === 'string' && parseTraceparent(given) !== null) return given;
  const now = Date.now();
  if (now - untraced.loggedAt < 60_000) {
    untraced.quiet++;
    return activeTraceparent();
  }
  const shown = typeof given === 'string'
    ? JSON.stringify(given.length > 200 ? `${given.slice(0, 200)}...` : given)
    : typeof given;
  const more = untraced.quiet > 0 ? ` (${untraced.quiet} more since the last line)` : '';
  untraced.loggedAt = now;
  untraced.quiet = 0;
  try {
    log(
      `[switchyard] ${what}: traceparent ${shown} is invalid: use a W3C traceparent, ` +
        '00-<32 hex trace id>-<16 hex span id>-<2 hex flags> in lower case, ids not all zero; ' +
        `the run starts untraced${more}`,
    );
  } catch { /* a throwing logger loses the line, never the start */ }
  return activeTraceparent();
}

/** Whether a span this process started recorded (an SDK is registered): run spans are taken then. */
let recording = false;

/** Whether spans are recorded here: a claim span recorded (set by {@linkcode startClaimSpan}). */
export function spansRecorded(): boolean {
  return recording;
}

/** Starts the span of one claimed batch, as the poller's `start_tasks` call. */
export function startClaimSpan(attributes: Attributes): Span {
  const span = tracer().startSpan('switchyard.claim', { kind: SpanKind.CONSUMER, attributes });
  if (span.isRecording()) recording = true;
  return span;
}

/** Starts the span of one completion batch (`complete_tasks`). */
export function startCompleteSpan(attributes: Attributes): Span {
  return tracer().startSpan('switchyard.complete', { kind: SpanKind.CLIENT, attributes });
}

/**
 * Starts a task's span: the child of its run's stored trace context (else a new trace), linked
 * to the claim span of its batch.
 */
export function startTaskSpan(
  traceparent: string | null,
  claim: SpanContext | null,
  attributes: Attributes,
): Span {
  const parent = parseTraceparent(traceparent);
  const ctx: Context = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
  const links: Link[] = claim && trace.isSpanContextValid(claim) ? [{ context: claim }] : [];
  return tracer().startSpan('switchyard.task', { kind: SpanKind.CONSUMER, attributes, links }, ctx);
}

/**
 * The span ids a run span must have, set just around its `startSpan` (a synchronous call): the
 * id generator of {@linkcode runSpanIdGenerator} hands them out instead of random ones.
 */
let reserved: { traceId: string; spanId: string } | null = null;

/** Random lower-case hex of `bytes` bytes, never all zero. */
function randomHex(bytes: number): string {
  for (;;) {
    const b = crypto.getRandomValues(new Uint8Array(bytes));
    if (b.some((x) => x !== 0)) return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  }
}

/**
 * An OpenTelemetry SDK id generator (the `idGenerator` of a tracer provider's configuration)
 * that gives a run's span (`switchyard.run`) the span id its tasks and child runs already name
 * as their parent, and random ids to every other span (from `base` when given). A run span is
 * recorded by a worker after the run ended, and the OpenTelemetry API lets no caller choose a
 * span's id: without this generator the run span gets an id of the SDK's, its tasks' spans name
 * a parent that is never exported, and the worker logs that once.
 *
 * @example
 * ```ts
 * import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
 * import { runSpanIdGenerator } from './tracing.ts';
 * const provider = new BasicTracerProvider({ idGenerator: runSpanIdGenerator() });
 * console.assert(provider !== undefined);
 * ```
 */
export function runSpanIdGenerator(
  base?: { generateTraceId(): string; generateSpanId(): string },
): { generateTraceId(): string; generateSpanId(): string } {
  return {
    generateTraceId: () => reserved?.traceId ?? base?.generateTraceId() ?? randomHex(16),
    generateSpanId: () => reserved?.spanId ?? base?.generateSpanId() ?? randomHex(8),
  };
}

/** A run that ended and whose span is to be recorded (`switchyard.take_run_spans`). */
export interface EndedRunSpan {
  runId: string;
  /** The flow's alias, else its slug. */
  flow: string;
  /** The concrete flow slug. */
  version: string;
  /** 'completed', 'failed' or 'cancelled'. */
  status: string;
  /** The failure, or the reason of a cancel. */
  error: string | null;
  startedAt: Date;
  endedAt: Date;
  /** The trace context the run started with: its caller's, or its parent run's span. */
  traceContext: string;
  /** The run span's own context (`switchyard.run_span_context`). */
  spanContext: string;
}

/**
 * Records a run's span: `switchyard.run`, from the run's start to its end, a child of the trace
 * context it started with, with the span id its tasks name (through
 * {@linkcode runSpanIdGenerator}), its outcome as `switchyard.run.outcome` and an error status
 * for a failed run. Returns whether the span got that id (false: the SDK's id generator is not
 * the kit's, or nothing records).
 */
export function recordRunSpan(r: EndedRunSpan): boolean {
  const parent = parseTraceparent(r.traceContext);
  const own = parseTraceparent(r.spanContext);
  if (!parent || !own) return false;
  let span: Span;
  reserved = { traceId: own.traceId, spanId: own.spanId };
  try {
    span = tracer().startSpan('switchyard.run', {
      kind: SpanKind.INTERNAL,
      startTime: r.startedAt,
      attributes: {
        'switchyard.run_id': r.runId,
        'switchyard.flow': r.flow,
        'switchyard.flow.version': r.version,
        'switchyard.run.outcome': r.status,
      },
    }, trace.setSpanContext(ROOT_CONTEXT, parent));
  } finally {
    reserved = null;
  }
  if (r.status === 'failed') {
    span.setStatus({ code: SpanStatusCode.ERROR, message: r.error ?? 'failed' });
  } else if (r.status === 'cancelled' && r.error) {
    span.setAttribute('switchyard.run.cancel_reason', r.error);
  }
  span.end(r.endedAt);
  return span.spanContext().spanId === own.spanId;
}

/** Ends a span with an error status and the exception recorded. */
export function endWithError(span: Span, e: unknown): void {
  if (span.isRecording()) {
    span.recordException(e instanceof Error ? e : String(e));
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: e instanceof Error ? e.message : String(e),
    });
  }
  span.end();
}
