-- The trace context of a run's span (docs/design/observability.md#metrics-traces-and-charts), from
-- the run and the trace
-- context it started with (its caller's, or its parent run's span for a child run): the same
-- trace, flags, and a span id derived from both, the first 16 hex digits of the SHA-256 of
-- '<run id>/<the caller's span id>'. Derived, never stored: a task's span is a child of it, a
-- child run starts with it, and take_run_spans names it for the span recorded at the run's end.
-- Null without a trace context.
create or replace function switchyard.run_span_context(run_id uuid, trace_context text)
returns text
language sql
immutable
parallel safe
as $$
  select split_part(trace_context, '-', 1) || '-' || split_part(trace_context, '-', 2) || '-'
         || left(encode(sha256(convert_to(run_id::text || '/' || split_part(trace_context, '-', 3),
                                          'UTF8')), 'hex'), 16)
         || '-' || split_part(trace_context, '-', 4)
$$;
