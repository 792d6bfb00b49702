-- Up to `max_runs` traced runs that ended and whose span nobody recorded yet
-- (docs/design/observability.md#metrics-traces-and-charts), marked taken: a worker records each
-- one's span (switchyard.run, its start to its end,
-- with its outcome) as the child of the trace context the run started with, with the span id of
-- run_span_context. Locked with skip locked, so two workers never take the same run; read
-- through runs_span_pending, which holds only traced runs not yet taken. A run retried or rerun
-- after its span was taken is taken again at its new end: its span starts at the restart
-- (span_started_at), a child of the first (retry_run and rerun_run moved its trace context).
create or replace function switchyard.take_run_spans(max_runs int default 100)
returns table (
  run_id uuid, flow_slug text, flow text, status text, error text, started_at timestamptz,
  ended_at timestamptz, trace_context text, span_context text
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query
    with taken as (
      update switchyard.runs r set run_span_taken = true
        from (select x.run_id from switchyard.runs x
               where x.trace_context is not null and not x.run_span_taken
                 and x.status <> 'started'
               order by x.run_id
               limit greatest(coalesce(max_runs, 100), 1)
                 for update skip locked) s
       where r.run_id = s.run_id
      returning r.run_id, r.flow_slug, r.status, r.error,
                coalesce(r.span_started_at, r.started_at) as started_at,
                coalesce(r.completed_at, r.failed_at, r.cancelled_at) as ended_at,
                r.trace_context
    )
    select t.run_id, t.flow_slug, coalesce(am.alias, t.flow_slug), t.status, t.error,
           t.started_at, t.ended_at, t.trace_context,
           switchyard.run_span_context(t.run_id, t.trace_context)
      from taken t
      left join switchyard.alias_members am on am.flow_slug = t.flow_slug
     order by t.ended_at;
end
$$;
