-- One run's status document (docs/design/client.md): its status, input, output or error, owner
-- and times, its origin (docs/design/origins.md), its lineage (a fork's original and step) and pause
-- (docs/design/rerun.md), with each step's state, queue snapshot and attempts.
create or replace function switchyard.run_status(run_id uuid)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'run_id', r.run_id, 'flow_slug', r.flow_slug, 'started_as', r.started_as,
    'status', r.status, 'output', r.output, 'error', r.error,
    'started_at', r.started_at, 'completed_at', r.completed_at, 'failed_at', r.failed_at,
    'cancelled_at', r.cancelled_at, 'owner', r.owner,
    'forked_from', r.forked_from, 'from_step', r.from_step, 'paused_at', r.paused_at,
    'pause_reason', r.pause_reason,
    -- Where the run came from (docs/design/origins.md), or null for a plain start.
    'origin', r.origin,
    -- Per step: its queue snapshot and attempts (a map step: the most attempts any element
    -- used), its number of tasks (a map step's elements), the first error in element order,
    -- and why it was skipped.
    'steps', (select coalesce(jsonb_agg(jsonb_build_object(
                'step_slug', ss.step_slug, 'status', ss.status,
                'queue_name', t.queue_name, 'attempts', coalesce(t.attempts, 0),
                'tasks', coalesce(t.tasks, 0), 'error', t.error,
                'skip_reason', ss.skip_reason) order by st.step_index), '[]')
                from switchyard.step_states ss
                join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                left join lateral (
                  select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts,
                         count(*)::int as tasks,
                         (array_agg(x.error order by x.task_index) filter (where x.error is not null))[1] as error
                    from switchyard.step_tasks x
                   where x.run_id = ss.run_id and x.step_slug = ss.step_slug
                ) t on true
               where ss.run_id = r.run_id))
  from switchyard.runs r where r.run_id = run_status.run_id
$$;
