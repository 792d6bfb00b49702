/**
 * Traces (docs/ARCHITECTURE.md §16) through `@opentelemetry/api`: a span per claimed batch
 * (`switchyard.claim`), per completion batch (`switchyard.complete`) and per task
 * (`switchyard.task`). Until the application registers an SDK's tracer provider (or runs with
 * Deno's built-in OpenTelemetry export, `OTEL_DENO=true`), the API's spans are non-recording
 * no-ops and the worker reads no trace context: tracing then costs a few object allocations per
 * task.
 *
 * A run's trace context is the W3C `traceparent` its caller gave to `start` (or the caller's
 * active span), stored with the run; a task's span is a child of it, so the run's tasks join the
 * caller's trace, and links to the claim span of its batch. Parsing it here (not through the
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

/** Starts the span of one claimed batch, as the poller's `start_tasks` call. */
export function startClaimSpan(attributes: Attributes): Span {
  return tracer().startSpan('switchyard.claim', { kind: SpanKind.CONSUMER, attributes });
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
