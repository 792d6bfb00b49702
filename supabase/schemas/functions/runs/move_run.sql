-- Moves a started run onto another concrete version of its alias (docs/design/rerun.md):
-- the way off a version with a bug without cancelling the work, and a drain that ends sooner.
-- Accepted only when _version_problems proves it: every step of the run that completed, was
-- skipped or started exists in `to_flow` with the same slug, kind and dependencies; what has not
-- started runs as `to_flow` has it (its steps the run lacks are added, the run's steps it lacks
-- are dropped, dependencies counted by its shape). Running tasks finish first, on the workers of
-- the version that started them: their rows keep naming that version (drain_status counts them
-- there until they end), their completion counts on the run's step states, which name `to_flow`,
-- so their successors start on `to_flow` (the proof covers started steps: same kind, same
-- dependencies); one queued again (a retry, a hand-back, a stall) follows the run then
-- (_follow_run_flow). In one transaction, holding the run's family and then its queued tasks
-- (cancel_run's order; a claim and a completion wait for the run; a running task's row is not
-- taken, so a completion holding it waits for the move or the move commits after it):
--   - the step states and the queued and ended tasks name `to_flow`; a queued task whose step
--     has another queue there is sent again on that queue (its old message archived), so only
--     workers of the new version claim it;
--   - the run names `to_flow` (drain, coverage and the fence count it there at once) and counts
--     its remaining steps by the new shape; ready steps start;
--   - a 'moved' event records who (`actor`, default the session's role), from and to, and how
--     many tasks were still running on the old version.
-- Returns true when it moved the run, false when the run is on `to_flow` already. Refused: an
-- unknown run (22023 run_unknown), a run not started (55000 run_not_started), a target of another
-- alias (22023 flow_other_alias), an unproven version (22023 version_incompatible, +problems).
create or replace function switchyard.move_run(
  run_id uuid, to_flow text, actor text default null
)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  target text;
  kept text[];
  problems text[];
  running int;
  task record;
begin
  perform switchyard._lock_run_family(move_run.run_id);
  select * into run from switchyard.runs r where r.run_id = move_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', move_run.run_id::text, format(
      'move_run: run %s does not exist', coalesce(move_run.run_id::text, 'null')));
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'move_run: run %s is %s; only a started run can be moved (rerun or fork an ended one)',
      run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  target := switchyard.resolve_flow(to_flow);
  if target = run.flow_slug then
    return false;
  end if;
  if switchyard._flow_alias(target) is distinct from switchyard._flow_alias(run.flow_slug) then
    perform switchyard._refuse('22023', 'flow_other_alias', 'to_flow', to_flow, format(
      'move_run: %s is not a version of the alias of run %s (flow %s, alias %s): move onto '
      'another concrete version of the same alias only', switchyard._clip(to_flow), run.run_id,
      to_json(run.flow_slug)::text, coalesce(switchyard._flow_alias(run.flow_slug), 'none')),
      context => jsonb_build_object('flow_slug', run.flow_slug, 'target', target));
  end if;
  select count(*) into running from switchyard.step_tasks t
   where t.run_id = run.run_id and t.status = 'started';
  select coalesce(array_agg(ss.step_slug order by ss.step_slug), '{}') into kept
    from switchyard.step_states ss
   where ss.run_id = run.run_id and ss.status <> 'created';
  problems := switchyard._version_problems(run.flow_slug, target, kept, '{}');
  if cardinality(problems) > 0 then
    perform switchyard._refuse('22023', 'version_incompatible', 'to_flow', to_flow, format(
      'move_run: run %s cannot go onto %s: %s', run.run_id, to_json(target)::text,
      array_to_string(problems, '; ')),
      context => jsonb_build_object('flow_slug', run.flow_slug, 'target', target,
                                    'problems', to_jsonb(problems)));
  end if;
  perform switchyard._run_note(run.run_id, 'moved', jsonb_build_object(
    'by', coalesce(actor, session_user::text), 'from_flow', run.flow_slug, 'to_flow', target,
    'running', running));
  -- Its queued tasks, in (queue, message id) order as start_tasks locks them.
  perform 1 from switchyard.step_tasks t where t.run_id = run.run_id and t.status = 'queued'
   order by t.queue_name, t.message_id for update;
  -- The run's steps the new version lacks have not started (the proof): dropped.
  delete from switchyard.step_states ss
   where ss.run_id = run.run_id
     and not exists (select 1 from switchyard.steps st
                      where st.flow_slug = target and st.step_slug = ss.step_slug);
  update switchyard.step_states ss set flow_slug = target where ss.run_id = run.run_id;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select run.run_id, target, st.step_slug, 0
    from switchyard.steps st
   where st.flow_slug = target
     and not exists (select 1 from switchyard.step_states ss
                      where ss.run_id = run.run_id and ss.step_slug = st.step_slug)
   order by st.step_index;
  update switchyard.step_states ss
     set remaining_deps = (select count(*) from switchyard.deps d
                             join switchyard.step_states ds
                               on ds.run_id = ss.run_id and ds.step_slug = d.dep_slug
                            where d.flow_slug = target and d.step_slug = ss.step_slug
                              and ds.status not in ('completed', 'skipped'))
   where ss.run_id = run.run_id and ss.status = 'created';
  update switchyard.step_tasks t set flow_slug = target
   where t.run_id = run.run_id and t.status not in ('started', 'queued');
  update switchyard.runs r
     set flow_slug = target,
         remaining_steps = (select count(*) from switchyard.step_states ss
                             where ss.run_id = r.run_id and ss.status not in ('completed', 'skipped'))
   where r.run_id = run.run_id;
  for task in
    select t.step_slug, t.task_index from switchyard.step_tasks t
     where t.run_id = run.run_id and t.status = 'queued'
     order by t.queue_name, t.message_id
  loop
    perform switchyard._follow_run_flow(run.run_id, task.step_slug, task.task_index,
      case when run.paused_at is null then 0 else switchyard.pause_hide_seconds() end);
  end loop;
  perform switchyard._start_ready_steps(run.run_id);
  perform switchyard._complete_run_if_done(run.run_id);
  return true;
end
$$;
