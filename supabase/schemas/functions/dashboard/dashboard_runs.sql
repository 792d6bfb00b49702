-- Recent runs, newest first (at most 200), optionally of one status, of flows with a step on
-- one queue, or one run. Each with its duration (so far, for a started run), its error and
-- failing step, and its steps in step order with their task's queue snapshot, attempts and
-- times: queued (the step became ready), started (the latest attempt), finished. A map step
-- (docs/design/runs.md#map-steps) has one task per element: its row sums them up (the most
-- attempts any element used, the first error in element order, `tasks` the element count).
create or replace function switchyard.dashboard_runs(
  max_runs int default 25, run_status text default null, queue_name text default null,
  run_id uuid default null
)
returns table (
  run_id uuid, flow_slug text, started_as text, status text, started_at timestamptz,
  finished_at timestamptz, duration_ms bigint, error text, failed_step text, steps jsonb
)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.flow_slug, r.started_as, r.status, r.started_at,
         coalesce(r.completed_at, r.failed_at, r.cancelled_at),
         (extract(epoch from coalesce(r.completed_at, r.failed_at, r.cancelled_at, switchyard.clock_now()) - r.started_at)
           * 1000)::bigint,
         r.error,
         (select ss.step_slug from switchyard.step_states ss
           where ss.run_id = r.run_id and ss.status = 'failed'
           order by ss.failed_at nulls last, ss.step_slug limit 1),
         (select coalesce(jsonb_agg(jsonb_build_object(
                   'step_slug', ss.step_slug, 'step_index', st.step_index, 'status', ss.status,
                   'queue_name', coalesce(t.queue_name, st.queue_name),
                   'attempts', coalesce(t.attempts_count, 0),
                   'max_attempts', coalesce(t.max_attempts, st.max_attempts),
                   'queued_at', t.queued_at, 'started_at', t.started_at,
                   'finished_at', coalesce(ss.completed_at, ss.failed_at, ss.skipped_at,
                                           t.completed_at, t.failed_at),
                   'error', t.error, 'tasks', t.tasks,
                   -- A wait, sleep or flow step (docs/design/waits.md): its kind, and
                   -- when its timeout is due while it waits.
                   'kind', st.step_type,
                   'wait_deadline', case when ss.status = 'started' then ss.wait_deadline end)
                 order by st.step_index), '[]'::jsonb)
            from switchyard.step_states ss
            join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
            left join lateral (
              select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts_count,
                     max(x.max_attempts) as max_attempts, min(x.queued_at) as queued_at,
                     max(x.started_at) as started_at, max(x.completed_at) as completed_at,
                     max(x.failed_at) as failed_at, count(*)::int as tasks,
                     (array_agg(x.error order by x.task_index)
                        filter (where x.error is not null))[1] as error
                from switchyard.step_tasks x
               where x.run_id = ss.run_id and x.step_slug = ss.step_slug
            ) t on true
           where ss.run_id = r.run_id)
    from switchyard.runs r
   where (dashboard_runs.run_id is null or r.run_id = dashboard_runs.run_id)
     and (dashboard_runs.run_status is null or r.status = dashboard_runs.run_status)
     and (dashboard_runs.queue_name is null or exists (
           select 1 from switchyard.steps st
            where st.flow_slug = r.flow_slug and st.queue_name = dashboard_runs.queue_name))
   order by r.started_at desc, r.run_id
   limit least(greatest(coalesce(dashboard_runs.max_runs, 25), 1), 200)
$$;
