-- The trace contexts of these runs' spans (run_span_context, docs/design/observability.md), one row
-- per run that started with one, by key: the parents of the worker's task spans, read for a
-- claimed batch only while tracing records spans.
create or replace function switchyard.run_trace_contexts(run_ids uuid[])
returns table (run_id uuid, trace_context text)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, switchyard.run_span_context(r.run_id, r.trace_context)
    from switchyard.runs r
   where r.run_id = any(run_ids) and r.trace_context is not null
$$;
